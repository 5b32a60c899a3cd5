"""Splits (step 3 of the package docstring): what forces a group's pods into several zones, or
leaves some Pending: podAntiAffinity of a group with itself, topologySpreadConstraints."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topogate.analysis.placement.model import zone_list
from topogate.analysis.scheduling import selector_matches, with_label_keys
from topogate.core.words import plural
from topogate.k8s.jobs import JobGroup

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan


def splits(p: _Plan) -> None:
    """Fill ``p.splits`` (what splits each group) and the reasons it cannot run as asked."""
    p.splits = {n: [] for n in p.names}
    for n in p.names:
        g = p.by_name[n]
        if n in p.self_anti and g.pods > 1:
            _self_anti(p, g)
        for c in g.spec.get("topologySpreadConstraints") or []:
            _spread_constraint(p, g, c)


def _self_anti(p: _Plan, g: JobGroup) -> None:
    """Required podAntiAffinity of a group with itself puts each pod in its own zone."""
    n, A, zone_key = g.name, p.zones, p.zone_key
    if g.pods > len(A[n]):
        p.unsched[n].append(f"{n}: podAntiAffinity on {zone_key} needs {plural(g.pods, 'zone')} for its {plural(g.pods, 'pod')}, "
                            f"it can use {len(A[n])} ({zone_list(A[n])})")
    elif n in p.single:
        p.unsched[n].append(f"{n}: podAntiAffinity on {zone_key} puts each of its {plural(g.pods, 'pod')} in its own "
                            f"zone, but podAffinity holds them in one zone")
    else:
        p.splits[n].append(f"podAntiAffinity on {zone_key} puts each of the {g.pods} pods of {n} in its own zone")


def _spread_constraint(p: _Plan, g: JobGroup, c: Any) -> None:
    """A DoNotSchedule spread constraint on the zone key that counts the group's own pods."""
    n, A, zone_key, names = g.name, p.zones, p.zone_key, p.names
    in_unit = n in p.single
    if not isinstance(c, dict) or c.get("topologyKey") != zone_key:
        return
    if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
        return  # ScheduleAnyway only scores
    sel = with_label_keys(c.get("labelSelector"), g.label_map, c.get("matchLabelKeys"))
    if not isinstance(sel, dict) or not selector_matches(sel, g.label_map):
        return  # only a constraint that counts the group's own pods can force it apart
    raw_skew, raw_min = c.get("maxSkew"), c.get("minDomains")
    skew = raw_skew if isinstance(raw_skew, int) and raw_skew > 0 else 1
    min_domains = raw_min if isinstance(raw_min, int) and raw_min > 0 else 1
    eligible = _eligible_zones(p, n, c)
    matched = [h for h in names if selector_matches(sel, p.by_name[h].label_map)]
    reachable = {z for h in matched for z in A[h]}
    others_outside = [h for h in matched if p.units.find(h) != p.units.find(n)]
    zero_floor = bool(eligible - reachable) or min_domains > len(eligible) or (in_unit and not others_outside)
    usable = 1 if in_unit else len(A[n])
    desc = (f"spread constraint DoNotSchedule on {zone_key} (maxSkew {skew}, {len(eligible)} eligible "
            f"zone{'s' if len(eligible) != 1 else ''}: {zone_list(eligible)})")
    if zero_floor and (len(eligible) >= 2 or min_domains > len(eligible)) and g.pods > skew * usable:
        p.unsched[n].append(f"{desc} lets at most {skew * usable} of the {g.pods} pods of {n} run "
                            f"in {zone_list(A[n]) if not in_unit else 'its one zone'}: the rest stay Pending")
    elif len(eligible) >= 2 and g.pods > skew and not in_unit:
        p.splits[n].append(f"{desc} splits {n} ({g.pods} pods, maxSkew {skew}, {len(eligible)} eligible zones)")


def _eligible_zones(p: _Plan, n: str, c: dict[str, Any]) -> set[str]:
    """Zones the constraint counts, per its nodeAffinityPolicy and nodeTaintsPolicy."""
    honor_aff = c.get("nodeAffinityPolicy", "Honor") != "Ignore"
    honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
    eligible = {f.zone for f in p.fits[n]
                if (f.affinity_ok or not honor_aff) and (f.taints_ok or not honor_taints)}
    if not honor_aff:
        eligible = set(p.all_zones) if not honor_taints else {f.zone for f in p.fits[n] if f.taints_ok}
    return eligible
