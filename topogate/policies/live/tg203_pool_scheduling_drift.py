"""TG203 pool-scheduling-drift: a pool's nodes carry other taints, or lack a label that the inventory
says selects the pool.

Taints are compared as sets of key, value and effect; taints that are node state and not
configuration (`node.kubernetes.io/*` such as a cordon, `karpenter.sh/disrupted`, the cluster
autoscaler's) are ignored. Every label the inventory lists under the pool must be on every node.

Why: the generated overlays add tolerations for the inventory's taints and the analysis
evaluates nodeSelector and affinity against the inventory's labels. A taint an operator added,
or a label that changed, leaves every job pinned to that pool pending while `check` says it fits.

Failing example: the inventory has `taints: [{key: gpu, value: present, effect: NoSchedule}]`;
the nodes carry `nvidia.com/gpu=present:NoSchedule`.

Passing example: the same taints and labels in the inventory and on every node of the pool.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import SCHEDULING, issues

NAME = "pool-scheduling-drift"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, SCHEDULING)
