"""Step 2 of the package docstring: a job's required pod (anti-)affinity resolved into terms over
its groups and the known peers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.terms import Term, required_terms, term_namespaces
from topogate.analysis.scheduling import HOSTNAME_LABEL, selector_matches, with_label_keys
from topogate.k8s.jobs import JobGroup

__all__ = ["Affinity", "resolve_affinity"]


@dataclass(frozen=True)
class Affinity:
    # Per group with pods: the one term its required podAffinity terms act as, whatever their
    # keys (None: it has none). Only pods matching it let the group start.
    required: Mapping[str, Term | None]
    # Per group: that term when it ties zones (a term on the zone key or the hostname), else ().
    zone_ties: Mapping[str, tuple[Term, ...]]
    # Per group: the groups it never shares a zone with (podAntiAffinity on the zone key, either way).
    repels: Mapping[str, frozenset[str]]
    repelled_peer_zones: Mapping[str, frozenset[str]]  # per group: zones of one-zone peers it repels
    apart: frozenset[tuple[str, str]]  # (a, b), a != b, both ways: groups that never share a zone
    self_repelling: frozenset[str]  # groups whose own pods repel each other on the zone key
    # Groups whose own pods repel each other on the hostname key: one pod per node.
    one_per_node: frozenset[str] = frozenset()
    # Groups whose required podAffinity on the hostname key matches only their own pods: every
    # pod joins the first one's node.
    one_node: frozenset[str] = frozenset()


def resolve_affinity(inputs: Inputs) -> Affinity:
    required, zone_ties = _pod_affinity(inputs)
    repels, peer_zones = _pod_anti_affinity(inputs)
    names = inputs.names
    return Affinity(
        required=required,
        zone_ties=zone_ties,
        repels={n: frozenset(r) for n, r in repels.items()},
        repelled_peer_zones={n: frozenset(z) for n, z in peer_zones.items()},
        apart=frozenset((a, b) for a in names for b in sorted(repels[a]) if a != b),
        self_repelling=frozenset(n for n in names if n in repels[n]),
        one_per_node=_one_per_node(inputs),
        one_node=_one_node(inputs, required),
    )


def _one_node(inputs: Inputs, required: Mapping[str, Term | None]) -> frozenset[str]:
    """Groups whose required podAffinity has a hostname term and matches only their own pods."""
    out = set()
    for n in inputs.names:
        e = required[n]
        if e is not None and e.targets == {n} and not e.peers and any(
                t.get("topologyKey") == HOSTNAME_LABEL for t in required_terms(inputs.groups[n].spec, "podAffinity")):
            out.add(n)
    return frozenset(out)


def _one_per_node(inputs: Inputs) -> frozenset[str]:
    """Groups with a required podAntiAffinity term on the hostname key that matches their own pods:
    the scheduler rejects a node that already runs one of them (InterPodAffinity Filter)."""
    return frozenset(
        g.name for g in inputs.with_pods
        if any(g.name in _resolve_term(inputs, g, t).targets for t in required_terms(g.spec, "podAntiAffinity")
               if t.get("topologyKey") == HOSTNAME_LABEL))


def _resolve_term(inputs: Inputs, g: JobGroup, raw: Mapping[str, Any]) -> Term:
    """One required term of group `g`: its selector, namespaces, matched groups and peers."""
    job = inputs.job
    sel = with_label_keys(raw.get("labelSelector"), g.label_map, raw.get("matchLabelKeys"),
                          raw.get("mismatchLabelKeys"))
    nss = term_namespaces(raw, job.namespace, inputs.known_namespaces, inputs.namespace_labels)
    in_scope = nss is None or job.namespace in nss
    targets = frozenset(
        h.name for h in inputs.with_pods if in_scope and isinstance(sel, dict) and selector_matches(sel, h.label_map)
    )
    return Term(sel, nss, targets, tuple(inputs.peers.match(sel, nss, exclude=job.object_id)))


def _pod_affinity(inputs: Inputs) -> tuple[dict[str, Term | None], dict[str, tuple[Term, ...]]]:
    """Required podAffinity: the scheduler counts, per topology domain, the existing pods that match
    ALL of the pod's required affinity terms, and needs one in the node's domain of every term's
    key (kube-scheduler InterPodAffinity plugin, satisfyPodAffinity). So the terms act as one
    effective term whose targets match every term. A term on the zone key, or on the hostname
    (same node, hence same zone), ties zones; terms on other keys only need the targets to exist."""
    required: dict[str, Term | None] = {}
    zone_ties: dict[str, tuple[Term, ...]] = {}
    for g in inputs.with_pods:
        raw = required_terms(g.spec, "podAffinity")
        eff: Term | None = None
        if raw:
            resolved = [_resolve_term(inputs, g, t) for t in raw]
            targets = frozenset.intersection(*(r.targets for r in resolved))
            peer_keys = set.intersection(*({(q.object_id, q.group) for q in r.peers} for r in resolved))
            eff = Term(None, None, targets,
                       tuple(q for q in resolved[0].peers if (q.object_id, q.group) in peer_keys))
        required[g.name] = eff
        tied = any(t.get("topologyKey") in (inputs.zone_key, HOSTNAME_LABEL) for t in raw)
        zone_ties[g.name] = (eff,) if eff is not None and tied else ()
    return required, zone_ties


def _pod_anti_affinity(inputs: Inputs) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """Required podAntiAffinity on the zone key. It is symmetric for placement: the scheduler
    honours the incoming pod's terms and those of running pods alike. Returns, per group, the
    groups it repels either way and the zones of the one-zone peers it repels."""
    anti = {g.name: [_resolve_term(inputs, g, t) for t in required_terms(g.spec, "podAntiAffinity")
                     if t.get("topologyKey") == inputs.zone_key]
            for g in inputs.with_pods}
    repels: dict[str, set[str]] = {n: set() for n in inputs.names}
    peer_zones: dict[str, set[str]] = {n: set() for n in inputs.names}
    for n in inputs.names:
        for t in anti[n]:
            for h in t.targets:
                repels[n].add(h)
                repels[h].add(n)
            for q in t.peers:
                if len(q.zones) == 1:
                    peer_zones[n] |= set(q.zones)
    return repels, peer_zones
