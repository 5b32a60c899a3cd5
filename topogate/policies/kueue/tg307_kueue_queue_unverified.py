"""TG307 kueue-queue-unverified: a job's Kueue queue cannot be followed among the manifests.

A job is in a Kueue queue, but its LocalQueue, the LocalQueue's ClusterQueue, one of the
ClusterQueue's ResourceFlavors or a flavor's Topology is not among the PATHs. topogate then
cannot tell whether Kueue keeps the job in one zone and judges the job by its pod constraints
alone: the verdict may report a split that Kueue would prevent, never the other way round.
Reported at the queue label.

Why: an "ok" is earned; a queue that nobody looked at proves nothing.

Failing example: `kueue.x-k8s.io/queue-name: training` on a job checked without any Kueue
objects among the PATHs.

Passing example: the cluster's Kueue objects (e.g. the generated `clusters/<cluster>/kueue/`)
among the PATHs.
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import UNVERIFIED
from topogate.policies.kueue.template import concerns

NAME = "kueue-queue-unverified"
SEVERITY = "warning"

check = concerns(UNVERIFIED)
