"""Step 5 of the package docstring, splits: what forces a group's pods into several zones, or
leaves some Pending: podAntiAffinity of a group with itself, topologySpreadConstraints."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.domains import key_scope
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.peers import AffinityPeer
from topogate.analysis.placement.units import Colocation
from topogate.analysis.scheduling import selector_matches, with_label_keys
from topogate.core.words import plural
from topogate.k8s.jobs import JobGroup

__all__ = ["Splits", "find_splits"]

# What one constraint does to a group: ("split", why it splits), ("pending", why pods wait) or
# ("risk", in what order some pods wait).
_Verdict = tuple[str, str]


@dataclass(frozen=True)
class Splits:
    causes: Mapping[str, tuple[str, ...]]  # per group with pods: what spreads it over several zones
    reasons: Mapping[str, tuple[str, ...]]  # per group with pods: why some of its pods stay Pending
    # Orders of pods that leave some Pending: groups spread over zones that their podAffinity lets
    # them into only where a pod they follow already runs; spread that counts other groups' pods.
    risks: tuple[str, ...] = ()


def find_splits(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, colocation: Colocation) -> Splits:
    causes: dict[str, list[str]] = {n: [] for n in inputs.names}
    reasons: dict[str, list[str]] = {n: [] for n in inputs.names}
    risks: list[str] = []
    for n in inputs.names:
        g = inputs.groups[n]
        verdicts: list[_Verdict | None] = []
        if n in affinity.self_repelling and g.pods > 1:
            verdicts.append(_self_anti(inputs, colocation, g))
        for c in g.spec.get("topologySpreadConstraints") or []:
            verdicts.extend(_spread_constraint(inputs, nodes, affinity, colocation, g, c))
        if n in affinity.one_per_node and g.pods > 1:
            verdicts.append(_one_per_node(nodes, colocation, g))
        for v in verdicts:
            if v is not None and v[0] == "risk":
                risks.append(v[1])
            elif v is not None:
                (causes if v[0] == "split" else reasons)[n].append(v[1])
        ties = affinity.zone_ties[n]
        if causes[n] and not reasons[n] and ties and (ties[0].targets - {n} or ties[0].peers):
            risks.append(f"{n} must spread over zones, and its podAffinity on the zone key lets a pod into a zone "
                         "only where a pod it follows already runs: in an order where too few zones have one, the "
                         "rest of its pods stay Pending")
    return Splits({n: tuple(c) for n, c in causes.items()}, {n: tuple(r) for n, r in reasons.items()}, tuple(risks))


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


def _spread_constraint(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, colocation: Colocation, g: JobGroup,
                       c: Any) -> list[_Verdict]:
    """A DoNotSchedule spread constraint that counts the group's own pods, judged with counts and
    capacity (PodTopologySpread Filter): a pod may go to a domain only if the matching pods there,
    plus itself, exceed the global minimum by at most maxSkew. The minimum is taken over the
    eligible domains (nodes passing the inclusion policies; 0 when there are fewer than
    minDomains), so a domain the counted pods cannot reach, or can fill only so far, caps every
    other domain at that many plus maxSkew."""
    if not isinstance(c, dict) or c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
        return []  # ScheduleAnyway only scores
    key = str(c.get("topologyKey", ""))
    scope = key_scope(inputs, key)
    if scope not in ("zone", "node", "cluster"):
        return []
    sel = with_label_keys(c.get("labelSelector"), g.label_map, c.get("matchLabelKeys"))
    if not isinstance(sel, dict) or not selector_matches(sel, g.label_map):
        return []  # only a constraint that counts the group's own pods can force it apart
    raw_skew, raw_min = c.get("maxSkew"), c.get("minDomains")
    skew = raw_skew if isinstance(raw_skew, int) and raw_skew > 0 else 1
    min_domains = raw_min if isinstance(raw_min, int) and raw_min > 0 else 1
    n = g.name
    counted = [h for h in inputs.names if selector_matches(sel, inputs.groups[h].label_map)]
    eligible = _eligible_pools(nodes, n, c)
    one = n in colocation.one_zone
    room = _Room(inputs, nodes, affinity, colocation, n)
    # Upper bound of the global minimum: the least any eligible domain can ever count.
    if scope == "cluster":
        domains = 1
    elif scope == "zone":
        domains = len({z for z, _ in eligible})
    else:
        domains = sum(room.nodes(p) for p in eligible)
    first = _first_counted(affinity, counted, n)
    # Pods of other workloads the selector counts (a spread counts the pods of its own namespace).
    peers = inputs.peers.match(sel, frozenset({inputs.job.namespace}), exclude=inputs.job.object_id)
    best = safe = 0
    may: set[str] = set()
    zones: list[str | None] = [*sorted(colocation.zones[n])] if one else [None]
    short: list[tuple[str, int]] = []  # zones of a one-zone group that hold too few of its pods
    for z in zones:
        floor = 0 if domains < min_domains or not domains else min(
            _floor(scope, eligible, counted, room, z), room.most(counted) // domains)
        cap = floor + skew
        rooms = room.domains(scope, z)
        total = sum(m * min(cap, r) for m, r in rooms.values())
        # A pod of a group n follows runs before n's first pod, in a domain of its own pools, and
        # takes a count there: at least what the cheapest such domain costs n.
        lost = min((_cost(rooms, d, cap) for h in first for d in room.domains_of(scope, h, z)), default=0)
        held = min(g.pods, total - lost)
        best = max(best, held)
        if z is not None and held < g.pods:
            short.append((z, max(0, held)))
        # Any other counted pod may come first too, of the job or of another workload in its
        # namespace: in the worst order each takes a count in another of n's domains.
        reach_of = {h: room.domains_of(scope, h, z) for h in counted if h != n}
        others = [h for h in reach_of if reach_of[h] & rooms.keys()]
        where_peer = [(p, _peer_domains(scope, p, rooms)) for p in peers]
        outside = [(p, ds) for p, ds in where_peer if ds & rooms.keys()]
        may.update(others, (p.name for p, _ in outside))
        reach = set().union(*(reach_of[h] for h in others), *(ds for _, ds in outside))
        worst = _worst_cost(rooms, cap, sum(room.pods(h, None, z) for h in others) + sum(p.pods for p, _ in outside),
                            reach)
        safe = max(safe, min(g.pods, total - worst))
    what = {"zone": "zone", "node": "node"}.get(scope, "domain")
    desc = (f"spread constraint DoNotSchedule on {key} (maxSkew {skew}"
            + (f", minDomains {min_domains}" if min_domains > 1 else "")
            + f", {plural(domains, f'eligible {what}')})")
    if best < g.pods:
        where = "its one zone" if one else zone_list(colocation.zones[n])
        also = f" (with a pod of {' or '.join(first)}, which it follows, counted)" if first else ""
        return [("pending", f"{desc} lets at most {best} of the {g.pods} pods of {n} run in {where}{also}: the rest "
                            "stay Pending")]
    out: list[_Verdict] = []
    if short:
        # The unit's first pod picks its zone with no regard for the spread of the pods to come
        # (the scheduler places one pod at a time), and the rest must join it there.
        where = "; ".join(f"{z} at most {k}" for z, k in short)
        out.append(("risk", f"{n}: {desc} lets too few of its {g.pods} pods run in a zone its first pod may be "
                            f"scheduled in ({where}), and the rest must join that zone: they stay Pending"))
    if safe < g.pods:
        out.append(("risk", f"{n}: {desc} counts the pods of {', '.join(sorted(may))} too: in an order where they run first "
                            f"on the {what}s {n} can use, at most {safe} of its {g.pods} pods fit: the rest stay Pending"))
    if scope == "zone" and not one and g.pods > skew and (domains >= 2 or min_domains > domains):
        if counted == [n]:
            out.append(("split", f"{desc} splits {n} ({g.pods} pods, maxSkew {skew}, {domains} eligible zones)"))
        else:
            out.append(("split", f"{desc} keeps the pods it counts ({', '.join(counted)}) out of any one zone"))
    return out


def _peer_domains(scope: str, p: AffinityPeer, rooms: Mapping[Any, tuple[int, int]]) -> set[Any]:
    """The domains (keyed as ``_Room.domains``) the pods of a peer may run in: all of n's when
    its pools are not known."""
    if not p.pools:
        return set(rooms)
    if scope == "node":
        return set(p.pools)
    return {z if scope == "zone" else "" for z, _ in p.pools}


def _first_counted(affinity: Affinity, counted: list[str], n: str) -> list[str]:
    """The groups one of whose pods runs before n's first pod and counts in its spread: those its
    required podAffinity matches, when it matches no pod of n and none outside the job."""
    e = affinity.required.get(n)
    if e is None or e.peers or not e.targets or n in e.targets or not e.targets <= set(counted):
        return []
    return sorted(e.targets)


def _floor(scope: str, eligible: set[tuple[str, str]], counted: list[str], room: _Room, zone: str | None) -> int:
    """The most the global minimum can reach: the least any eligible domain can hold of the
    counted pods (a group held in one zone counts nowhere else)."""
    if scope == "cluster":
        return sum(room.pods(h, None, zone) for h in counted)
    if scope == "zone":
        return min((sum(room.pods(h, {p for p in eligible if p[0] == z}, zone) for h in counted)
                    for z in {z for z, _ in eligible}), default=0)
    return min((min(sum(room.per_node(h, p, zone) for h in counted), room.most(counted)) for p in eligible
                if room.nodes(p) > 0), default=0)


class _Room:
    """How many pods of the job's groups the pools can hold, by zone and by node."""

    def __init__(self, inputs: Inputs, nodes: NodeFilters, affinity: Affinity, colocation: Colocation, n: str) -> None:
        self.inputs, self.nodes_, self.affinity, self.colocation, self.n = inputs, nodes, affinity, colocation, n
        self._classes = {(nc.zone, nc.pool): nc for nc in inputs.classes}

    def nodes(self, pool: tuple[str, str]) -> int:
        nc = self._classes.get(pool)
        return nc.nodes if nc is not None else 0

    def most(self, groups: list[str]) -> int:
        return sum(self.inputs.groups[h].pods for h in groups)

    def _fits(self, h: str, zone: str | None) -> list[Any]:
        """The pools group h can use: in the zone of the unit when h is held in it with n."""
        zs = self.colocation.zones[h]
        if zone is not None and self.colocation.unit_of[h] == self.colocation.unit_of[self.n]:
            zs = zs & {zone}
        return [f for f in self.nodes_.pool_fits[h] if f.fits and f.zone in zs]

    def per_node(self, h: str, pool: tuple[str, str], zone: str | None) -> int:
        g = self.inputs.groups[h]
        for f in self._fits(h, zone):
            if (f.zone, f.pool) == pool:
                if h in self.affinity.one_per_node:
                    return 1
                return g.pods if g.gpus_per_pod <= 0 else min(g.pods, f.gpus_per_node // g.gpus_per_pod)
        return 0

    def pods(self, h: str, pools: set[tuple[str, str]] | None, zone: str | None) -> int:
        """Pods of group h the given pools (None: all) can hold."""
        total = 0
        for f in self._fits(h, zone):
            if pools is None or (f.zone, f.pool) in pools:
                total += f.node.nodes * self.per_node(h, (f.zone, f.pool), zone)
        return min(total, self.inputs.groups[h].pods)

    def domains(self, scope: str, zone: str | None) -> dict[Any, tuple[int, int]]:
        """n's domains as (how many alike, pods of n one of them can hold): per pool for the
        node scope (its nodes alike), per zone, or the one domain of the cluster."""
        out: dict[Any, tuple[int, int]] = {}
        for f in self._fits(self.n, zone):
            per = self.per_node(self.n, (f.zone, f.pool), zone)
            if scope == "node":
                out[(f.zone, f.pool)] = (f.node.nodes, per)
            else:
                d = f.zone if scope == "zone" else ""
                out[d] = (1, out.get(d, (1, 0))[1] + f.node.nodes * per)
        return out

    def domains_of(self, scope: str, h: str, zone: str | None) -> set[Any]:
        """The domains (keyed as ``domains``) a pod of group h may run in."""
        fits = self._fits(h, zone)
        if scope == "node":
            return {(f.zone, f.pool) for f in fits}
        return {f.zone if scope == "zone" else "" for f in fits}


def _cost(rooms: Mapping[Any, tuple[int, int]], d: Any, cap: int, k: int = 1) -> int:
    """Pods of n one domain d of ``rooms`` loses to k counted pods of other groups running there."""
    if d not in rooms:
        return 0
    r = rooms[d][1]
    return min(cap, r) - max(0, min(cap - k, r))


def _worst_cost(rooms: Mapping[Any, tuple[int, int]], cap: int, k: int, where: set[Any]) -> int:
    """About the most n can lose to k counted pods of other groups in the domains ``where``: one
    node (or zone) after another, those where fewest pods start to cost first, each given up to
    maxSkew's cap of them (enough to cost n all it holds there)."""
    lost = 0
    for d in sorted((d for d in where if d in rooms), key=lambda d: (cap - min(cap, rooms[d][1]), repr(d))):
        m, r = rooms[d]
        for _ in range(m):
            if k <= 0:
                return lost
            lost += _cost(rooms, d, cap, min(k, cap))
            k -= min(k, cap)
    return lost


def _eligible_pools(nodes: NodeFilters, n: str, c: dict[str, Any]) -> set[tuple[str, str]]:
    """The pools whose nodes the constraint counts, per its nodeAffinityPolicy (Honor: only
    those passing the pod's nodeSelector and required node affinity) and nodeTaintsPolicy
    (Honor: only those whose taints it tolerates). A pool without nodes counts no domain."""
    honor_aff = c.get("nodeAffinityPolicy", "Honor") != "Ignore"
    honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
    return {(f.zone, f.pool) for f in nodes.pool_fits[n] if f.node.nodes > 0
            and (f.affinity_ok or not honor_aff) and (f.taints_ok or not honor_taints)}
