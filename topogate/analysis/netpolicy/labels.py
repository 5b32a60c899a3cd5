"""The labels Cilium gives a pod's identity, and the namespace labels they are built from.

A Cilium selector sees more than a pod's own labels: ``io.kubernetes.pod.namespace``,
``io.cilium.k8s.namespace.labels.<key>`` for each label of the pod's Namespace
(``kubernetes.io/metadata.name`` always implied), ``io.cilium.k8s.policy.serviceaccount`` when
known and ``io.cilium.k8s.policy.cluster`` (docs security/policy/kubernetes). A NetworkPolicy
``namespaceSelector`` sees the Namespace's labels. Both views are computed once per pod class:
every matcher of every rule asks them again for every flow.
"""

from __future__ import annotations

from collections.abc import Mapping

from topogate.analysis.netpolicy.model import PodClass
from topogate.core.labels import NAMESPACE_NAME_LABEL

__all__ = [
    "CLUSTER_LABEL",
    "NAMESPACE_LABELS_PREFIX",
    "POD_NAMESPACE_LABEL",
    "SERVICE_ACCOUNT_LABEL",
    "IdentityLabels",
]

POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
NAMESPACE_LABELS_PREFIX = "io.cilium.k8s.namespace.labels."
SERVICE_ACCOUNT_LABEL = "io.cilium.k8s.policy.serviceaccount"
CLUSTER_LABEL = "io.cilium.k8s.policy.cluster"


class IdentityLabels:
    """The label views of pods in one cluster: what the peer matchers and subject selectors
    match against. Namespace labels come from the Namespace objects read and from the pod class
    itself (``PodClass.namespace_labels``)."""

    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]] | None, cluster_name: str) -> None:
        self.cluster_name = cluster_name
        self._learned: dict[str, dict[str, str]] = {k: dict(v) for k, v in (namespace_labels or {}).items()}
        self._pod_cache: dict[PodClass, dict[str, str]] = {}
        self._ns_cache: dict[PodClass, dict[str, str]] = {}

    def namespace_labels(self, ns: str) -> tuple[tuple[str, str], ...]:
        """The labels of namespace ``ns`` as read from its Namespace object, sorted."""
        labels = dict(self._learned.get(ns, {}))
        labels[NAMESPACE_NAME_LABEL] = ns
        return tuple(sorted(labels.items()))

    def ns_labels(self, pod: PodClass) -> dict[str, str]:
        """The labels of the pod's namespace (what a NetworkPolicy namespaceSelector sees)."""
        got = self._ns_cache.get(pod)
        if got is None:
            got = dict(self._learned.get(pod.namespace, {}))
            got.update(dict(pod.namespace_labels))
            got[NAMESPACE_NAME_LABEL] = pod.namespace
            self._ns_cache[pod] = got
        return got

    def pod_labels(self, pod: PodClass) -> dict[str, str]:
        """The labels Cilium gives the pod's identity (source prefixes stripped)."""
        got = self._pod_cache.get(pod)
        if got is None:
            got = dict(pod.labels)
            got[POD_NAMESPACE_LABEL] = pod.namespace
            for k, v in self.ns_labels(pod).items():
                got[NAMESPACE_LABELS_PREFIX + k] = v
            if pod.service_account is not None:
                got[SERVICE_ACCOUNT_LABEL] = pod.service_account
            got[CLUSTER_LABEL] = self.cluster_name
            self._pod_cache[pod] = got
        return got
