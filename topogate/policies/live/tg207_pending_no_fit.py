"""TG207 pending-no-fit: a training job has pods the scheduler could place on no node.

`check --live` reports pods of training jobs that are Pending with the condition
`PodScheduled=False` and reason `Unschedulable`, with the scheduler's own message (which says
how many nodes failed which filter).

Why: a gang of training pods waits for its last member: one pod that fits nowhere (a taint not
tolerated, a zone pin to a full zone, more GPUs than any node offers) holds all the others'
GPUs idle.

Failing example: a Worker pinned to `us-east-1a` asks for 8 GPUs; every GPU node there is full.

Passing example: every pod of the job scheduled (or pending only while nodes are provisioned).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import PENDING, issues

NAME = "pending-no-fit"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, PENDING)
