"""Where a finding points: positions kept lazy, the rule that decided a flow in its policy's
own file, or the inventory entry behind an object topogate generated.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from topogate.analysis.netpolicy import PolicyRef, RuleRef, SideVerdict, SourceRef, policy_key
from topogate.core.labels import MANAGED_BY_LABEL, NETWORK_ZONE_LABEL, WORKLOAD_LABEL
from topogate.core.position import NOWHERE, Position
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.objects import K8sObject


def position_of(src: Any) -> Position:
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
        w = inv.workload_at(cluster.name, o.namespace or "default", wl) if isinstance(wl, str) else None
        return w.pos if w is not None else None
    nz = cluster.network_zone(str(labels.get(NETWORK_ZONE_LABEL, "")))
    return nz.pos if nz is not None else None


class LazySource(SourceRef):
    """A SourceRef resolved from its (lazy) Position only when read: the evaluator asks for the
    position of every rule it compiles, findings read a handful."""

    def __init__(self, pos: Position) -> None:
        object.__setattr__(self, "_pos", pos)

    @property  # type: ignore[override]
    def file(self) -> str:
        return str(object.__getattribute__(self, "_pos").file)

    @property  # type: ignore[override]
    def line(self) -> int:
        return int(object.__getattribute__(self, "_pos").line)

    @property  # type: ignore[override]
    def column(self) -> int:
        return int(object.__getattribute__(self, "_pos").column)

    def __hash__(self) -> int:
        # The evaluator hashes PolicyRefs (which carry their source) to deduplicate them; a hash
        # of the position would resolve it. Equal sources still hash equal; the refs that hold
        # them differ by kind, namespace and name, so this costs no collisions in practice.
        return 0


class Located(Mapping[tuple[str | int, ...], SourceRef]):
    """Positions inside one object, looked up lazily from its YAML node: handed to
    ``PolicySet.from_objects`` so every rule reference carries the rule's own line."""

    def __init__(self, obj: K8sObject) -> None:
        self._obj = obj

    def __getitem__(self, path: tuple[str | int, ...]) -> SourceRef:
        return LazySource(self._obj.locate(path))

    def __iter__(self) -> Iterator[tuple[str | int, ...]]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __bool__(self) -> bool:  # the evaluator asks `if paths:` before looking positions up
        return True


class RuleLocator:
    """The line of the rule that decided a flow, found lazily in the policy's own file, or the
    inventory entry behind it when topogate generated the policy."""

    def __init__(self, policy_objs: Iterable[K8sObject], inv: Inventory, cluster: Cluster):
        self.by_ref = {policy_key(o.kind, o.namespace, o.name): o for o in policy_objs}
        self.inv = inv
        self.cluster = cluster
        # The inventory entry behind each policy (None: not generated), by policy key: every
        # flow of a job cites its own policy, several times.
        self._generated: dict[str, Position | None] = {}

    def _inventory_source(self, key: str, obj: K8sObject) -> Position | None:
        if key in self._generated:
            return self._generated[key]
        got = self._generated[key] = inventory_source(self.inv, self.cluster, obj)
        return got

    def __call__(self, rule: RuleRef | None) -> Position:
        if rule is None:
            return NOWHERE
        key = str(rule.policy)
        obj = self.by_ref.get(key)
        if obj is None:
            return Position(rule.source.file, rule.source.line, rule.source.column)
        generated = self._inventory_source(key, obj)
        if generated is not None:
            return generated
        base: tuple[str | int, ...] = ("spec",) if rule.spec_index is None else ("specs", rule.spec_index)
        return obj.locate((*base, rule.section, rule.index))

    def section(self, policy: PolicyRef, direction: str) -> Position:
        """Where a policy's rules of one direction start (what switches default deny on there):
        its `ingress:`/`egress:` key, or the nearest part of the policy that exists."""
        key = str(policy)
        obj = self.by_ref.get(key)
        if obj is None:
            return Position(policy.source.file, policy.source.line, policy.source.column)
        generated = self._inventory_source(key, obj)
        if generated is not None:
            return generated
        return obj.locate(("spec", direction))


def side_reason(side: SideVerdict, direction: str, locator: RuleLocator) -> str:
    """One side's verdict as a sentence that cites, for allowed and denied flows alike, the
    deciding rule's own line (or, under default deny, where each enforcing policy's rules of
    that direction are written), in a file that exists: generated policies cite the inventory."""
    r = side.decided_by
    if r is not None:
        where = "" if r.spec_index is None else f" of specs[{r.spec_index}]"
        verb = "allowed" if side.allowed else "denied"
        return f"{verb} by {r.section} rule {r.index}{where} of {r.policy} ({locator(r)})"
    if not side.allowed and side.enforced_by:
        names = ", ".join(f"{p} ({locator.section(p, direction)})" for p in side.enforced_by)
        return f"default deny: no rule of {names} allows it"
    return side.reason

__all__ = ["Located", "RuleLocator", "inventory_source", "position_of", "side_reason"]
