"""Kueue's API vocabulary (kueue.x-k8s.io): the API group and version topogate writes, and the
labels and annotations Kueue reads on jobs and pod templates.

The analysis reads them and the generators write them; both layers ask here, so a job topogate
writes is read back by the same names.
"""

from __future__ import annotations

GROUP = "kueue.x-k8s.io"
API_VERSION = f"{GROUP}/v1beta2"
# On a job: the LocalQueue that admits it.
QUEUE_LABEL = f"{GROUP}/queue-name"
# On a pod template: Topology-Aware Scheduling's request for a topology level.
REQUIRED_TOPOLOGY = f"{GROUP}/podset-required-topology"
PREFERRED_TOPOLOGY = f"{GROUP}/podset-preferred-topology"
UNCONSTRAINED_TOPOLOGY = f"{GROUP}/podset-unconstrained-topology"
# On two pod templates: one PodSet group placed together.
GROUP_NAME = f"{GROUP}/podset-group-name"
TOPOLOGY_ANNOTATIONS = (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, UNCONSTRAINED_TOPOLOGY, GROUP_NAME)

__all__ = ["API_VERSION", "GROUP", "GROUP_NAME", "PREFERRED_TOPOLOGY", "QUEUE_LABEL", "REQUIRED_TOPOLOGY",
           "TOPOLOGY_ANNOTATIONS"]
