"""Required pod (anti-)affinity terms: which namespaces, groups and peers a term selects.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.peers import AffinityPeer, PeerIndex
from topogate.analysis.scheduling import selector_matches, with_label_keys
from topogate.core.labels import NAMESPACE_NAME_LABEL
from topogate.k8s.jobs import TrainingJob

__all__ = ["Term", "matches_peers", "peer_term_matches", "required_terms", "term_namespaces"]


@dataclass(frozen=True)
class Term:
    selector: Any  # with matchLabelKeys/mismatchLabelKeys merged
    namespaces: frozenset[str] | None  # None: every namespace
    targets: frozenset[str]  # matched groups of this job
    peers: tuple[AffinityPeer, ...]  # matched peers
    keys: frozenset[str] = frozenset()  # the topology keys of the term(s) it stands for

    @property
    def peer_zones(self) -> set[str]:
        return {z for p in self.peers for z in p.zones}


def term_namespaces(
    term: Mapping[str, Any], own: str, known: Iterable[str], ns_labels: Mapping[str, Mapping[str, str]],
) -> frozenset[str] | None:
    """The namespaces a pod (anti-)affinity term selects among ``known``; None: every one."""
    names = {str(n) for n in (term.get("namespaces") or []) if n}
    nsel = term.get("namespaceSelector")
    if nsel is None:
        return frozenset(names or {own})
    if isinstance(nsel, dict) and not nsel.get("matchLabels") and not nsel.get("matchExpressions"):
        return None  # {} selects every namespace (PodAffinityTerm API reference)
    for ns in known:
        labels = {NAMESPACE_NAME_LABEL: ns, **ns_labels.get(ns, {})}
        if selector_matches(nsel, labels):
            names.add(ns)
    return frozenset(names)


def required_terms(spec: Mapping[str, Any], which: str) -> list[dict[str, Any]]:
    """The required terms of ``affinity.<which>`` (podAffinity or podAntiAffinity) of a pod spec."""
    aff = spec.get("affinity")
    block = aff.get(which) if isinstance(aff, dict) else None
    terms = block.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(block, dict) else None
    return [t for t in terms if isinstance(t, dict)] if isinstance(terms, list) else []


def matches_peers(
    job: TrainingJob, index: PeerIndex, known: set[str], ns_labels: Mapping[str, Mapping[str, str]],
) -> bool:
    """Whether a required pod (anti-)affinity term or a spread constraint of the job, on any key,
    matches pods outside it, or a term of those pods matches the job's: only then can knowing
    the other jobs' placements change this one's (``place_all``)."""
    for g in job.groups:
        for which in ("podAffinity", "podAntiAffinity"):
            for t in required_terms(g.spec, which):
                sel = with_label_keys(t.get("labelSelector"), g.label_map, t.get("matchLabelKeys"),
                                      t.get("mismatchLabelKeys"))
                nss = term_namespaces(t, job.namespace, known | {job.namespace}, ns_labels)
                if index.match(sel, nss, exclude=job.object_id):
                    return True
        # A spread counts the matching pods of its own namespace: other workloads' too.
        for c in g.spec.get("topologySpreadConstraints") or []:
            if isinstance(c, dict) and index.match(with_label_keys(c.get("labelSelector"), g.label_map,
                                                                   c.get("matchLabelKeys")),
                                                   frozenset({job.namespace}), exclude=job.object_id):
                return True
    for q in index.with_anti():
        if q.object_id == job.object_id:
            continue
        for t in q.anti:
            nss = term_namespaces(t, q.namespace, known | {job.namespace}, ns_labels)
            sel = t.get("labelSelector")
            if (nss is None or job.namespace in nss) and isinstance(sel, dict) and any(
                    selector_matches(sel, g.label_map) for g in job.groups):
                return True
    return False


def peer_term_matches(inputs: Inputs, q: AffinityPeer, raw: Mapping[str, Any]
                      ) -> tuple[list[str], list[AffinityPeer], bool] | None:
    """What a required term of peer q matches: the job's groups, the peers outside the job (q
    itself among them when its pods match), and whether q matches it itself; None for a term
    without a selector."""
    sel = raw.get("labelSelector")
    if not isinstance(sel, dict):
        return None
    nss = term_namespaces(raw, q.namespace, inputs.known_namespaces, inputs.namespace_labels)
    groups = [h for h in inputs.names if (nss is None or inputs.job.namespace in nss)
              and selector_matches(sel, inputs.groups[h].label_map)]
    itself = (nss is None or q.namespace in nss) and selector_matches(sel, dict(q.labels))
    return groups, inputs.peers.match(sel, nss, exclude=inputs.job.object_id), itself
