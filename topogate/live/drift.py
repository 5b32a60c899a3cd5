"""`topogate drift`: each inventory pool and zone against the nodes the cluster has now.

A live node belongs to the inventory pool of its zone whose name is its pool label's value
(EKS, Karpenter, GKE, AKS or --pool-label), else to the pool whose labels it all carries (the
most specific such pool). What remains, no pool describes. Facts name the inventory line they
concern: the pool, the zone, or the cluster for zones the inventory does not list.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from topogate.core.position import Position
from topogate.inventory.model import Cluster, Pool, Taint
from topogate.live.nodes import LiveNode, dns_label
from topogate.policies.context import LiveFact
from topogate.policies.live.facts import GPUS, POOL_SIZE, SCHEDULING, UNDESCRIBED, ZONE

SHOWN = 5  # node names listed in one message; the rest are counted


def names(nodes: Iterable[LiveNode]) -> str:
    ns = sorted(n.name for n in nodes)
    more = f", +{len(ns) - SHOWN} more" if len(ns) > SHOWN else ""
    return ", ".join(ns[:SHOWN]) + more


def taints_text(ts: Iterable[Taint]) -> str:
    items = [f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in ts]
    return ", ".join(sorted(items)) or "none"


def _match(node: LiveNode, pools: Sequence[Pool]) -> Pool | None:
    if node.pool is not None:
        named = next((p for p in pools if p.name == dns_label(node.pool)), None)
        if named is not None:
            return named
    labels = node.label_map
    fits = [p for p in pools if p.labels and all(labels.get(k) == v for k, v in p.labels)]
    return max(fits, key=lambda p: (len(p.labels), p.name), default=None)


def compare(cluster: Cluster, nodes: Sequence[LiveNode]) -> tuple[LiveFact, ...]:
    facts: list[LiveFact] = []
    c = cluster.name
    by_zone: dict[str, list[LiveNode]] = defaultdict(list)
    for n in nodes:
        by_zone[n.zone].append(n)
    for z in cluster.zones:
        if not by_zone.get(z.name):
            facts.append(LiveFact(ZONE, f"Zone/{c}/{z.name}", (
                f"zone {z.name} of cluster {c} has no node in the cluster (inventory: "
                f"{sum(p.nodes for p in z.pools)} nodes); remove the zone or find its nodes"), z.pos))
    known = {z.name for z in cluster.zones}
    for zone in sorted(set(by_zone) - known - {""}):
        members = by_zone[zone]
        facts.append(LiveFact(ZONE, f"Zone/{c}/{zone}", (
            f"the cluster has {len(members)} node(s) in zone {zone}, which the inventory of "
            f"cluster {c} does not list: {names(members)}; add the zone and its pools"), cluster.pos))
    if by_zone.get(""):
        members = by_zone[""]
        facts.append(LiveFact(UNDESCRIBED, f"Nodes/{c}/no-zone", (
            f"{len(members)} node(s) carry no {cluster.zone_label} label, so no zone describes "
            f"them: {names(members)}"), cluster.pos))
    for z in cluster.zones:
        facts.extend(_zone_facts(c, z.name, z.pools, by_zone.get(z.name, []), z.pos))
    return tuple(sorted(facts))


def _zone_facts(c: str, zone: str, pools: Sequence[Pool], nodes: Sequence[LiveNode],
                zone_pos: Position) -> list[LiveFact]:
    facts: list[LiveFact] = []
    matched: dict[str, list[LiveNode]] = defaultdict(list)
    stray: dict[str, list[LiveNode]] = defaultdict(list)
    for n in nodes:
        p = _match(n, pools)
        if p is None:
            key = f"{n.pool_label}={n.pool}" if n.pool else "no node-pool label"
            stray[key].append(n)
        else:
            matched[p.name].append(n)
    for key, members in sorted(stray.items()):
        facts.append(LiveFact(UNDESCRIBED, f"Nodes/{c}/{zone}/{dns_label(key, 'nodes')}", (
            f"{len(members)} node(s) in zone {zone} ({key}) match no pool of the zone by name or "
            f"labels: {names(members)}; add a pool for them"), zone_pos))
    for p in pools:
        facts.extend(pool_facts(c, zone, p, matched.get(p.name, [])))
    return facts


def pool_facts(c: str, zone: str, p: Pool, nodes: Sequence[LiveNode]) -> list[LiveFact]:
    obj = f"Pool/{c}/{zone}/{p.name}"
    facts: list[LiveFact] = []
    if not p.holds(len(nodes)):  # an autoscaled pool may have any count from its min to its max
        facts.append(LiveFact(POOL_SIZE, obj, (
            f"pool {p.name} in {zone} has {len(nodes)} node(s) in the cluster, the inventory says "
            f"{p.size_text}" + (f": {names(nodes)}" if nodes else "")), p.pos))
    if not nodes:
        return facts
    want = tuple(sorted(p.taints, key=lambda t: (t.key, t.value, t.effect)))
    by_taints: dict[tuple[Taint, ...], list[LiveNode]] = defaultdict(list)
    for n in nodes:
        by_taints[n.taints].append(n)
    for have, members in sorted(by_taints.items(), key=lambda kv: str(kv[0])):
        if {(t.key, t.value, t.effect) for t in have} != {(t.key, t.value, t.effect) for t in want}:
            facts.append(LiveFact(SCHEDULING, obj, (
                f"pool {p.name} in {zone}: taints differ: inventory {taints_text(want)}, cluster "
                f"{taints_text(have)} on {names(members)}"), p.pos))
    for k, v in p.labels:
        off = [n for n in nodes if n.label_map.get(k) != v]
        if off:
            seen = sorted({n.label_map.get(k, "(absent)") for n in off})
            facts.append(LiveFact(SCHEDULING, obj, (
                f"pool {p.name} in {zone}: label {k}={v} selects the pool, but the cluster has "
                f"{k}={'/'.join(seen)} on {names(off)}"), p.pos))
    by_gpus: dict[int, list[LiveNode]] = defaultdict(list)
    for n in nodes:
        by_gpus[n.gpus].append(n)
    for gpus, members in sorted(by_gpus.items()):
        if gpus != p.gpus_per_node:
            facts.append(LiveFact(GPUS, obj, (
                f"pool {p.name} in {zone}: {gpus} GPU(s) per node allocatable in the cluster, the "
                f"inventory says gpusPerNode {p.gpus_per_node}: {names(members)}"), p.pos))
    return facts
