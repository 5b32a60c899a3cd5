"""Step 4 of the package docstring: zone sets and co-location units. A greatest fixpoint narrows
each group's zones and merges the groups provably in one zone (union-find); then a GPU unit keeps
the zones where it fits, and a member the scheduler may place where the rest cannot follow is a
pending risk.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.capacity import fit_gpu_units, fit_one_node
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.core.words import plural

__all__ = ["Colocation", "colocate"]


@dataclass(frozen=True)
class Colocation:
    zones: Mapping[str, frozenset[str]]  # per group with pods: where its pods can land
    unit_of: Mapping[str, str]  # per group: its co-location unit, named by the unit's first member
    members: Mapping[str, tuple[str, ...]]  # per group: the members of its unit, sorted
    one_zone: frozenset[str]  # groups provably held in one zone (with their whole unit)
    gpu_problems: tuple[str, ...]  # units whose GPU pods no zone of theirs holds together
    pending_risks: tuple[str, ...]  # members the scheduler may place where the rest cannot follow


def colocate(inputs: Inputs, nodes: NodeFilters, affinity: Affinity) -> Colocation:
    fixpoint = _Fixpoint(inputs, nodes, affinity)
    fixpoint.run()
    unit_of = {n: fixpoint.units.find(n) for n in inputs.names}
    by_unit: dict[str, list[str]] = {}
    for n in inputs.names:  # sorted, so each unit's members come out sorted
        by_unit.setdefault(unit_of[n], []).append(n)
    members = {n: tuple(by_unit[unit_of[n]]) for n in inputs.names}
    zones, gpu_problems = fit_gpu_units(inputs, nodes.pool_fits, fixpoint.frozen_zones(), fixpoint.one_zone,
                                        unit_of, members)
    zones, node_problems, node_risks = fit_one_node(inputs, nodes.pool_fits, zones, affinity.one_node, members)
    gpu_problems = [*_disjoint_units(inputs, fixpoint, members), *_repelling_units(inputs, affinity, fixpoint, members),
                    *gpu_problems, *node_problems]
    risks = [*_pending_risks(inputs, affinity, zones, fixpoint, members), *node_risks,
             *_crowded_out(inputs, affinity, zones, fixpoint.one_zone)]
    return Colocation(zones, unit_of, members, frozenset(fixpoint.one_zone), tuple(gpu_problems), tuple(risks))


def _disjoint_units(inputs: Inputs, fixpoint: _Fixpoint, members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A unit held in one zone whose members can each land somewhere but share no zone: whichever
    starts first picks a zone the others cannot reach, and they stay Pending."""
    out: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for n in inputs.names:
        unit = members[n]
        if n not in fixpoint.one_zone or len(unit) < 2 or unit in seen:
            continue
        seen.add(unit)
        zones = [fixpoint.zones[m] for m in unit]
        if all(zones) and not set.intersection(*zones):
            where = "; ".join(f"{m} {zone_list(fixpoint.zones[m])}" for m in unit)
            out.append(f"{', '.join(unit)} must share one zone but have no zone in common ({where}): "
                       "whichever starts first, the others stay Pending")
    return out


def _repelling_units(inputs: Inputs, affinity: Affinity, fixpoint: _Fixpoint,
                     members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """Two groups of one unit held in one zone that repel each other on the zone key: whichever
    comes second finds its only zone taken."""
    out: list[str] = []
    for a, b in sorted(affinity.apart):
        if a < b and a in fixpoint.one_zone and b in members[a] and fixpoint.zones[a] and fixpoint.zones[b]:
            out.append(f"{a} and {b} must share one zone (podAffinity) but repel each other on "
                       f"{inputs.zone_key} (podAntiAffinity): whichever comes second stays Pending")
    return out


def _crowded_out(inputs: Inputs, affinity: Affinity, zones: Mapping[str, frozenset[str]],
                 one_zone: set[str]) -> list[str]:
    """Groups a and b that never share a zone (podAntiAffinity on the zone key): b needs zones
    free of a (one per pod when its pods repel each other too). When a's pods, placed with no
    regard for b, may occupy so many of b's zones that too few are left, b stays Pending even
    though another placement of a would leave it room (the scheduler does not look ahead)."""
    out: list[str] = []
    groups = inputs.groups
    for a, b in sorted(affinity.apart):
        za, zb = zones[a], zones[b]
        if not za or not zb:
            continue
        need = groups[b].pods if b in affinity.self_repelling else 1
        shared = za & zb
        worst = 1 if a in one_zone else min(groups[a].pods, len(shared))
        best = 0 if za - zb else 1
        if len(zb) - worst < need <= len(zb) - best:
            out.append(f"{a} may spread over {zone_list(shared)}, {plural(worst, 'zone')} of those {b} can use; "
                       f"{b} repels {a} on the zone key and needs {plural(need, 'zone')} without it: it would stay "
                       "Pending")
    return out


def _pending_risks(inputs: Inputs, affinity: Affinity, zones: Mapping[str, frozenset[str]], fixpoint: _Fixpoint,
                   members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A member of a unit with no podAffinity of its own that the scheduler may still put in a zone
    the unit took away from it (it knows nothing of who follows it), leaving the rest Pending."""
    out: list[str] = []
    for n in inputs.names:
        if any(n in u for u in inputs.zone_units):
            continue  # Kueue (or the scheduler, for a PodGroup) picks the zone for the whole unit
        if n in fixpoint.one_zone and len(members[n]) > 1:
            extra = fixpoint.refused[n] - zones[n]
            rest = [m for m in members[n] if m != n]
            if extra and not affinity.zone_ties[n]:
                out.append(f"{n} can be scheduled in {zone_list(extra)}, where {', '.join(rest)} cannot follow "
                           f"it: they would stay Pending")
    return out


# ---------------------------------------------------------------------------------------------
# The fixpoint. Its state is the step's own scratch: the record above is built from it at the end.


class _UnionFind:
    """Union-find over group names; a unit's root is its smallest name."""

    def __init__(self, names: Iterable[str]) -> None:
        self.parent = {n: n for n in names}

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        lo, hi = sorted((ra, rb))
        self.parent[hi] = lo
        return True

    def members(self, n: str) -> list[str]:
        r = self.find(n)
        return sorted(m for m in self.parent if self.find(m) == r)


class _Fixpoint:
    """Zone sets and co-location units, narrowed together until stable: a merged unit shares its
    members' zones, and a narrowed zone set can pin a group and so merge units."""

    def __init__(self, inputs: Inputs, nodes: NodeFilters, affinity: Affinity) -> None:
        self.inputs, self.affinity = inputs, affinity
        self.zones: dict[str, set[str]] = {n: set(nodes.zones[n]) for n in inputs.names}
        self.units = _UnionFind(inputs.names)
        # Zones the unit took away from each member (see _pending_risks).
        self.refused: dict[str, set[str]] = {n: set() for n in inputs.names}
        self.one_zone: set[str] = set()

    def run(self) -> None:
        inputs = self.inputs
        # Each round that changes something removes a zone from a group or merges two units.
        for _ in range((len(inputs.all_zones) + 2) * (len(inputs.names) + 1) + 1):
            changed = self._narrow_zones()
            changed = self._form_units() or changed
            changed = self._merge_pinned() or changed
            changed = self._share_unit_zones() or changed
            if not changed:
                break

    def frozen_zones(self) -> dict[str, frozenset[str]]:
        return {n: frozenset(z) for n, z in self.zones.items()}

    def _narrow_zones(self) -> bool:
        """One pass of the zone-set fixpoint: follow podAffinity targets, avoid repelled groups."""
        A, aff, groups, changed = self.zones, self.affinity, self.inputs.groups, False
        for n in self.inputs.names:
            new = set(A[n]) - aff.repelled_peer_zones[n]
            for t in aff.zone_ties[n]:
                allowed = set(t.peer_zones)
                for h in t.targets:
                    if h != n:
                        allowed |= A[h]
                if n in t.targets and not t.peers:
                    allowed |= A[n]  # may be the first of its set: anywhere it fits
                new &= allowed
            for h in aff.repels[n]:
                # Only a group whose zone is certain takes that zone away from the groups it repels.
                if h != n and len(A[h]) == 1 and (groups[h].pods == 1 or h in self.one_zone):
                    new -= A[h]
            if new != A[n]:
                A[n] = new
                changed = True
        return changed

    def _form_units(self) -> bool:
        """Which groups are held in one zone, and the units their podAffinity terms merge them into.
        Recomputed from scratch each round: it depends on the zones the last round left."""
        A, units, ties, names, changed = self.zones, self.units, self.affinity.zone_ties, self.inputs.names, False
        one = {n for n in names if self.inputs.groups[n].pods == 1 or len(A[n]) == 1
               or any(t.targets == {n} and not t.peers for t in ties[n])}
        for unit in self.inputs.zone_units:  # placed into one zone as a whole (Kueue, a PodGroup)
            members = sorted(unit & set(names))
            one |= set(members)
            for m in members[1:]:
                changed = units.union(members[0], m) or changed
        one |= {m for n in list(one) for m in units.members(n)}
        for n in names:
            for t in ties[n]:
                if t.peers:
                    continue
                others = t.targets - {n}
                if not others:
                    continue
                # Following only groups of one unit held in one zone puts it in that zone too.
                roots = {units.find(h) for h in others}
                if len(roots) == 1 and all(h in one for h in others) and (
                        n not in t.targets or units.find(n) in roots):
                    if units.union(n, next(iter(others))):
                        changed = True
                    one.add(n)
                # A set of groups each following exactly that set: the first pod picks the zone.
                if n in t.targets and len(t.targets) > 1 and all(
                        any(u.targets == t.targets and not u.peers for u in ties[h]) for h in t.targets):
                    for h in t.targets:
                        if units.union(n, h):
                            changed = True
                    one |= set(t.targets)
        self.one_zone = one
        return changed

    def _merge_pinned(self) -> bool:
        """Units pinned to the same single zone are one unit."""
        A, units, one, changed = self.zones, self.units, self.one_zone, False
        pinned: dict[str, str] = {}
        for n in self.inputs.names:
            if n in one and len(A[n]) == 1:
                z = next(iter(A[n]))
                if z in pinned and units.union(pinned[z], n):
                    changed = True
                pinned.setdefault(z, n)
        one |= {m for n in list(one) for m in units.members(n)}
        return changed

    def _share_unit_zones(self) -> bool:
        """Members of a single-zone unit share the zones they can all use."""
        A, changed = self.zones, False
        for n in self.inputs.names:
            if n in self.one_zone:
                common = set.intersection(*(A[m] for m in self.units.members(n)))
                # An empty intersection leaves each member its own zones: the member that cannot
                # follow is already empty and says why; the others can still land.
                if common and common != A[n]:
                    self.refused[n] |= A[n] - common
                    A[n] = common
                    changed = True
        return changed
