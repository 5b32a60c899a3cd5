"""Steps that find why a group can never start: no pool, no pod to follow, affinity deadlock,
and the pending risks of a co-location unit."""

from __future__ import annotations

from typing import TYPE_CHECKING

from topogate.analysis.placement.model import zone_list

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan


def node_and_affinity_reasons(p: _Plan) -> None:
    """A group that fits no pool, lacks a topology key, or requires pods that do not exist."""
    fits = p.fits
    unsched: dict[str, list[str]] = {n: [] for n in p.names}
    for n in p.names:
        if n in p.missing_key:
            unsched[n].append(p.missing_key[n])
        elif not p.node_zones[n]:
            unsched[n].append(f"{n} fits no pool: " + "; ".join(
                sorted({f"{f.zone}/{f.pool}: {f.reason}" for f in fits[n]})) if fits[n] else f"{n}: the cluster has no pools")
        e = p.need[n]
        if e is not None and not e.targets and not e.peers:
            unsched[n].append(f"{n} requires podAffinity with pods that do not exist (no pod matches all its "
                              "required podAffinity terms): it stays Pending")
    p.unsched = unsched


def deadlocks(p: _Plan) -> None:
    """A term that neither matches the pod itself nor a peer waits for a target to start."""
    startable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in p.names:
            if n in startable:
                continue
            e = p.need[n]
            if e is None or n in e.targets or e.peers or (e.targets & startable):
                startable.add(n)
                changed = True
    for n in p.names:
        if n not in startable and not p.unsched[n]:
            e = p.need[n]
            waiting_for = sorted(e.targets) if e is not None else []
            p.unsched[n].append(f"{n} waits (podAffinity) for {', '.join(waiting_for)}, which "
                                "wait(s) for it in turn: none of them ever starts")


def pending_risks(p: _Plan) -> None:
    """A member of a unit that the scheduler may still put where the rest cannot follow."""
    for n in p.names:
        if any(n in u for u in p.kueue_units):
            continue  # Kueue picks the zone for the whole unit before its pods exist
        if n in p.single and len(p.units.members(n)) > 1:
            extra = p.unit_removed[n] - p.zones[n]
            rest = [m for m in p.units.members(n) if m != n]
            if extra and not p.aff[n]:
                p.risks.append(f"{n} can be scheduled in {zone_list(extra)}, where {', '.join(rest)} cannot follow "
                               f"it: they would stay Pending")
