"""Step 4 of the package docstring: zone sets and co-location units. A greatest fixpoint narrows
each group's zones and merges the groups provably in one zone (union-find); then a GPU unit keeps
the zones where it fits, and a member the scheduler may place where the rest cannot follow is a
pending risk.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.capacity import crowding_risks, fit_gpu_units, fit_one_node
from topogate.analysis.placement.feasible import Unstartable
from topogate.analysis.placement.fixpoint import Fixpoint, reach_zones
from topogate.analysis.placement.follow import follow_hosts, follower_risks, leader_risks, peer_risks
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.races import race_risks
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
    # Per group with pods: where its pods can be bound in some run, the job stranded or not
    # (``fixpoint.reach_zones``): what another job's podAffinity may find.
    reach: Mapping[str, frozenset[str]] = None  # type: ignore[assignment]


def colocate(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, unstartable: Unstartable) -> Colocation:
    reach = reach_zones(inputs, nodes, affinity, unstartable.never)
    fixpoint = Fixpoint(inputs, nodes, affinity, reach)
    fixpoint.run()
    unit_of = {n: fixpoint.units.find(n) for n in inputs.names}
    by_unit: dict[str, list[str]] = {}
    for n in inputs.names:  # sorted, so each unit's members come out sorted
        by_unit.setdefault(unit_of[n], []).append(n)
    members = {n: tuple(by_unit[unit_of[n]]) for n in inputs.names}
    zones, gpu_problems, small = fit_gpu_units(inputs, nodes.pool_fits, fixpoint.frozen_zones(), fixpoint.one_zone,
                                               unit_of, members, affinity.one_per_node)
    zones, node_problems, node_risks = fit_one_node(inputs, nodes.pool_fits, zones, affinity.one_node, members)
    host = follow_hosts(inputs, nodes, affinity, zones)
    zones = host.zones
    gpu_problems = [*_disjoint_units(inputs, fixpoint, members), *_repelling_units(inputs, affinity, fixpoint, members),
                    *gpu_problems, *node_problems, *host.problems]
    risks = [*_pending_risks(inputs, affinity, zones, fixpoint, members), *node_risks,
             *_crowded_out(inputs, affinity, zones, fixpoint.one_zone), *host.risks,
             *_too_small(inputs, small, members),
             *peer_risks(affinity, zones, fixpoint.peer_unit),
             *follower_risks(inputs, nodes, affinity, zones, fixpoint.one_zone, members, fixpoint.peer_unit),
             *leader_risks(inputs, nodes, affinity, zones, fixpoint.one_zone, members),
             *crowding_risks(inputs, nodes.pool_fits, zones, fixpoint.one_zone, members, affinity.one_per_node),
             *race_risks(inputs, affinity, zones, fixpoint.one_zone),
             *(c.message(inputs.groups[n].pods) for n, c in sorted(affinity.contradictions.items())
               if c.must_be_first)]
    return Colocation(zones, unit_of, members, frozenset(fixpoint.one_zone), tuple(gpu_problems),
                      tuple(dict.fromkeys(risks)), reach)


def _too_small(inputs: Inputs, small: Mapping[str, tuple[tuple[frozenset[str], str], ...]],
               members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A unit held in one zone goes where its first pod lands, and the scheduler does not look
    ahead: a zone its members pass but whose GPUs (or nodes, for pods that take one each) cannot
    hold them all strands the rest."""
    out: list[str] = []
    for n, lost in sorted(small.items()):
        if n in inputs.placed_whole:
            continue  # Kueue (or the scheduler, for a PodGroup) picks the zone for the whole unit
        out.extend(f"the first pod of {', '.join(members[n])} may be scheduled in {zone_list(zs)}, "
                   f"{what}: the rest would stay Pending" for zs, what in lost)
    return out


def _disjoint_units(inputs: Inputs, fixpoint: Fixpoint, members: Mapping[str, tuple[str, ...]]) -> list[str]:
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


def _repelling_units(inputs: Inputs, affinity: Affinity, fixpoint: Fixpoint,
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


def _pending_risks(inputs: Inputs, affinity: Affinity, zones: Mapping[str, frozenset[str]], fixpoint: Fixpoint,
                   members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A member of a unit with no podAffinity of its own that the scheduler may still put in a zone
    the unit took away from it (it knows nothing of who follows it), leaving the rest Pending."""
    out: list[str] = []
    for n in inputs.names:
        if n in inputs.placed_whole:
            continue  # Kueue (or the scheduler, for a PodGroup) picks the zone for the whole unit
        if n in fixpoint.one_zone and len(members[n]) > 1:
            extra = fixpoint.refused[n] - zones[n]
            rest = [m for m in members[n] if m != n]
            if extra and not affinity.zone_ties[n]:
                out.append(f"{n} can be scheduled in {zone_list(extra)}, where {', '.join(rest)} cannot follow "
                           f"it: they would stay Pending")
    return out


