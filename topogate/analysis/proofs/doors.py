"""Declared doors in the analysis: which flows a door accepts (the boundary proof and the job
ingress check subtract exactly those), the pods that stand for a door's target, and whether the
policies among the paths really open each door.
"""

from __future__ import annotations

from dataclasses import dataclass

from topogate.analysis.netpolicy import PodClass
from topogate.analysis.proofs import ClusterView
from topogate.analysis.proofs.members import ANY_ZONE, Member, Span, span_text
from topogate.core.position import Position
from topogate.inventory.model import Door, Inventory


def door_spans(d: Door) -> list[Span]:
    return [(p.protocol, p.port, p.end_port or p.port) for p in d.ports]


class DoorRules:
    """The doors of one cluster, answering "which ports does a door open from src to dst?".

    A job's declared metrics scraping (`metrics: {namespace, port}`) is a door too: pods of the
    scrapers' namespace reach the job's metrics port, from whatever zone they run in."""

    def __init__(self, inv: Inventory, cluster: str):
        self.doors = inv.doors_of(cluster)
        self.sources = {d.name: {w.object_id for w in inv.door_sources(d)} for d in self.doors}
        self.metrics = {w.object_id: w.metrics for w in inv.workloads_of(cluster) if w.metrics}

    def _from(self, d: Door, m: Member) -> bool:
        if d.source.network_zone is not None:
            return m.nz == d.source.network_zone
        return bool(m.job) and m.job in self.sources[d.name]

    @staticmethod
    def _to(d: Door, m: Member) -> bool:
        if d.target.network_zone is not None:
            return m.nz == d.target.network_zone
        labels = dict(m.pod.labels)
        return (m.pod.namespace == (d.target.namespace or "default")
                and all(labels.get(k) == v for k, v in d.target.labels))

    def __call__(self, src: Member, dst: Member) -> list[Span]:
        spans = [s for d in self.doors if self._from(d, src) and self._to(d, dst) for s in door_spans(d)]
        scrape = self.metrics.get(dst.job)
        if scrape is not None and src.external is None and src.pod.namespace == scrape.namespace:
            spans.append(("TCP", scrape.port, scrape.port))
        return spans


def target_members(cm: ClusterView, doors: tuple[Door, ...]) -> list[Member]:
    """For each door to a service: a pod of the service, and an unlabelled pod of its namespace
    (a door names the service's pods; reaching anything else there is wider than declared)."""
    out: list[Member] = []
    for d in doors:
        if d.target.network_zone is not None:
            continue
        ns = d.target.namespace or "default"
        nsl = cm.pset.namespace_labels(ns)
        shown = ",".join(f"{k}={v}" for k, v in d.target.labels)
        out.append(Member(PodClass(ns, tuple(sorted(d.target.labels)), nsl), ANY_ZONE,
                          f"the service of door {d.name} ({ns}/{{{shown}}})", ""))
        out.append(Member(PodClass(ns, (), nsl), ANY_ZONE, f"an unlabelled pod of namespace {ns}", ""))
    return out


@dataclass(frozen=True)
class ClosedDoor:
    door: str
    object: str  # the job that should get through
    group: str
    ports: tuple[str, ...]
    reason: str
    pos: Position


def closed_doors(cm: ClusterView, rules: DoorRules, members: list[Member],
                 zone_reps: dict[str, Member]) -> list[ClosedDoor]:
    """Doors the policies keep shut: a source job's group that cannot reach the door's target on
    a declared port. One finding per door and job."""
    out: list[ClosedDoor] = []
    for d in rules.doors:
        if d.target.network_zone is not None:
            target = zone_reps.get(d.target.network_zone)
        else:
            ns = d.target.namespace or "default"
            target = Member(PodClass(ns, tuple(sorted(d.target.labels)), cm.pset.namespace_labels(ns)),
                            ANY_ZONE, "", "")
        if target is None:
            continue
        done: set[str] = set()
        for m in members:
            if m.job in done or not rules._from(d, m):
                continue
            shut: list[str] = []
            reason = ""
            for proto, lo, hi in door_spans(d):
                v = cm.pset.evaluate(m.pod, target.pod, lo, proto)
                opened = {(r.protocol, r.start, r.end) for r in cm.pset.open_ranges(m.pod, target.pod, (proto,))}
                if not any(p == proto and a <= lo and hi <= b for p, a, b in opened):
                    shut.append(span_text((proto, lo, hi)))
                    reason = reason or (v.reason if not v.allowed else "only part of the range is open")
            if shut:
                done.add(m.job)
                out.append(ClosedDoor(d.name, m.object, m.group, tuple(shut), reason, d.pos))
    return out

__all__ = ["ClosedDoor", "DoorRules", "closed_doors", "target_members"]
