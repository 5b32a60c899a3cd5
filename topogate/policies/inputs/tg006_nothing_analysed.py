"""TG006 nothing-analysed: no training job among the manifests, though they hold pod templates or the inventory declares jobs, so nothing was checked.

A run that analysed zero training jobs has proven nothing, yet it would print "ok". The run
fails instead when the PATHs hold pod templates (Deployments, Jobs, bare Pods, ...) and not one
of them is part of a training job (most likely the `topogate.dev/group` label was dropped or
the job is of a kind topogate does not read), or when the inventory declares workloads in the
clusters checked and none of them is among the PATHs (a lone ClusterTrainingRuntime, the
`flux/` or `argocd/` part of the generated tree, a ConfigMap: pass the job's manifests, such as
`OUT/clusters/<cluster>`). (PATHs holding no Kubernetes object at all are a usage error, exit 2,
not a finding.)

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
from topogate.policies.inputs.facts import UNASSIGNED, UNGROUPED, declared_absent

NAME = "nothing-analysed"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    unassigned = ctx.fact(UNASSIGNED)
    if ctx.jobs or unassigned:
        return
    if not ctx.fact(UNGROUPED):
        absent = declared_absent(ctx)
        if absent:
            n = len(absent)
            listed = ", ".join(f"{w.kind}/{w.namespace}/{w.name}" for w in absent[:5]) + (", ..." if n > 5 else "")
            yield Issue(
                f"{absent[0].kind}/{absent[0].namespace}/{absent[0].name}",
                f"no training job found among the PATHs, yet the inventory declares {n} in the "
                f"cluster(s) checked ({listed}): nothing was analysed, so an ok would mean nothing. "
                "Fix: pass the jobs' manifests (the generated `OUT/clusters/<cluster>`, or the "
                "directories holding them) beside what you passed.",
                absent[0].pos,
            )
        return
    first = ctx.fact(UNGROUPED)[0]
    n = len(ctx.fact(UNGROUPED))
    listed = ", ".join(u.object for u in ctx.fact(UNGROUPED)[:5]) + (", ..." if n > 5 else "")
    yield Issue(
        first.object,
        f"no training job found among the manifests, only {n} pod template(s) that belong to none "
        f"({listed}): nothing was analysed, so an ok would mean nothing. Fix: label the pod "
        "templates of each job `topogate.dev/group: <job>`, or pass the training job's manifests "
        "(PyTorchJob, MPIJob, TFJob, XGBoostJob, PaddleJob, JAXJob, JobSet, TrainJob).",
        first.pos,
    )
