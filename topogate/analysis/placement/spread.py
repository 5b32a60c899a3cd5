"""Step 5 of the package docstring, splits: what forces a group's pods into several zones, or
leaves some Pending: podAntiAffinity of a group with itself, topologySpreadConstraints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.units import Colocation
from topogate.analysis.scheduling import selector_matches, with_label_keys
from topogate.core.words import plural
from topogate.k8s.jobs import JobGroup

__all__ = ["Splits", "find_splits"]

# What one constraint does to a group: ("split", why it splits) or ("pending", why pods wait).
_Verdict = tuple[str, str]


@dataclass(frozen=True)
class Splits:
    causes: Mapping[str, tuple[str, ...]]  # per group with pods: what spreads it over several zones
    reasons: Mapping[str, tuple[str, ...]]  # per group with pods: why some of its pods stay Pending


def find_splits(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, colocation: Colocation) -> Splits:
    causes: dict[str, list[str]] = {n: [] for n in inputs.names}
    reasons: dict[str, list[str]] = {n: [] for n in inputs.names}
    for n in inputs.names:
        g = inputs.groups[n]
        verdicts: list[_Verdict | None] = []
        if n in affinity.self_repelling and g.pods > 1:
            verdicts.append(_self_anti(inputs, colocation, g))
        for c in g.spec.get("topologySpreadConstraints") or []:
            verdicts.append(_spread_constraint(inputs, nodes, colocation, g, c))
        if n in affinity.one_per_node and g.pods > 1:
            verdicts.append(_one_per_node(nodes, colocation, g))
        for v in verdicts:
            if v is not None:
                (causes if v[0] == "split" else reasons)[n].append(v[1])
    return Splits({n: tuple(c) for n, c in causes.items()}, {n: tuple(r) for n, r in reasons.items()})


def _self_anti(inputs: Inputs, colocation: Colocation, g: JobGroup) -> _Verdict:
    """Required podAntiAffinity of a group with itself puts each pod in its own zone."""
    n, zones, zone_key = g.name, colocation.zones[g.name], inputs.zone_key
    if g.pods > len(zones):
        return ("pending", f"{n}: podAntiAffinity on {zone_key} needs {plural(g.pods, 'zone')} for its "
                           f"{plural(g.pods, 'pod')}, it can use {len(zones)} ({zone_list(zones)})")
    if n in colocation.one_zone:
        return ("pending", f"{n}: podAntiAffinity on {zone_key} puts each of its {plural(g.pods, 'pod')} in its "
                           f"own zone, but podAffinity holds them in one zone")
    return ("split", f"podAntiAffinity on {zone_key} puts each of the {g.pods} pods of {n} in its own zone")


def _one_per_node(nodes: NodeFilters, colocation: Colocation, g: JobGroup) -> _Verdict | None:
    """Required podAntiAffinity of a group with itself on the hostname key: one pod per node, so
    the nodes of the pools it fits (of one zone, when it is held in one) bound its pods."""
    n, zones = g.name, colocation.zones[g.name]
    per_zone: dict[str, int] = {}
    for f in nodes.pool_fits[n]:
        if f.fits and f.zone in zones:
            per_zone[f.zone] = per_zone.get(f.zone, 0) + f.node.nodes
    room = max(per_zone.values(), default=0) if n in colocation.one_zone else sum(per_zone.values())
    if g.pods <= room:
        return None
    where = "the nodes of one zone" if n in colocation.one_zone else f"the pools it fits in {zone_list(zones)}"
    return ("pending", f"{n}: podAntiAffinity on kubernetes.io/hostname puts one pod per node; its "
                       f"{plural(g.pods, 'pod')} need {plural(g.pods, 'node')}, {where} "
                       f"{'has' if room == 1 else 'have'} {plural(room, 'node')}: the rest stay Pending")


def _spread_constraint(inputs: Inputs, nodes: NodeFilters, colocation: Colocation, g: JobGroup,
                       c: Any) -> _Verdict | None:
    """A DoNotSchedule spread constraint on the zone key that counts the group's own pods."""
    n, zones, zone_key = g.name, colocation.zones, inputs.zone_key
    in_unit = n in colocation.one_zone
    if not isinstance(c, dict) or c.get("topologyKey") != zone_key:
        return None
    if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
        return None  # ScheduleAnyway only scores
    sel = with_label_keys(c.get("labelSelector"), g.label_map, c.get("matchLabelKeys"))
    if not isinstance(sel, dict) or not selector_matches(sel, g.label_map):
        return None  # only a constraint that counts the group's own pods can force it apart
    raw_skew, raw_min = c.get("maxSkew"), c.get("minDomains")
    skew = raw_skew if isinstance(raw_skew, int) and raw_skew > 0 else 1
    min_domains = raw_min if isinstance(raw_min, int) and raw_min > 0 else 1
    eligible = _eligible_zones(inputs, nodes, n, c)
    matched = [h for h in inputs.names if selector_matches(sel, inputs.groups[h].label_map)]
    reachable = {z for h in matched for z in zones[h]}
    others_outside = [h for h in matched if colocation.unit_of[h] != colocation.unit_of[n]]
    # An eligible zone no counted pod can reach keeps the global minimum at 0 (so does minDomains
    # above the eligible zones, and a unit with no counted pod outside it).
    zero_floor = bool(eligible - reachable) or min_domains > len(eligible) or (in_unit and not others_outside)
    usable = 1 if in_unit else len(zones[n])
    desc = (f"spread constraint DoNotSchedule on {zone_key} (maxSkew {skew}, {len(eligible)} eligible "
            f"zone{'s' if len(eligible) != 1 else ''}: {zone_list(eligible)})")
    if zero_floor and (len(eligible) >= 2 or min_domains > len(eligible)) and g.pods > skew * usable:
        return ("pending", f"{desc} lets at most {skew * usable} of the {g.pods} pods of {n} run "
                           f"in {zone_list(zones[n]) if not in_unit else 'its one zone'}: the rest stay Pending")
    if len(eligible) >= 2 and g.pods > skew and not in_unit:
        return ("split", f"{desc} splits {n} ({g.pods} pods, maxSkew {skew}, {len(eligible)} eligible zones)")
    return None


def _eligible_zones(inputs: Inputs, nodes: NodeFilters, n: str, c: dict[str, Any]) -> set[str]:
    """Zones the constraint counts, per its nodeAffinityPolicy and nodeTaintsPolicy."""
    honor_aff = c.get("nodeAffinityPolicy", "Honor") != "Ignore"
    honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
    fits = nodes.pool_fits[n]
    eligible = {f.zone for f in fits if (f.affinity_ok or not honor_aff) and (f.taints_ok or not honor_taints)}
    if not honor_aff:
        eligible = set(inputs.all_zones) if not honor_taints else {f.zone for f in fits if f.taints_ok}
    return eligible
