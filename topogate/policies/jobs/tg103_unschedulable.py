"""TG103 unschedulable: the job can never run all its pods: a group fits no node, or no
placement runs every pod at once.

For each group the analysis filters the inventory's node pools with the pod's nodeSelector,
required nodeAffinity, taints (NoSchedule and NoExecute need a matching toleration;
PreferNoSchedule does not block) and GPUs per node. A group left with no pool stays Pending.

Why: the classic case is the coordinator. The GPU workers tolerate the GPU taint, the master
(which needs no GPU) does not, and the only zone the workers may use has nothing but tainted GPU
nodes: the master is Pending forever and the workers wait for it.

Also when every group has nodes but no placement runs the whole job: pods whose required
podAffinity waits for each other in a circle, zone anti-affinity or spread with more pods than
zones, hostname anti-affinity (one pod per node) with more pods than nodes, groups that must
share one zone but have none in common, a PodGroup gang whose `minCount` exceeds its pods.

Failing example:

```yaml
Master:
  template: {spec: {affinity: {nodeAffinity: ...zone In [zone-a]...}}}   # no tolerations
# zone-a has only nodes tainted gpu=present:NoSchedule
```

Passing example: the master carries the same toleration as the workers
(`{key: gpu, operator: Equal, value: present, effect: NoSchedule}`).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.analysis.result import PoolVerdict
from topogate.core.findings import Issue
from topogate.core.position import NOWHERE, Position
from topogate.policies.context import Context

NAME = "unschedulable"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        per_group = False
        for g in job.groups:
            if g.zones or any(p.feasible for p in g.pools):
                continue  # some pool fits: a capacity problem is TG104's
            removed = "; ".join(f"{p.zone}/{p.pool}: {p.reason}" for p in g.pools) or "no pools"
            per_group = True
            yield Issue(
                job.object,
                f"{job.object}: group {g.name} fits no node pool ({removed}). Its pods stay Pending "
                "and the job never starts. Fix: add the missing toleration or relax the selector so "
                "the group can use the same pools as the rest of the job." + _undeclared(g.pools),
                _where(g.cause, g.pos, job.pos),
            )
        # Every group has nodes, yet no placement runs the whole job: affinity that waits in a
        # circle, anti-affinity or spread with more pods than zones, GPUs that do not pack.
        if not per_group and not job.schedulable and job.capacity.get("fits", True):
            why = "; ".join(job.unschedulable_reasons) or "no placement runs every pod"
            yield Issue(
                job.object,
                f"{job.object} can never run all its pods: {why}. {_consequence(job.kueue)} Fix: make "
                "the groups' affinity, anti-affinity and spread constraints satisfiable together in "
                "one zone.",
                job.pos,
            )


def _where(*candidates: Position) -> Position:
    """The first known of: the field that removes every pool (a base's nodeSelector, a
    toleration missing), the group's pod template, the job."""
    return next((p for p in candidates if p != NOWHERE), NOWHERE)


def _undeclared(pools: tuple[PoolVerdict, ...]) -> str:
    """The inventory as a fix: the selector names labels no pool declares (GPU Feature
    Discovery's `nvidia.com/gpu.product`, say), which the nodes may well carry."""
    keys = sorted(set.intersection(*(set(p.undeclared) for p in pools))) if pools else []
    if not keys:
        return ""
    return (f" If the nodes carry {', '.join(keys)}, the inventory is what is missing: declare "
            f"{'it' if len(keys) == 1 else 'them'} under the pool's `labels:` (`topogate import` "
            "keeps every label a pool's nodes share).")


def _consequence(kueue: str) -> str:
    if kueue:
        # Kueue admits on quota and topology; pod affinity and spread are left to
        # kube-scheduler after admission, so admission does not protect the GPUs.
        return ("Kueue can admit it (its quota and topology check does not evaluate pod "
                "affinity or spread); the pods that start then hold the admitted GPUs, until "
                "waitForPodsReady (where configured) evicts and requeues the workload, again and "
                "again.")
    return "The pods that do start hold their GPUs and wait for the rest."
