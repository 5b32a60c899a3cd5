"""TG111 may-strand: in some schedule order the first pod lands where the rest of the job cannot
follow, and the job waits Pending for ever.

Required podAffinity on the zone key ties a job together: every pod joins the zone of the pods
already there. The pod that goes first, though, is placed by its own node filters alone (a pod
that matches its own selector may go anywhere it fits when no matching pod exists yet). If that
pod can land in a zone where another group of the job cannot run (a coordinator that needs no
GPU in a CPU-only zone), the rest follow it there and stay Pending. The analysis compares, for
every group that can move first, the zones its node filters allow with those of the groups that
must follow it. A group that follows the pods of another job or workload on the zone key is at
the same risk: the scheduler places those pods with no regard for it, and may put all of them
in zones it cannot use. So is a group held in one zone (pinned there, or following a one-pod
workload) whose GPUs the job's groups that are free to go elsewhere may take first, and a group
that follows its own pods and another's, which must join the other's zone when that starts
first, though the zone cannot hold it.

Why: the job looks healthy in review and usually works, until the day the scheduler picks the
other zone first; then nothing starts and nothing says why.

Failing example: Master (no GPU, tolerates the GPU taint) and Workers (1 GPU) both with
`nodeAffinity: zone In [zone-a, zone-b]` and a required podAffinity on their shared job label
with `topologyKey: topology.kubernetes.io/zone`; only zone-a has GPUs.

Passing example: the same, with the zone list narrowed to the zones where every group can run
(`topogate generate` offers `follow` only the zones where the whole job fits).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "may-strand"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        if not job.pending_risks or not job.schedulable:
            continue
        yield Issue(
            job.object,
            f"{job.object} can strand itself: {'; '.join(job.pending_risks)}. Fix: allow each group "
            "only the zones where every group of the job can run (required nodeAffinity), or pin "
            "the job to one zone.",
            job.pos,
        )
