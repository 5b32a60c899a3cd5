"""Required podAntiAffinity between a group of the job and pods outside it: an order-dependent
verdict, named as a pending risk on both sides.

The scheduler honours podAntiAffinity both ways against pods already bound: the incoming pod's
own terms, and the terms of pods already running that select it (InterPodAffinity,
satisfyPodAntiAffinity and satisfyExistingPodsAntiAffinity). Neither side is placed before the
other by the manifests, so whichever comes second finds the zones the first took; topogate does
not remove them from either side's zones. It says which side the scheduler may leave Pending:
the one whose zones the other can cover (one zone for pods held in one zone, else one per pod),
or either, on a key every node shares. The other job, placed with this one's pods as peers, says
the same from its side.
"""

from __future__ import annotations

from collections.abc import Mapping

from topogate.analysis.placement.affinity import Affinity, Race
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list

__all__ = ["race_risks"]


def race_risks(inputs: Inputs, affinity: Affinity, zones: Mapping[str, frozenset[str]],
               one_zone: frozenset[str] | set[str]) -> list[str]:
    out = []
    for r in affinity.races:
        msg = _risk(inputs, affinity, zones, one_zone, r)
        if msg:
            out.append(msg)
    return out


def _risk(inputs: Inputs, affinity: Affinity, zones: Mapping[str, frozenset[str]],
          one_zone: frozenset[str] | set[str], r: Race) -> str:
    n, q = r.group, r.peer
    zn, zq = set(zones[n]), set(q.zones)
    head = f"{n} and {q.name} repel each other on {r.key} (podAntiAffinity)"
    if not zn or not zq:
        return ""
    if r.scope == "cluster":
        return f"{head}, which every node shares: whichever starts second stays Pending"
    shared = zn & zq
    if not shared:
        return ""
    g = inputs.groups[n]
    n_span = 1 if (n in one_zone or g.pods == 1) else min(g.pods, len(shared))
    q_span = 1 if q.one_zone else min(q.pods, len(shared))
    need_n = g.pods if n in affinity.self_repelling else 1
    n_stuck = len(zn) - q_span < need_n
    q_stuck = len(zq) - n_span < 1
    if n_stuck and q_stuck:
        return f"{head} and can use the same zones ({zone_list(shared)}): whichever starts second stays Pending"
    if n_stuck:
        return (f"{head}: if {q.name} starts first it may take {zone_list(shared)}, leaving {n} too few of its "
                f"zones ({zone_list(zn)}): {n} stays Pending")
    if q_stuck:
        return (f"{head}: if {n} starts first it may take {zone_list(shared)}, every zone {q.name} can use "
                f"({zone_list(zq)}): {q.name} stays Pending")
    return ""
