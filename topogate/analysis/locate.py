"""Where a finding points: positions kept lazy, the rule that decided a flow in its policy's
own file, or the inventory entry behind an object topogate generated.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from topogate.analysis.netpolicy import RuleRef
from topogate.inventory.model import (
    MANAGED_BY_LABEL,
    NETWORK_ZONE_LABEL,
    NOWHERE,
    WORKLOAD_LABEL,
    Cluster,
    Inventory,
    Position,
)
from topogate.manifests import K8sObject


def _pos(src: Any) -> Position:
    """Positions stay lazy (resolved only for findings); foreign ones are copied."""
    if src is None:
        return NOWHERE
    if isinstance(src, Position):
        return src
    return Position(str(src.file), int(src.line), int(src.column))


def inventory_source(inv: Inventory, cluster: Cluster, o: K8sObject) -> Position | None:
    """For an object topogate generated, the inventory entry that produced it: a finding on it
    belongs there, since the generated file is rewritten by the next `generate`."""
    md = o.obj.get("metadata")
    labels = md.get("labels") if isinstance(md, dict) else None
    if not isinstance(labels, dict) or labels.get(MANAGED_BY_LABEL) != "topogate":
        return None
    wl = labels.get(WORKLOAD_LABEL)
    if wl:
        w = next((w for w in inv.workloads_of(cluster.name)
                  if w.name == wl and w.namespace == (o.namespace or "default")), None)
        return w.pos if w is not None else None
    nz = cluster.network_zone(str(labels.get(NETWORK_ZONE_LABEL, "")))
    return nz.pos if nz is not None else None


def _policy_key(kind: str, namespace: str | None, name: str) -> str:
    """Policy refs as the evaluator prints them: clusterwide ones have no namespace."""
    if kind == "CiliumClusterwideNetworkPolicy":
        return f"{kind}/{name}"
    return f"{kind}/{namespace or 'default'}/{name}"


class RuleLocator:
    """The line of the rule that decided a flow, found lazily in the policy's own file, or the
    inventory entry behind it when topogate generated the policy."""

    def __init__(self, policy_objs: Iterable[K8sObject], inv: Inventory, cluster: Cluster):
        self.by_ref = {_policy_key(o.kind, o.namespace, o.name): o for o in policy_objs}
        self.inv = inv
        self.cluster = cluster

    def __call__(self, rule: RuleRef | None) -> Position:
        if rule is None:
            return NOWHERE
        obj = self.by_ref.get(str(rule.policy))
        if obj is None:
            return Position(rule.source.file, rule.source.line, rule.source.column)
        generated = inventory_source(self.inv, self.cluster, obj)
        if generated is not None:
            return generated
        base: tuple[str | int, ...] = ("spec",) if rule.spec_index is None else ("specs", rule.spec_index)
        return obj.locate((*base, rule.section, rule.index))
