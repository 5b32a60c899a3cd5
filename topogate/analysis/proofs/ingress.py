"""Who else may reach a job's pods: ingress from pods outside the job that the inventory did not
declare (its metrics scrapers and its doors are declared; nothing else is).

The generated job policy allows ingress from the job's own pods only (plus the scrapers and
doors the inventory declares), so any other opening comes from a policy written beside it: an
`endpointSelector: {}` CNP with `fromEntities: [cluster]` in the job's namespace, a namespace-wide
NetworkPolicy, a clusterwide allow. The question is asked, per replica group, of a few pods that
stand for everyone outside the job (linear in jobs): an unlabelled pod of a namespace nothing
manages, an unlabelled pod of the job's own namespace, a pod of every network zone that carries
only topogate's label, an unlabelled pod of the scrapers' namespace, and the pods of other jobs
that one of the group's own ingress rules names by label (a label-index lookup).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from topogate.analysis.netpolicy import PodClass, RuleRef
from topogate.analysis.proofs import ClusterView
from topogate.analysis.proofs.boundary import beyond, network_zone_of, subtract, unmanaged_pod, zone_rep
from topogate.analysis.proofs.members import ANY_ZONE, Member, Span, span_text
from topogate.analysis.result import JobMap
from topogate.core.position import Position
from topogate.inventory.model import Cluster, Workload


@dataclass(frozen=True)
class OpenIngress:
    object: str
    groups: tuple[str, ...]
    sources: tuple[str, ...]  # who gets in
    ranges: tuple[str, ...]
    widest_rule: str  # the opening rule that opens the most ports, with its file:line
    pos: Position


def _order(s: Span) -> tuple[int, int, int]:
    return (("TCP", "UDP", "SCTP").index(s[0]) if s[0] in ("TCP", "UDP", "SCTP") else 9, s[1], s[2])


def _width(spans: list[Span]) -> int:
    return sum(hi - lo + 1 for _, lo, hi in spans)


def open_ingress(cm: ClusterView, cluster: Cluster, jm: JobMap, classes: dict[str, PodClass],
                 workload: Workload | None,
                 doors: Callable[[Member, Member], list[Span]],
                 named: Callable[[PodClass, str], list[Member]] | None = None,
                 described: Callable[[PodClass, str], list[Member]] | None = None) -> OpenIngress | None:
    """The ports on which pods outside the job reach its pods, beyond what is declared."""
    ns = jm.namespace
    nz = network_zone_of(cluster, jm) or ANY_ZONE
    probes = [Member(unmanaged_pod(cm), ANY_ZONE, "an unlabelled pod of an unmanaged namespace", ""),
              Member(PodClass(ns, (), cm.pset.namespace_labels(ns)), ANY_ZONE,
                     f"an unlabelled pod of namespace {ns}", "")]
    probes += [Member(zone_rep(cm, n.name, ns), n.name,
                      f"a pod of network zone {n.name} in namespace {ns}", "")
               for n in sorted(cluster.network_zones, key=lambda n: n.name)]
    scrape_ns = workload.metrics.namespace if workload and workload.metrics else None
    if scrape_ns and scrape_ns != ns:
        probes.append(Member(PodClass(scrape_ns, (), cm.pset.namespace_labels(scrape_ns)), ANY_ZONE,
                             f"an unlabelled pod of namespace {scrape_ns}", ""))
    by_rule: dict[RuleRef, list[Span]] = {}
    groups: list[str] = []
    sources: list[str] = []
    spans: list[Span] = []
    for g in jm.groups:
        if g.host_network:
            continue  # no policy applies to its ingress, so no rule opens it: TG107 and TG110 speak
        dst = Member(classes[g.name], nz, jm.object, g.name, jm.kind, jm.pos, jm.object)
        # the probes, the other jobs' pods its rules name, and every pod (or outside endpoint)
        # its ingress rules describe: what the quantifier ranges over
        asked: set[object] = set()
        for src in [*probes, *(named(dst.pod, jm.object) if named else []),
                    *(described(dst.pod, jm.object) if described else [])]:
            if src.peer in asked:
                continue  # the same pods asked already (a witness that is a probe): same answer
            asked.add(src.peer)
            allowed = list(doors(src, dst))  # declared doors and metrics scraping
            if not beyond(cm.pset.open_spans(src.peer, dst.pod), allowed):
                continue  # open on declared doors only: no rule to look for
            for span, r in subtract(cm.pset.open_ranges(src.peer, dst.pod), allowed):
                rule = r.verdict.ingress.decided_by if r.verdict.ingress.enforced else None
                if rule is None:
                    continue  # nothing guards this group's ingress: TG107 and TG110 say so
                by_rule.setdefault(rule, []).append(span)
                groups.append(g.name)
                sources.append(src.object)
                spans.append(span)
    if not by_rule:
        return None
    widest = max(sorted(by_rule, key=str), key=lambda r: _width(by_rule[r]))
    return OpenIngress(jm.object, tuple(dict.fromkeys(groups)), tuple(dict.fromkeys(sources)),
                       tuple(dict.fromkeys(span_text(s) for s in sorted(set(spans), key=_order))),
                       str(widest), cm.locate_rule(widest))

__all__ = ["OpenIngress", "open_ingress"]
