"""Zone sets and co-location units (steps 1 and 2 of the package docstring): a greatest fixpoint
that narrows each group's zones and merges groups provably in one zone (union-find).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan

# ---------------------------------------------------------------------------------------------
# Union-find over group names


class _Units:
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


def narrow_zones_and_units(p: _Plan) -> None:
    """Zone sets and co-location units, narrowed together until stable."""
    p.zones = {n: set(p.node_zones[n]) for n in p.names}
    p.units = _Units(p.names)
    p.unit_removed = {n: set() for n in p.names}
    p.single = set()
    # Each round that changes something removes a zone from a group or merges two units.
    for _ in range((len(p.all_zones) + 2) * (len(p.names) + 1) + 1):
        changed = _narrow_zones(p)
        changed = _form_units(p) or changed
        changed = _merge_pinned(p) or changed
        changed = _share_unit_zones(p) or changed
        if not changed:
            break


def _narrow_zones(p: _Plan) -> bool:
    """One pass of the zone-set fixpoint: follow podAffinity targets, avoid repelled groups."""
    A, changed = p.zones, False
    for n in p.names:
        new = set(A[n]) - p.peer_repel[n]
        for t in p.aff[n]:
            allowed = set(t.peer_zones)
            for h in t.targets:
                if h != n:
                    allowed |= A[h]
            if n in t.targets and not t.peers:
                allowed |= A[n]  # may be the first of its set: anywhere it fits
            new &= allowed
        for h in p.repels[n]:
            if h != n and len(A[h]) == 1 and (p.by_name[h].pods == 1 or h in p.single):
                new -= A[h]
        if new != A[n]:
            A[n] = new
            changed = True
    return changed


def _form_units(p: _Plan) -> bool:
    """Which groups are held in one zone, and the units their podAffinity terms merge them into."""
    A, units, aff, changed = p.zones, p.units, p.aff, False
    single = {n for n in p.names if p.by_name[n].pods == 1 or len(A[n]) == 1
              or any(t.targets == {n} and not t.peers for t in aff[n])}
    for unit in p.kueue_units:  # Kueue admits the unit into one zone before any pod starts
        members = sorted(unit & set(p.names))
        single |= set(members)
        for m in members[1:]:
            changed = units.union(members[0], m) or changed
    single |= {m for n in list(single) for m in units.members(n)}
    for n in p.names:
        for t in aff[n]:
            if t.peers:
                continue
            others = t.targets - {n}
            if not others:
                continue
            roots = {units.find(h) for h in others}
            if len(roots) == 1 and all(h in single for h in others) and (
                    n not in t.targets or units.find(n) in roots):
                if units.union(n, next(iter(others))):
                    changed = True
                single.add(n)
            if n in t.targets and len(t.targets) > 1 and all(
                    any(u.targets == t.targets and not u.peers for u in aff[h]) for h in t.targets):
                for h in t.targets:
                    if units.union(n, h):
                        changed = True
                single |= set(t.targets)
    p.single = single
    return changed


def _merge_pinned(p: _Plan) -> bool:
    """Units pinned to the same single zone are one unit."""
    A, units, single, changed = p.zones, p.units, p.single, False
    pinned: dict[str, str] = {}
    for n in p.names:
        if n in single and len(A[n]) == 1:
            z = next(iter(A[n]))
            if z in pinned and units.union(pinned[z], n):
                changed = True
            pinned.setdefault(z, n)
    single |= {m for n in list(single) for m in units.members(n)}
    return changed


def _share_unit_zones(p: _Plan) -> bool:
    """Members of a single-zone unit share the zones they can all use."""
    A, changed = p.zones, False
    for n in p.names:
        if n in p.single:
            common = set.intersection(*(A[m] for m in p.units.members(n)))
            # An empty intersection leaves each member its own zones: the member that cannot
            # follow is already empty and says why; the others can still land.
            if common and common != A[n]:
                p.unit_removed[n] |= A[n] - common
                A[n] = common
                changed = True
    return changed
