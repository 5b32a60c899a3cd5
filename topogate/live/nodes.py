"""Nodes as the inventory sees them: zone, pool, taints, the labels that select them, GPUs.

Pools come from the node-group label each provider stamps on its nodes (EKS managed node
groups, Karpenter NodePools, GKE node pools, AKS agent pools) or from `--pool-label KEY`. Nodes
without one are grouped by identical labels and taints: nodes a scheduler cannot tell apart
form one pool.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.core.labels import ARCH_LABEL, DEFAULT_ZONE_LABEL, HOSTNAME_LABEL, OS_LABEL, REGION_LABEL
from topogate.inventory.model import Taint
from topogate.k8s.quantity import GPU_RESOURCES, count

# First match wins: a Karpenter node on EKS carries only the Karpenter label, a managed node
# group node only the EKS one; AKS stamps both of its labels with the same value.
POOL_LABELS = (
    "eks.amazonaws.com/nodegroup",
    "karpenter.sh/nodepool",
    "cloud.google.com/gke-nodepool",
    "kubernetes.azure.com/agentpool",
    "agentpool",
)

# Labels the platform sets per node or per instance: not what a person selects a pool by, and
# many vary from node to node. Domains match themselves and their subdomains.
_SYSTEM_DOMAINS = (
    "kubernetes.io", "k8s.io", "amazonaws.com", "k8s.aws", "karpenter.sh", "google.com", "gke.io",
    "azure.com", "nvidia.com", "amd.com", "cilium.io",
)
# Taints that are state, not configuration: a cordoned, not-ready or draining node.
_STATE_TAINTS = ("node.kubernetes.io/", "node.cloudprovider.kubernetes.io/", "karpenter.sh/disrupted",
                 "ToBeDeletedByClusterAutoscaler", "DeletionCandidateOfClusterAutoscaler")
_DNS_LABEL_BAD = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True)
class LiveNode:
    name: str
    zone: str  # "" when the node has no zone label
    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    gpus: int
    pool_label: str | None  # the label that names its pool
    pool: str | None  # that label's value

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    def selecting_labels(self) -> dict[str, str]:
        return {k: v for k, v in self.labels if is_selecting(k) or k == self.pool_label}


def is_selecting(key: str) -> bool:
    """A label a person selects a pool by (not one the platform sets per node)."""
    domain = key.split("/", 1)[0] if "/" in key else ""
    return not any(domain == d or domain.endswith("." + d) for d in _SYSTEM_DOMAINS)


def is_state_taint(key: str) -> bool:
    return any(key.startswith(p) if p.endswith("/") else key == p for p in _STATE_TAINTS)


def parse_node(obj: dict[str, Any], zone_label: str, pool_label: str | None = None) -> LiveNode:
    md = obj.get("metadata") or {}
    labels = {str(k): str(v) for k, v in (md.get("labels") or {}).items()}
    taints = tuple(sorted(
        (Taint(str(t.get("key", "")), str(t.get("effect", "")), str(t.get("value") or ""))
         for t in (obj.get("spec") or {}).get("taints") or []
         if isinstance(t, dict) and not is_state_taint(str(t.get("key", "")))),
        key=lambda t: (t.key, t.value, t.effect)))
    alloc = (obj.get("status") or {}).get("allocatable") or {}
    gpus = sum(count(alloc.get(r)) for r in GPU_RESOURCES)
    keys = (pool_label,) if pool_label else POOL_LABELS
    found = next((k for k in keys if labels.get(k)), None)
    return LiveNode(str(md.get("name", "")), labels.get(zone_label, ""), tuple(sorted(labels.items())),
                    taints, gpus, found, labels[found] if found else None)


def parse_nodes(objs: Iterable[dict[str, Any]], zone_label: str,
                pool_label: str | None = None) -> tuple[LiveNode, ...]:
    return tuple(sorted((parse_node(o, zone_label, pool_label) for o in objs), key=lambda n: n.name))


def dns_label(value: str, fallback: str = "pool") -> str:
    """A pool or zone name the inventory accepts (DNS-1123 label) made from a label value."""
    s = _DNS_LABEL_BAD.sub("-", value.lower()).strip("-")[:63].strip("-")
    return s or fallback


@dataclass(frozen=True)
class PoolGroup:
    """The nodes of one pool in one zone, as import writes it and drift compares it."""

    name: str
    zone: str
    nodes: tuple[LiveNode, ...]
    labels: tuple[tuple[str, str], ...]  # the labels every node of the pool shares (pool_labels)
    unlabelled: bool = False  # grouped by labels and taints, no pool label
    dropped: tuple[tuple[str, str], ...] = ()  # labels its nodes carry that it leaves out, and why

    @property
    def taint_sets(self) -> tuple[tuple[Taint, ...], ...]:
        return tuple(sorted({n.taints for n in self.nodes}, key=str))

    @property
    def gpu_counts(self) -> tuple[int, ...]:
        return tuple(sorted({n.gpus for n in self.nodes}))


# Labels a pool's nodes may share that the inventory does not keep, and why (`pool_labels`).
# The inventory says these elsewhere: the zone is the zone, the region the cluster's; and
# linux/amd64 are what the analysis assumes of every node (scheduling/nodes.py), so only other
# values are kept.
_STATED = {REGION_LABEL: "the cluster's region",
           "topology.k8s.aws/zone-id": "name the zone", "topology.gke.io/zone": "name the zone"}
_DEFAULTS = {OS_LABEL: "linux", ARCH_LABEL: "amd64"}
# Deprecated twins the kubelet and cloud providers still set beside their GA label (same value).
_TWINS = {"beta.kubernetes.io/arch": ARCH_LABEL, "beta.kubernetes.io/os": OS_LABEL,
          "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
          "failure-domain.beta.kubernetes.io/region": REGION_LABEL,
          "failure-domain.beta.kubernetes.io/zone": DEFAULT_ZONE_LABEL}
# Values that change whenever the pool's nodes are replaced or upgraded (an image, a launch
# template version, a driver, the node's lifecycle) and that no job selects a pool by: kept,
# they would make drift report every upgrade.
_VOLATILE = ("eks.amazonaws.com/nodegroup-image", "eks.amazonaws.com/sourceLaunchTemplateId",
             "eks.amazonaws.com/sourceLaunchTemplateVersion", "k8s.io/cloud-provider-aws",
             "karpenter.sh/initialized", "karpenter.sh/registered", "kubernetes.azure.com/node-image-version",
             "kubernetes.azure.com/cluster", "nvidia.com/gfd.timestamp", "nvidia.com/cuda.driver.",
             "nvidia.com/cuda.driver-version.", "nvidia.com/cuda.runtime.", "nvidia.com/cuda.runtime-version.")
VARYING = "differ between its nodes"


def pool_labels(members: Sequence[LiveNode], zone_label: str) -> tuple[tuple[tuple[str, str], ...], dict[str, str]]:
    """The labels every node of a pool carries with one value, as the inventory keeps them, and
    the labels left out with why (label -> reason). GPU Feature Discovery's `nvidia.com/gpu.product`,
    an instance type, a capacity type are kept: a job may select its pool by any of them."""
    if not members:
        return (), {}
    maps = [n.label_map for n in members]
    dropped: dict[str, str] = {}
    kept: list[tuple[str, str]] = []
    for key in sorted(set().union(*maps)):
        values = {m.get(key) for m in maps}
        if key == zone_label:
            continue  # the zone: written as the pool's zone
        if key == HOSTNAME_LABEL:
            dropped[key] = "one per node"
        elif key in _TWINS:
            dropped[key] = "deprecated twins of their GA labels"
        elif key in _STATED:
            dropped[key] = _STATED[key]
        elif len(values) > 1:
            dropped[key] = VARYING
        elif _DEFAULTS.get(key) in values:
            dropped[key] = "linux and amd64, which topogate assumes of every node"
        elif any(key == v or (v.endswith(".") and key.startswith(v)) for v in _VOLATILE):
            dropped[key] = "change with every upgrade"
        else:
            kept.append((key, next(iter(values)) or ""))
    return tuple(kept), dropped


def group_pools(nodes: Sequence[LiveNode], zone_label: str) -> tuple[PoolGroup, ...]:
    """Pools per zone: by pool label, else by identical selecting labels and taints.

    A pool's labels are those every node of it shares over all its zones (`pool_labels`), so
    the same EKS node group in three zones is written with the same labels three times.
    """
    by_pool: dict[str, list[LiveNode]] = {}
    for n in nodes:
        if n.pool is not None:
            by_pool.setdefault(n.pool, []).append(n)
    out: list[PoolGroup] = []
    for pool, members in sorted(by_pool.items()):
        labels, dropped = pool_labels(members, zone_label)
        for zone in sorted({n.zone for n in members}):
            out.append(PoolGroup(dns_label(pool), zone, tuple(n for n in members if n.zone == zone),
                                 labels, dropped=tuple(sorted(dropped.items()))))
    bare: dict[tuple[Any, ...], list[LiveNode]] = {}
    for n in nodes:
        if n.pool is None:
            key = (tuple(sorted(n.selecting_labels().items())), n.taints, n.gpus)
            bare.setdefault(key, []).append(n)
    taken = {g.name for g in out}
    for i, (key, members) in enumerate(sorted(bare.items(), key=lambda kv: str(kv[0])), start=1):
        name = _bare_name(dict(key[0]), i, taken)
        taken.add(name)
        labels, dropped = pool_labels(members, zone_label)
        for zone in sorted({n.zone for n in members}):
            out.append(PoolGroup(name, zone, tuple(n for n in members if n.zone == zone), labels,
                                 unlabelled=True, dropped=tuple(sorted(dropped.items()))))
    return tuple(out)


def _bare_name(labels: dict[str, str], i: int, taken: set[str]) -> str:
    """A readable name for nodes without a pool label: the first user label's value, else a number."""
    for k in sorted(labels):
        candidate = dns_label(labels[k], "")
        if candidate and candidate not in taken:
            return candidate
    candidate = f"ungrouped-{i}"
    while candidate in taken:
        i += 1
        candidate = f"ungrouped-{i}"
    return candidate
