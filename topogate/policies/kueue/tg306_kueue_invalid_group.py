"""TG306 kueue-invalid-group: a PodSet group that Kueue cannot fit.

Kueue's job webhooks accept a `kueue.x-k8s.io/podset-group-name` shared by exactly two pod sets,
one of them a single pod, both with the same required (or preferred) topology, under a name that
is not a number (`ValidatePodSetGroupingTopology`, `ValidateTASPodSetRequest`; docs/kueue.md).
The MPIJob and JobSet webhooks refuse any other group; for other kinds the job is let in but the
scheduler is not built for it. topogate does not count such a group as holding its pod sets
together. Reported at the group-name annotation.

Why: the job is refused at creation, or admitted with a placement nobody can predict.

Failing example: an MPIJob whose Launcher (1 pod) and Worker share the group name but ask for
different levels (`topology.kubernetes.io/zone` and `kubernetes.io/hostname`).

Passing example: both ask for `topology.kubernetes.io/zone`.
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import BAD_GROUP
from topogate.policies.kueue.template import concerns

NAME = "kueue-invalid-group"
SEVERITY = "error"

check = concerns(BAD_GROUP)
