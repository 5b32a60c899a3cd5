"""TG005 ungrouped-pods: a pod template that belongs to no training job was not analysed.

`check` places and traces training jobs: PyTorchJob, MPIJob, TFJob, XGBoostJob, PaddleJob,
JAXJob, JobSet, TrainJob, and plain workloads (Deployment, StatefulSet, ReplicaSet, Job,
CronJob, Pod) whose pod templates carry the `topogate.dev/group` label. Any other pod template
among the manifests (a Deployment without the label, a DaemonSet, a kind topogate does not
read) is invisible to the analysis: where it lands and what it may reach are not checked, so an
"ok" says nothing about it.

Why: a hand-written training job made of a Deployment and a Job is exactly the case the gate
exists for; without the label it would pass unchecked.

Failing example: a `Job` of GPU workers and a `Deployment` coordinator with no
`topogate.dev/group` label in their pod templates.

Passing example: both pod templates labelled `topogate.dev/group: train` (one job,
`Group/<namespace>/train`), or the manifests hold only training jobs.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "ungrouped-pods"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for u in ctx.ungrouped:
        if u.groupable:
            how = ("If its pods train together with others, label its pod template "
                   "`topogate.dev/group: <job>` (the same value on every member) to analyse them "
                   "as one job; otherwise waive this rule for it.")
        elif u.kind == "DaemonSet":
            how = ("A DaemonSet runs one pod per node and cannot be part of a training job; "
                   "waive this rule for it if that is intended.")
        else:
            how = (f"topogate does not read {u.kind} as a training job; run its pods from a kind "
                   "it reads (see docs/coverage.md) or waive this rule for it.")
        yield Issue(
            u.object,
            f"{u.object} has a pod template that belongs to no training job: its placement and "
            f"network paths were not analysed. {how}",
            u.pos,
        )
