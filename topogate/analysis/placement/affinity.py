"""Steps that resolve a job's required pod (anti-)affinity into terms over its groups and peers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from topogate.analysis.placement.terms import Term, required_terms, term_namespaces
from topogate.analysis.scheduling import HOSTNAME_LABEL, selector_matches, with_label_keys
from topogate.k8s.jobs import JobGroup

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan


def resolve_term(p: _Plan, g: JobGroup, raw: Mapping[str, Any]) -> Term:
    """One required term of group `g`: its selector, namespaces, matched groups and peers."""
    job = p.job
    labels = g.label_map
    sel = with_label_keys(raw.get("labelSelector"), labels, raw.get("matchLabelKeys"), raw.get("mismatchLabelKeys"))
    nss = term_namespaces(raw, job.namespace, p.known_ns, p.ns_labels)
    in_scope = nss is None or job.namespace in nss
    targets = frozenset(
        h.name for h in p.live if in_scope and isinstance(sel, dict) and selector_matches(sel, h.label_map)
    )
    return Term(sel, nss, targets, tuple(p.peers.match(sel, nss, exclude=job.object_id)))


def resolve_affinity(p: _Plan) -> None:
    """Required podAffinity: the scheduler counts, per topology domain, the existing pods that match
    ALL of the pod's required affinity terms, and needs one in the node's domain of every term's
    key (kube-scheduler InterPodAffinity plugin, satisfyPodAffinity). So the terms act as one
    effective term whose targets match every term. A term on the zone key, or on the hostname
    (same node, hence same zone), ties zones; terms on other keys only need the targets to exist."""
    for g in p.live:
        raw = required_terms(g.spec, "podAffinity")
        eff: Term | None = None
        if raw:
            resolved = [resolve_term(p, g, t) for t in raw]
            targets = frozenset.intersection(*(r.targets for r in resolved))
            peer_keys = set.intersection(*({(q.object_id, q.group) for q in r.peers} for r in resolved))
            eff = Term(None, None, targets,
                        tuple(q for q in resolved[0].peers if (q.object_id, q.group) in peer_keys))
            _require_topology_keys(p, g, raw)
        p.need[g.name] = eff
        tied = any(t.get("topologyKey") in (p.zone_key, HOSTNAME_LABEL) for t in raw)
        p.aff[g.name] = [eff] if eff is not None and tied else []


def _require_topology_keys(p: _Plan, g: JobGroup, raw: list[dict[str, Any]]) -> None:
    """"All topology labels must exist on the node": a pool without a term's key is out."""
    keys = {str(t.get("topologyKey", "")) for t in raw} - {HOSTNAME_LABEL}
    keyed = {f.zone for f in p.fits[g.name] if f.fits and all(k in f.node.label_map for k in keys)}
    if p.node_zones[g.name] and not keyed:
        p.missing_key[g.name] = (f"{g.name}: no pool it fits carries the podAffinity topologyKey "
                                 f"{', '.join(sorted(keys))}: it stays Pending")
    p.node_zones[g.name] = keyed


def resolve_anti_affinity(p: _Plan) -> None:
    """Required podAntiAffinity on the zone key. It is symmetric for placement: the scheduler
    honours the incoming pod's terms and those of running pods alike."""
    for g in p.live:
        p.anti[g.name] = [resolve_term(p, g, t) for t in required_terms(g.spec, "podAntiAffinity")
                          if t.get("topologyKey") == p.zone_key]
    p.repels = {n: set() for n in p.names}
    p.peer_repel = {n: set() for n in p.names}
    for n in p.names:
        for t in p.anti[n]:
            for h in t.targets:
                p.repels[n].add(h)
                p.repels[h].add(n)
            for q in t.peers:
                if len(q.zones) == 1:
                    p.peer_repel[n] |= set(q.zones)
    p.anti_pairs = frozenset((a, b) for a in p.names for b in sorted(p.repels[a]) if a != b)
    p.self_anti = {n for n in p.names if n in p.repels[n]}
