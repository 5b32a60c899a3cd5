"""The label keys Cilium derives for a pod's identity (pkg/k8s/apis/cilium.io const.go)."""

from __future__ import annotations

__all__ = ["CLUSTER_LABEL", "NAMESPACE_LABELS_PREFIX", "POD_NAMESPACE_LABEL", "SERVICE_ACCOUNT_LABEL"]

POD_NAMESPACE_LABEL = "io.kubernetes.pod.namespace"
NAMESPACE_LABELS_PREFIX = "io.cilium.k8s.namespace.labels."
SERVICE_ACCOUNT_LABEL = "io.cilium.k8s.policy.serviceaccount"
CLUSTER_LABEL = "io.cilium.k8s.policy.cluster"
