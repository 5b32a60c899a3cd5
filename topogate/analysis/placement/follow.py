"""What a group's required podAffinity follows, beyond the zones (end of step 4): the nodes it
needs on the hostname key, and the pending risks of following pods the scheduler places first.

Hostname.  A term on ``kubernetes.io/hostname`` needs a pod it matches on the same node, not
only in the same zone: a follower can use only pools where a followed pod can run too, and its
pods spread over at most as many nodes as run followed pods (plus its own first pod's node, when
it matches its own term). One pod per node (podAntiAffinity of the group with itself on the
hostname) then bounds its pods by those nodes; GPUs bound them by what those nodes hold.

Risks.  The followed pods are placed with no regard for their followers: a one-zone peer (a
one-replica Deployment, a group of another job held in one zone) may land in a zone its
followers cannot use; the pods followed on the zone key (groups of its job, other jobs' groups,
other workloads) may all land in zones the follower cannot use; pods followed on the hostname
may all land on nodes it cannot use. Each leaves the follower Pending in that run. A group that
follows its own pods as well starts anywhere only while no pod it matches runs: when a pod of
another group or workload it matches comes first, all of its pods must join the zones those run
in, which may be one zone too small for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.capacity import crowd_in, pod_slots, slots_beside
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.peers import AffinityPeer
from topogate.analysis.scheduling import HOSTNAME_LABEL, PoolFit
from topogate.core.words import plural

__all__ = ["follow_hosts", "follower_risks", "leader_risks", "peer_risks"]

Pool = tuple[str, str]  # (zone, pool)


@dataclass(frozen=True)
class HostFollow:
    zones: dict[str, frozenset[str]]
    problems: list[str]
    risks: list[str]


def _pools(fits: tuple[PoolFit, ...], zones: frozenset[str]) -> dict[Pool, PoolFit]:
    return {(f.zone, f.pool): f for f in fits if f.fits and f.zone in zones}


def _names(pools: set[Pool]) -> str:
    return ", ".join(f"{z}/{p}" for z, p in sorted(pools)) or "none"


def follow_hosts(inputs: Inputs, nodes: NodeFilters, affinity: Affinity,
                 zones: Mapping[str, frozenset[str]]) -> HostFollow:
    out = dict(zones)
    problems: list[str] = []
    risks: list[str] = []
    for n in sorted(affinity.host_ties):
        if n in affinity.one_node or not out[n]:
            continue  # following only itself: capacity.fit_one_node
        e = affinity.host_ties[n]
        g = inputs.groups[n]
        mine = _pools(nodes.pool_fits[n], out[n])
        others = sorted(e.targets - {n})
        theirs: set[Pool] = set()
        budget = 1 if n in e.targets else 0  # nodes that may run a followed pod (its own first)
        outside: list[bool] = []
        for h in others:
            ph = set(_pools(nodes.pool_fits[h], zones[h]))
            theirs |= ph
            budget += inputs.groups[h].pods
            outside.append(bool(ph - set(mine)))
        for q in e.peers:
            pq = set(q.pools) if q.pools else {k for k in mine if k[0] in q.zones}
            theirs |= pq
            budget += q.pods
            outside.append(bool(pq - set(mine)))
        usable = set(mine) if n in e.targets else set(mine) & theirs
        names = ", ".join([*others, *(q.name for q in e.peers)])
        if not usable:
            problems.append(f"{n} requires podAffinity on kubernetes.io/hostname (the same node) with {names}, whose "
                            f"pods run only on nodes it cannot use ({_names(theirs)}): it never starts")
            out[n] = frozenset()
            continue
        out[n] = out[n] & frozenset(z for z, _ in usable)
        if n not in e.targets and outside and all(outside):
            risks.append(f"{n} requires podAffinity on kubernetes.io/hostname with {names}, which may all run on "
                         f"nodes of {_names(theirs - set(mine))}, where {n} cannot: it would stay Pending")
        node_count = sum(mine[k].node.nodes for k in usable)
        hosts = min(budget, node_count)
        per_node = 1 if n in affinity.one_per_node else (
            max(mine[k].gpus_per_node // g.gpus_per_pod for k in usable) if g.gpus_per_pod > 0 else g.pods)
        if g.pods > hosts * per_node:
            why = "one pod per node (podAntiAffinity on kubernetes.io/hostname)" if n in affinity.one_per_node else \
                f"{plural(per_node, 'pod')} of {plural(g.gpus_per_pod, 'GPU')} per node"
            problems.append(f"{n}: podAffinity on kubernetes.io/hostname puts each of its {plural(g.pods, 'pod')} on a "
                            f"node running {names}, at most {plural(hosts, 'node')}; with {why} they hold "
                            f"{hosts * per_node}: the rest stay Pending")
    return HostFollow(out, problems, risks)


def follower_risks(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, zones: Mapping[str, frozenset[str]],
                   one_zone: frozenset[str] | set[str], members: Mapping[str, tuple[str, ...]],
                   peer_unit: Mapping[str, str]) -> list[str]:
    """A group that follows other pods on the zone key (groups of its job, not itself; pods of
    other jobs and workloads), all of which the scheduler may bind in zones it cannot use: it
    stays Pending. The followed pods are placed with no regard for their follower (the
    scheduler's InterPodAffinity filter checks only the incoming pod's terms), so its zones,
    narrowed to theirs, are no promise that any of them lands there."""
    out = []
    for n in inputs.names:
        for t in affinity.zone_ties[n]:
            if n in t.targets or not (t.targets or t.peers) or not zones[n]:
                continue
            if n in one_zone and t.targets and t.targets <= set(members[n]):
                continue  # held in one zone with them: units._pending_risks says what may go wrong
            if any(q.one_zone and q.one_zone == peer_unit.get(n) for q in t.peers):
                continue  # held in the zone of that peer: peer_risks
            away = _all_away(inputs, nodes, zones, n, t.targets, t.peers)
            if away is not None:
                where = zone_list(away)
                names = ", ".join([*sorted(t.targets), *(q.name for q in t.peers)])
                out.append(f"{n} follows {names} (podAffinity on the zone key), whose pods may "
                           f"all be scheduled in {where}, where {n} cannot run: it would stay Pending")
    return out


def leader_risks(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, zones: Mapping[str, frozenset[str]],
                 one_zone: frozenset[str] | set[str], members: Mapping[str, tuple[str, ...]]) -> list[str]:
    """A group whose required podAffinity on the zone key matches its own pods and others (groups
    of its job, other workloads' pods): its first pod may land anywhere only while no pod it
    matches runs (InterPodAffinity's exception for the first pod). When one of the others comes
    first, every pod of the group must join a zone where a matched pod runs: the others may all
    run in zones it cannot use, or all in one zone too small for it beside them. A group held in
    one zone with the groups it follows is their unit's risk (units._too_small), and one placed
    whole (Kueue, a PodGroup) has its zone picked before any pod is bound."""
    out = []
    for n in inputs.names:
        if not zones[n] or n in inputs.placed_whole:
            continue
        g = inputs.groups[n]
        for t in affinity.zone_ties[n]:
            others = sorted(t.targets - {n})
            if n not in t.targets or not (others or t.peers) or HOSTNAME_LABEL in t.keys or \
                    (n in one_zone and not t.peers and t.targets <= set(members[n])):
                continue  # on the hostname a node, not a zone, must hold it: the map's first-mover risk
            leaders = [*(h for h in others if _may_lead(affinity, h, n)), *(q.name for q in t.peers)]
            if not leaders:
                continue
            head = (f"{n} follows its own pods and those of {', '.join([*others, *(q.name for q in t.peers)])} "
                    f"(podAffinity on the zone key): if a pod of {' or '.join(leaders)} starts first, {n} can join "
                    "only the zones they run in, and they may all be scheduled in")
            away = _all_away(inputs, nodes, zones, n, others, t.peers)
            if away is not None:
                out.append(f"{head} {zone_list(away)}, where {n} cannot run: it would stay Pending")
                continue
            for z in sorted(zones[n]):
                one = frozenset({z})
                if not all(z in zones[h] and _fits(inputs, nodes, h, one) for h in others) or \
                        not all(z in q.zones and _peer_fits(q, one) for q in t.peers):
                    continue  # the others cannot all run in z
                beside = crowd_in(inputs, nodes.pool_fits, others, z, affinity.one_per_node)
                beside += [(q.fits or None, q.gpus_per_pod, q.pods) for q in t.peers]
                room = slots_beside(nodes.pool_fits[n], z, g.gpus_per_pod, n in affinity.one_per_node, beside)
                if room < g.pods:
                    out.append(f"{head} {z}, which holds {room} of its {plural(g.pods, 'pod')} beside them: the rest "
                               "would stay Pending")
    return out


def _all_away(inputs: Inputs, nodes: NodeFilters, zones: Mapping[str, frozenset[str]], n: str,
              groups: Iterable[str], peers: Iterable[AffinityPeer]) -> frozenset[str] | None:
    """The zones n cannot use where the pods of these groups and peers may all run, each wholly
    in zones of its own that n cannot use; None when one of them cannot be wholly there."""
    away: list[frozenset[str]] = []
    for h in groups:
        z = zones[h] - zones[n]
        if not z or not _fits(inputs, nodes, h, z):
            return None
        away.append(z)
    for q in peers:
        z = frozenset(q.zones) - zones[n]
        if not z or not _peer_fits(q, z):
            return None
        away.append(z)
    return frozenset().union(*away)


def _may_lead(affinity: Affinity, h: str, n: str) -> bool:
    """A pod of group h may run before any pod of n: its required podAffinity, if any, matches
    pods other than n's."""
    e = affinity.required.get(h)
    return e is None or bool(e.peers) or bool(e.targets - {n})


def _peer_fits(q: AffinityPeer, zones: frozenset[str]) -> bool:
    """All of a peer's pods fit in these zones, by what its GPUs need (pools unknown: they may)."""
    return not q.fits or pod_slots(q.fits, zones, q.gpus_per_pod) >= q.pods


def _fits(inputs: Inputs, nodes: NodeFilters, h: str, zones: frozenset[str]) -> bool:
    """All of group h's pods fit in these zones (GPUs are whole devices on one node)."""
    g = inputs.groups[h]
    return pod_slots(nodes.pool_fits[h], zones, g.gpus_per_pod) >= g.pods


def peer_risks(affinity: Affinity, zones: Mapping[str, frozenset[str]], peer_unit: Mapping[str, str]) -> list[str]:
    """A group held in the zone of a one-zone peer it follows: the peer lands where the scheduler
    puts it, which may be a zone the group cannot use (or its unit cannot fit in)."""
    out = []
    for n, key in sorted(peer_unit.items()):
        for t in affinity.zone_ties[n]:
            for q in t.peers:
                if q.one_zone != key:
                    continue
                extra = set(q.zones) - zones[n]
                if extra and zones[n]:
                    out.append(f"{n} follows {q.name}, whose pods are in one zone at a time, and it may be scheduled "
                               f"in {zone_list(extra)}, where {n} cannot run: {n} would stay Pending")
                break
    return out
