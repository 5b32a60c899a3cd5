"""TG006 nothing-analysed: the manifests hold pod templates but no training job, so nothing was checked.

A run that analysed zero training jobs has proven nothing, yet it would print "ok". When the
PATHs hold pod templates (Deployments, Jobs, bare Pods, ...) and not one of them is part of a
training job, the run fails instead: most likely the `topogate.dev/group` label was dropped or
the job is of a kind topogate does not read. (PATHs holding no Kubernetes object at all are a
usage error, exit 2, not a finding.)

Why: a gate that analysed nothing must not pass silently.

Failing example: the README's incident (a `Deployment` coordinator and a `Job` of workers)
with the `topogate.dev/group: train` label removed from both pod templates.

Passing example: the same manifests with the label on both pod templates, or PATHs that hold a
PyTorchJob.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "nothing-analysed"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    if ctx.jobs or ctx.unassigned or not ctx.ungrouped:
        return
    first = ctx.ungrouped[0]
    n = len(ctx.ungrouped)
    listed = ", ".join(u.object for u in ctx.ungrouped[:5]) + (", ..." if n > 5 else "")
    yield Issue(
        first.object,
        f"no training job found among the manifests, only {n} pod template(s) that belong to none "
        f"({listed}): nothing was analysed, so an ok would mean nothing. Fix: label the pod "
        "templates of each job `topogate.dev/group: <job>`, or pass the training job's manifests "
        "(PyTorchJob, MPIJob, TFJob, XGBoostJob, PaddleJob, JAXJob, JobSet, TrainJob).",
        first.pos,
    )
