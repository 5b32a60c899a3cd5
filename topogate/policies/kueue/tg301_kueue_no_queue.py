"""TG301 kueue-no-queue: a job asks Kueue for a topology but is in no Kueue queue.

Kueue manages a job only when it is in a LocalQueue: the `kueue.x-k8s.io/queue-name` label on
the job object, or a LocalQueue named `default` in the job's namespace. Without one, the
`kueue.x-k8s.io/podset-required-topology`, `podset-preferred-topology` and `podset-group-name`
annotations on its replica templates are read by nobody, and the default scheduler places each
pod by its own constraints. The finding points at the annotation.

Why: the annotations look like a placement, and topogate's admission policy accepts Kueue's
required topology as the job's zone constraint, so such a job passes review and admission while
nothing keeps it in one zone.

Failing example: `podset-required-topology: topology.kubernetes.io/zone` on both replica
templates of a PyTorchJob whose metadata has no `kueue.x-k8s.io/queue-name` label.

Passing example: the same job with `metadata.labels: {kueue.x-k8s.io/queue-name: training}` and
the LocalQueue `training` among the PATHs (inventory: `scheduler: kueue`).
"""

from __future__ import annotations

from topogate.analysis.placement.kueue import NO_QUEUE
from topogate.policies.kueue.template import concerns

NAME = "kueue-no-queue"
SEVERITY = "error"

check = concerns(NO_QUEUE)
