"""TG121 no-pods: a training job declares no pod at all, so nothing of it was analysed.

A JobSet with an empty `replicatedJobs`, a PyTorchJob whose replica specs are empty or have
`replicas: 0` everywhere: there is no pod template to place or to trace. The job is listed
(so it is not silently "ok"), and this warning says why it was not analysed.

Why: an empty job in a pull request is almost always a templating or kustomize mistake (a patch
that removed the replicated jobs, a value that rendered to nothing).

Failing example: `kind: JobSet` with `spec: {replicatedJobs: []}`.

Passing example: a JobSet with at least one replicated job whose pod template runs a pod.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "no-pods"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        if not any(g.pods for g in job.groups):
            groups = ", ".join(g.name for g in job.groups)
            what = f"its groups ({groups}) run 0 pods" if groups else "it has no replica group"
            yield Issue(job.object, f"{job.object} declares no pod ({what}): there is nothing to place "
                                    "or trace, so nothing of it was analysed. Fix the manifest (a patch "
                                    "or value that emptied it?) or drop the job.", job.pos)
