"""TG305 kueue-podset-left-out: a pod set of a Kueue job is not fitted together with the others.

Kueue fits each pod set into a domain on its own unless the pod sets share a
`kueue.x-k8s.io/podset-group-name`; a group is exactly two pod sets, one of them a single pod
(docs/kueue.md). A pod set without `podset-required-topology`, or outside the group, may land in
another zone than the rest. A job of more than two pod sets (or two, none of a single pod)
cannot be grouped at all: Kueue fits each pod set into a zone of its own choosing, so only a
required nodeAffinity to one zone (inventory `placement: pin`) keeps it together. Reported at the
pod set's annotation (or template), and only when nothing else holds the job in one zone.

Why: the coordinator and the workers are each kept in one zone, but not in the same one: the
rendezvous crosses zones or is blocked by the zone boundary.

Failing example: a PyTorchJob whose Master and Worker both carry
`podset-required-topology: topology.kubernetes.io/zone` but no shared `podset-group-name`.

Passing example: both also carry `kueue.x-k8s.io/podset-group-name: train-pods`.
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import LEFT_OUT
from topogate.policies.kueue.template import concerns

NAME = "kueue-podset-left-out"
SEVERITY = "error"

check = concerns(LEFT_OUT)
