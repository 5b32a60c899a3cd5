"""TG302 kueue-flavor-without-topology: a ResourceFlavor of a job's ClusterQueue has no
`topologyName`.

Kueue assigns a pod set that asks for a topology only flavors with a `topologyName` whose
Topology has the requested level (`checkPodSetAndFlavorMatchForTAS`, docs/kueue.md). A flavor
without one is never used for such a job; when no flavor of the queue has one, the job is never
admitted. Reported at the ResourceFlavor, once per flavor, for queues that serve a job asking
for a topology.

Why: the queue's quota looks big enough, but the pools behind flavors without a topology are
closed to topology-aware jobs: they wait in the queue while those nodes sit idle.

Failing example: `ResourceFlavor h100` with `nodeLabels` only, listed in the ClusterQueue of a
job annotated `podset-required-topology: topology.kubernetes.io/zone`.

Passing example: the same flavor with `spec.topologyName: topogate` (what `topogate generate`
writes for every pool of a cluster with `kueue:`).
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import FLAVOR_NO_TOPOLOGY
from topogate.policies.kueue.template import concerns

NAME = "kueue-flavor-without-topology"
SEVERITY = "error"

check = concerns(FLAVOR_NO_TOPOLOGY)
