"""TG110 unprotected-job: a training job in a namespace the inventory manages has no policy.

The inventory names the namespaces its workloads run in. A job found there whose pods no
network policy selects (in either direction) runs wide open: nothing keeps it inside its network
zone.

Why: the boundary between network zones is only as good as the policies that select the pods;
an unmanaged job in a managed namespace is the hole in the fence.

Failing example: a PyTorchJob in `ml-team` with no CiliumNetworkPolicy, NetworkPolicy or
clusterwide policy selecting its pods.

Passing example: the job is in the inventory and its generated policy is applied.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.analysis.context import Context
from topogate.findings import Issue

NAME = "unprotected-job"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for obj, pos in ctx.unprotected:
        yield Issue(
            obj,
            f"{obj} runs in a namespace the inventory manages but no network policy selects its "
            "pods: nothing keeps its traffic inside its network zone. Fix: add it to the inventory "
            "and apply its generated policy.",
            pos,
        )
