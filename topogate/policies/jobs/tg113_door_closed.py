"""TG113 door-closed: a door the inventory declares is not open for a job it names.

For every declared door (`doors:`) and every job among the manifests that the door lets out (its
named workloads, or every job of its source network zone), the analysis asks whether the job's
pods reach the door's target (a pod carrying the service's labels in its namespace, or a pod of
the target network zone) on each declared port. A port that does not pass is a finding at the
door's entry in the inventory.

Why: a door is declared because the job needs it (datasets, checkpoints, a tracking server);
when a hand-written policy, a missing generated policy, or the boundary's deny keeps it shut,
the job fails at run time, long after the pull request merged.

Failing example: a door from `train` to `{namespace: storage, labels: {app: gateway}}` on TCP
9000, checked against the job's policy without the door's egress rule (for instance an older
copy of the generated CNP).

Passing example: the tree `topogate generate` writes: the job's CNP has the door's egress rule,
the door's own CNP opens the service's side, and for a network-zone target the boundary policies
leave the door's ports out of their deny.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import CLOSED_DOORS

NAME = "door-closed"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for c in ctx.fact(CLOSED_DOORS):
        yield Issue(
            c.object,
            f"door {c.door} is declared for {c.object} ({c.group}) but {', '.join(c.ports)} does "
            f"not get through: {c.reason}. Fix: apply the policies `topogate generate` writes for "
            "the door (the job's CNP and the door's own policy), or remove the door from the "
            "inventory if the job no longer needs it.",
            c.pos,
        )
