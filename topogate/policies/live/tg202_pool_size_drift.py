"""TG202 pool-size-drift: a pool has more or fewer nodes in the cluster than the inventory says.

A node belongs to a pool of its zone by its node-group label (EKS managed node group, Karpenter
NodePool, GKE node pool, AKS agent pool, or `--pool-label`), else by carrying all the pool's
labels. Autoscaled pools (Karpenter) change size: waive the rule for them
(`waivers: [{rule: TG202, object: Pool/<cluster>/<zone>/<pool>, reason: ...}]`) or record the
size the capacity analysis should assume.

Why: `check` decides whether a job fits (GPUs per zone) from the node counts. A pool that shrank
makes "fits" a promise the cluster cannot keep: the job is pending or strands half its pods.

Failing example: `gpu-p4d` in `us-east-1a` has `nodes: 4`; the cluster has 2 such nodes.

Passing example: `nodes: 2`, and 2 nodes of the node group run in that zone.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import POOL_SIZE, issues

NAME = "pool-size-drift"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, POOL_SIZE)
