"""TG206 running-split: a training job's pods run in more than one zone right now.

`check --live` maps each running pod to its node (`spec.nodeName`) and the node to its zone,
and groups pods by their job (owner reference, or the Kubeflow, JobSet and topogate labels).
The message lists pod -> node -> zone for every pod. A pod on a node without the inventory's
`zoneLabel` (or on a node not among those listed) is in an unknown zone, never in none: the job
cannot be shown to run in one zone, which is this finding too.

Why: a split job is the incident this project exists for: a policy between the zones drops its
traffic (training never starts), or it pays inter-zone latency and egress on every step.

Failing example: `PyTorchJob/ml-demo/train` has its Master in `us-east-1a` and a Worker in
`us-east-1b`.

Passing example: every pod of the job on nodes of one zone.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import SPLIT, issues

NAME = "running-split"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, SPLIT)
