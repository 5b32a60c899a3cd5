"""TG303 kueue-unknown-level: a pod set asks Kueue for a topology level its queue's Topology
does not have.

The value of `kueue.x-k8s.io/podset-required-topology` (or `-preferred-topology`) must be one of
the `nodeLabel`s in `spec.levels` of the Topology that the queue's flavors name. Kueue skips
every flavor whose Topology lacks the level, so the pod set gets no flavor and the job waits in
the queue forever. Reported at the annotation.

Why: a typo (`topology.kubernetes.io/zones`) or the cluster's own zone label differing from the
well-known one leaves a job Pending with no error on the job itself.

Failing example: `podset-required-topology: topology.kubernetes.io/region` with a Topology whose
levels are `topology.kubernetes.io/zone`, `kubernetes.io/hostname`.

Passing example: `podset-required-topology: topology.kubernetes.io/zone`.
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import UNKNOWN_LEVEL
from topogate.policies.kueue.template import concerns

NAME = "kueue-unknown-level"
SEVERITY = "error"

check = concerns(UNKNOWN_LEVEL)
