"""Pods as the network-policy evaluator sees them: the pod class of a pod identity
(topogate.k8s.pods, the one extractor) with its namespace's labels from the policies' view."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from topogate.analysis.netpolicy import PodClass, PolicySet
from topogate.k8s.objects import K8sObject
from topogate.k8s.pods import PlainTemplate, PodIdentity, plain_template, pod_identity


def class_of(identity: PodIdentity, pset: PolicySet) -> PodClass:
    """The pod class of pods with this identity, in the cluster `pset` describes."""
    return PodClass(identity.namespace, identity.labels, pset.namespace_labels(identity.namespace),
                    identity.named_ports, identity.service_account)


def pod_class(ns: str, labels: Iterable[tuple[str, str]] | Mapping[str, Any], spec: Mapping[str, Any],
              pset: PolicySet) -> PodClass:
    return class_of(pod_identity(ns, labels, spec), pset)


def pod_template(o: K8sObject) -> PlainTemplate | None:
    """The pod template of a workload that is not a training job, or None."""
    return plain_template(o.kind, o.name, o.obj)


__all__ = ["class_of", "pod_class", "pod_template"]
