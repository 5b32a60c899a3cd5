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
# On the Argo CD Applications and Flux objects generate writes: the cluster they apply to.
CLUSTER_LABEL = "topogate.dev/cluster"

# Label sets (and other string mappings) as sorted tuples of pairs: immutable and hashable.
Pairs = tuple[tuple[str, str], ...]

__all__ = ["CLUSTER_LABEL", "DEFAULT_ZONE_LABEL", "JOB_GROUP_LABEL", "MANAGED_BY_LABEL", "NETWORK_ZONE_LABEL", "Pairs",
           "REPLICA_GROUP_LABEL", "WORKLOAD_LABEL"]
