"""TG205 undescribed-nodes: nodes run in the cluster that no pool of the inventory describes.

A node is described when a pool of its zone has its node-group label's value as name, or its
labels all match the node. Nodes without a zone label are reported at the cluster.

Why: the scheduler may place any job on a node whose taints it tolerates. A node the inventory
does not know is a place the analysis never considered: a job that "cannot split" may split
onto it, and it costs money nobody accounted for.

Failing example: a Karpenter NodePool `gpu-spot` launched nodes in `us-east-1c`, and the
inventory has no pool `gpu-spot` there.

Passing example: a pool `gpu-spot` in `us-east-1c` (run `topogate import` for a skeleton).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import UNDESCRIBED, issues

NAME = "undescribed-nodes"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, UNDESCRIBED)
