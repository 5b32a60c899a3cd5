"""TG107 opens-boundary: a policy lets training traffic cross between network zones that the
inventory separates.

Each network zone of the inventory is a locked door. The analysis takes every job, finds the
network zone its pods land in, and asks the policy evaluator whether TCP can flow between it and
a job of every other network zone (one representative each; where a network zone has no job
among the manifests, a pod carrying only that zone's `topogate.dev/network-zone` label in the
job's namespace), on the rendezvous port 23456/TCP. An allowed flow is a finding, reported at the
rule that allowed it.

Why: a wide allow (`toEntities: [cluster]`, an empty selector, a namespace-wide NetworkPolicy)
quietly re-opens a boundary that exists for isolation or for cost; topogate's boundary policies
deny it, but hand-written policies in a cluster without them do not.

Failing example:

```yaml
kind: CiliumNetworkPolicy
spec:
  endpointSelector: {}
  egress: [{toEntities: [cluster]}]
```

Passing example: per-job policies that allow only the job's own pods, plus the boundary
CiliumClusterwideNetworkPolicies `topogate generate` writes.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.analysis.context import Context
from topogate.findings import Issue

NAME = "opens-boundary"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for o in ctx.boundary_openings:
        src, dst = _who(o.src_object, o.src_group, o.src_nz), _who(o.dst_object, o.dst_group, o.dst_nz)
        # No deciding rule means neither side is selected by any policy: say so, since "allowed"
        # alone leaves the reader looking for a rule that does not exist.
        why = (f"allowed by {o.decided_by}" if o.decided_by else
               f"no policy selects {_pod(o.src_object, o.src_group)} or {_pod(o.dst_object, o.dst_group)}: "
               "allowed by default")
        fix = ("narrow the allow to the job's own pods, or apply the boundary policies from "
               "`topogate generate`." if o.decided_by else
               "apply the boundary policies from `topogate generate` (they select every pod of a "
               "network zone and deny the others).")
        yield Issue(
            o.src_object if "/" in o.src_object else o.dst_object,
            f"{src} can reach {dst} on TCP {o.port}: {why}. The inventory "
            f"separates {o.src_nz} and {o.dst_nz}. Fix: {fix}",
            o.pos,
        )


def _pod(obj: str, group: str) -> str:
    return f"{obj} ({group})" if "/" in obj else obj


def _who(obj: str, group: str, nz: str) -> str:
    # The probe's stand-in pod is already named by its network zone ("a pod of network zone X").
    return f"{obj} ({group}, network zone {nz})" if "/" in obj else obj
