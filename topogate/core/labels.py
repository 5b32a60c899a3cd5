"""The label contract: the labels topogate's overlays stamp on pods and its policies select on.

Generators write them, the analysis reads them, the admission policy requires them: one home, so
the three cannot disagree.
"""

from __future__ import annotations

DEFAULT_ZONE_LABEL = "topology.kubernetes.io/zone"
NETWORK_ZONE_LABEL = "topogate.dev/network-zone"
WORKLOAD_LABEL = "topogate.dev/workload"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
# Stamped by the overlays on every pod with its replica group (Master, Worker, ...): the
# operators' own labels for it differ between versions, so the rendezvous rules select on ours.
REPLICA_GROUP_LABEL = "topogate.dev/replica-group"
# Set by users on plain Deployments/Jobs/StatefulSets that together form one training job.
JOB_GROUP_LABEL = "topogate.dev/group"
# Kubernetes' well-known node labels the kubelet sets: one node per hostname value (the finest
# topology level), the region above the zones, the OS and CPU architecture images are built for.
HOSTNAME_LABEL = "kubernetes.io/hostname"
REGION_LABEL = "topology.kubernetes.io/region"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"
# Set by the API server on every Namespace (its name), so implied even where no Namespace is read.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
# On the Argo CD Applications and Flux objects generate writes: the cluster they apply to.
CLUSTER_LABEL = "topogate.dev/cluster"

# Label sets (and other string mappings) as sorted tuples of pairs: immutable and hashable.
Pairs = tuple[tuple[str, str], ...]

__all__ = ["ARCH_LABEL", "OS_LABEL", "REGION_LABEL", "CLUSTER_LABEL", "DEFAULT_ZONE_LABEL", "HOSTNAME_LABEL", "JOB_GROUP_LABEL", "MANAGED_BY_LABEL", "NAMESPACE_NAME_LABEL", "NETWORK_ZONE_LABEL", "Pairs",
           "REPLICA_GROUP_LABEL", "WORKLOAD_LABEL"]
