"""The zone-set fixpoint of step 4: zone sets and co-location units narrowed together until
stable (a merged unit shares its members' zones, and a narrowed zone set can pin a group and so
merge units); and ``reach``, where a group's pods can be bound in some run, the rest of the job
stranded or not."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.terms import Term

__all__ = ["Fixpoint", "reach_zones"]


class UnionFind:
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


def _ties(affinity: Affinity, n: str) -> tuple[Term, ...]:
    return affinity.zone_ties[n]


def trailing_sets(inputs: Inputs, affinity: Affinity) -> list[frozenset[str]]:
    """Sets of groups whose every pod joins the zone of the first: each member follows (zone key,
    no peers) only members, and the members that may go first (those matching their own term)
    each follow every other such member. By induction on the order pods are bound: once one pod
    of the set runs in zone z, every later pod finds a pod its term matches, all of them in z.
    (Two members that follow only themselves can each go first, each into a zone of its own.)"""
    out: list[frozenset[str]] = []
    for n in inputs.names:
        seen: set[str] = set()
        todo = [n]
        ok = True
        while todo and ok:
            m = todo.pop()
            if m in seen:
                continue
            seen.add(m)
            ts = _ties(affinity, m)
            if not ts or ts[0].peers or not ts[0].targets:
                ok = False
                break
            todo.extend(ts[0].targets - seen)
        if not ok or len(seen) < 2:
            continue
        firsts = {m for m in seen if m in _ties(affinity, m)[0].targets}
        if firsts and all(firsts <= _ties(affinity, m)[0].targets for m in firsts):
            s = frozenset(seen)
            if s not in out:
                out.append(s)
    return out


def reach_zones(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, never: frozenset[str]) -> dict[str, frozenset[str]]:
    """Where a group's pods can be bound in some run: the zones its node filters pass, narrowed
    only by what its podAffinity follows (targets' reach, peers' zones, anywhere for a first pod
    that matches its own term). Not narrowed by what keeps the rest of the job running (a zone a
    unit cannot hold, a zone taken by a group it repels): a pod may go there and strand the rest.
    Empty for a group that never starts."""
    reach = {n: set() if n in never else set(nodes.zones[n]) - affinity.taken[n] for n in inputs.names}
    changed = True
    while changed:
        changed = False
        for n in inputs.names:
            new = set(reach[n])
            for t in _ties(affinity, n):
                allowed = set(t.peer_zones)
                for h in t.targets:
                    allowed |= reach[h]
                new &= allowed
            if new != reach[n]:
                reach[n] = new
                changed = True
    return {n: frozenset(z) for n, z in reach.items()}


class Fixpoint:
    """Zone sets and co-location units, narrowed together until stable."""

    def __init__(self, inputs: Inputs, nodes: NodeFilters, affinity: Affinity,
                 reach: Mapping[str, frozenset[str]]) -> None:
        self.inputs, self.affinity, self.reach = inputs, affinity, reach
        self.zones: dict[str, set[str]] = {n: set(nodes.zones[n]) for n in inputs.names}
        self.units = UnionFind(inputs.names)
        # Zones the unit took away from each member (see units._pending_risks).
        self.refused: dict[str, set[str]] = {n: set() for n in inputs.names}
        self.one_zone: set[str] = set()
        self.trailing = list(dict.fromkeys((*trailing_sets(inputs, affinity), *inputs.trailing)))
        # Groups held in the zone of one peer (a one-pod workload, a group of another job held in
        # one zone), by the peer's key.
        self.peer_unit: dict[str, str] = {}

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
            new = set(A[n]) - aff.taken[n]
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
        for unit in (*self.inputs.zone_units, *self.trailing):
            # Placed into one zone as a whole (Kueue, a PodGroup), or trailing its first pod.
            members = sorted(unit & set(names))
            one |= set(members)
            for m in members[1:]:
                changed = units.union(members[0], m) or changed
        by_peer: dict[str, str] = {}
        for n in names:
            key = _one_peer(ties[n])
            if key:
                self.peer_unit[n] = key
                one.add(n)
                if key in by_peer:
                    changed = units.union(by_peer[key], n) or changed
                by_peer.setdefault(key, n)
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
        self.one_zone = one
        return changed

    def _merge_pinned(self) -> bool:
        """Units pinned to the same single zone are one unit. Pinned in every run, not only in
        those where the whole unit starts: a member whose pods may be bound outside the unit's
        zone (reach: one that goes first into a zone the unit took from it, the rest left
        Pending) may split from a unit pinned apart from it. A member placed whole (Kueue, a
        PodGroup) goes where its unit is placed, before any of its pods is bound."""
        A, units, one, changed = self.zones, self.units, self.one_zone, False
        whole = self.inputs.placed_whole
        pinned: dict[str, str] = {}
        for n in self.inputs.names:
            if n in one and len(A[n]) == 1:
                if any(not self.reach[m] <= A[n] and m not in whole for m in units.members(n)):
                    continue
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


def _one_peer(ties: tuple[Term, ...]) -> str:
    """The key of the one-zone peer a group's zone-tied term follows, when that is all it can
    follow (it does not match its own term, no group of its job matches): its pods are in that
    peer's zone, whichever it is. "" otherwise."""
    for t in ties:
        keys = {q.one_zone for q in t.peers}
        if t.peers and not t.targets and len(keys) == 1 and "" not in keys:
            return next(iter(keys))
    return ""

