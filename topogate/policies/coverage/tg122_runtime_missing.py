"""TG122 runtime-missing: a TrainJob's training runtime is not among the manifests checked.

A TrainJob's pods come from its ClusterTrainingRuntime or TrainingRuntime (`spec.runtimeRef`):
containers, tolerations, affinity, the replicated jobs besides `node`. Without the runtime,
topogate analyses only what the TrainJob itself says (`trainer.numNodes`,
`resourcesPerNode`, `runtimePatches`) on an empty `node` pod: taints the runtime tolerates,
affinity it sets and initializer jobs are unknown, so placement and reachability verdicts may be
wrong in either direction.

Why: a runtime usually lives in another directory (or only in the cluster); checking the job
without it must say so instead of passing with a made-up pod.

Failing example: `topogate check inv.yaml trainjob.yaml` where `trainjob.yaml` has
`runtimeRef: {name: torch-distributed}` and no ClusterTrainingRuntime of that name is among
the PATHs.

Passing example: the runtime's manifest passed too (`kubectl get clustertrainingruntime
torch-distributed -o yaml > runtimes/torch-distributed.yaml`, then add `runtimes/`), or, where
the Trainer installs its runtimes in the cluster, the cluster's `trainingRuntimes:
[torch-distributed]` in the inventory (a TrainingRuntime as `namespace/name`): the job is then
analysed on its own fields without this warning, since the inventory says the runtime exists.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.k8s.jobs import missing_runtime
from topogate.policies.context import Context

NAME = "runtime-missing"
SEVERITY = "warning"


def _installed(ctx: Context, cluster: str, runtime_id: str | None) -> bool:
    """Whether the inventory says the job's cluster has this runtime (`trainingRuntimes`)."""
    c = ctx.inventory.cluster(cluster) if ctx.inventory is not None else None
    if c is None or runtime_id is None:
        return False
    kind, _, rest = runtime_id.partition("/")
    return rest in c.training_runtimes if kind in ("ClusterTrainingRuntime", "TrainingRuntime") else False


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        for p in job.problems:
            if _installed(ctx, job.cluster, missing_runtime(p)):
                continue
            yield Issue(job.object, f"{job.object}: {p}; analysed with the TrainJob's own trainer and "
                                    "runtimePatches on an otherwise empty pod, so its verdicts may be wrong "
                                    "either way. Fix: pass the runtime's manifest among PATHs.", job.pos)
