"""TG304 kueue-preferred-topology: Kueue is asked for one zone only as a preference (or for a
level wider than a zone) where nothing else keeps the job in one zone.

`kueue.x-k8s.io/podset-preferred-topology` makes Kueue try one domain of the level and, when the
pod set does not fit there, spread it over several; a required level above the zone level of
the Topology (a region, a block of zones) also spans zones. Only `podset-required-topology` at
the zone level or below holds a pod set in one zone. Reported at the annotation, and only when
the job is not held in one zone otherwise (required nodeAffinity, podAffinity).

Why: the job starts split exactly when the cluster is busy, the case it was meant to prevent,
and runs with cross-zone all-reduce and inter-AZ egress.

Failing example: `podset-preferred-topology: topology.kubernetes.io/zone` on the pod sets of a
job in a Kueue queue, with no zone affinity.

Passing example: `podset-required-topology: topology.kubernetes.io/zone` (Kueue then waits until
one zone has room for the whole group).
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import LOOSE
from topogate.policies.kueue.template import concerns

NAME = "kueue-preferred-topology"
SEVERITY = "error"

check = concerns(LOOSE)
