"""Which units (subject selectors) of one namespace select a pod class, without asking every
unit of the namespace: a fleet namespace holds one policy per job, and asking each of them
about each job's pods made the check quadratic in jobs.

Each unit is indexed under an anchor of its subject selector: one ``In`` requirement on a pod
label that every pod it selects must carry (``topogate.dev/workload: job-7``). A pod class then
asks only the units without an anchor and those whose anchor pair it carries;
``PolicyUnit.selects`` still decides, so the index only skips units that could not select the pod.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from topogate.analysis.netpolicy.labels import (
    CLUSTER_LABEL,
    NAMESPACE_LABELS_PREFIX,
    POD_NAMESPACE_LABEL,
    SERVICE_ACCOUNT_LABEL,
    IdentityLabels,
)
from topogate.analysis.netpolicy.model import PodClass
from topogate.analysis.netpolicy.rules import PolicyUnit, policy_sort_key
from topogate.analysis.netpolicy.selectors import Requirement

__all__ = ["NamespaceScope"]

_Pair = tuple[str, str]


def _broad(key: str) -> bool:
    """Labels every pod of a namespace (or of the cluster) carries alike: poor anchors."""
    return (key in (POD_NAMESPACE_LABEL, CLUSTER_LABEL, SERVICE_ACCOUNT_LABEL)
            or key.startswith(NAMESPACE_LABELS_PREFIX))


def _anchors(unit: PolicyUnit) -> list[Requirement]:
    """The requirements a pod's labels must satisfy by carrying one of a few (key, value) pairs."""
    if unit.subject is None:
        return []
    return [r for r in unit.subject.reqs if r.op == "In" and r.pod_source]


class NamespaceScope:
    """The candidate units of one namespace (clusterwide first, as the evaluator lists them),
    in the order `SelectionIndex.units_for` returns them: by policy (`policy_sort_key`), ties in
    candidate order."""

    def __init__(self, cands: Sequence[PolicyUnit]) -> None:
        # A stable sort of the whole list, once: sorting any subset of it (in candidate order) by
        # the same key gives that subset in this order, so a rank stands in for the key.
        self.order: list[PolicyUnit] = sorted(cands, key=lambda u: policy_sort_key(u.policy))
        self.free: list[int] = []  # units without an anchor: asked about every pod
        self.by_pair: dict[_Pair, list[int]] = {}
        counts: Counter[_Pair] = Counter(
            (r.key, v) for u in self.order for r in _anchors(u) for v in r.values)
        for i, u in enumerate(self.order):
            if u.subject is None:
                continue  # selects no pod (host policies): never a candidate
            reqs = _anchors(u)
            if not reqs:
                self.free.append(i)
                continue
            # The most selective anchor: a key other than the namespace/cluster labels, then the
            # fewest units sharing its pairs (a job's own label rather than its network zone).
            best = min(reqs, key=lambda r: (_broad(r.key), sum(counts[(r.key, v)] for v in r.values)))
            for v in best.values:  # no value at all: the unit selects no pod, never a candidate
                self.by_pair.setdefault((best.key, v), []).append(i)

    def selecting(self, pod: PodClass, ctx: IdentityLabels) -> tuple[PolicyUnit, ...]:
        """The units that select the pod, in order."""
        # A unit matches either the pod's own labels (NetworkPolicy podSelector) or the labels
        # Cilium gives it (namespace, cluster, ... added); ask with both, `selects` decides.
        pairs = set(dict(pod.labels).items())
        pairs.update(ctx.pod_labels(pod).items())
        picked = set(self.free)
        for pair in pairs:
            hit = self.by_pair.get(pair)
            if hit:
                picked.update(hit)
        return tuple(u for u in (self.order[i] for i in sorted(picked)) if u.selects(pod, ctx))
