"""TG112 job-open-ingress: pods outside a training job can reach its pods, beyond what the
inventory declares.

The generated job policy lets in the job's own pods and nothing else but the declared scrapers
(`metrics:`) and doors (`doors:`). Per replica group, the analysis asks whether pods that stand
for everyone else can open a connection on any port of TCP, UDP or SCTP: an unlabelled pod of a
namespace nothing manages, an unlabelled pod of the job's namespace, a pod of every network zone
(carrying only `topogate.dev/network-zone`), and an unlabelled pod of the scrapers' namespace
(which may use the metrics port only). Ports a declared door or scraper covers are not
reported. The finding sits on the widest opening rule (the one that opens the most ports).

Why: a training job's pods hold credentials, checkpoints and an open rendezvous port; an allow
written for something else (a namespace-wide "allow the cluster" policy, a Helm chart's default)
silently exposes them to every pod of the cluster, in any network zone.

Failing example (with the generated policies in place):

```yaml
kind: CiliumNetworkPolicy
metadata: {name: allow-cluster, namespace: ml-demo}
spec:
  endpointSelector: {}
  ingress: [{fromEntities: [cluster]}]
  egress: [{toEntities: [cluster]}]
```

Passing example: only the generated job policy selects the job's pods, or the extra ingress is
declared in the inventory as a door (`doors:`) or as the job's `metrics:` scrape port.

Not covered: ingress whose side nothing enforces (no policy selects the group with ingress
rules), which includes every group with `hostNetwork: true` (Cilium gives it the node's
identity, so no policy selects it whatever its labels); TG107 and TG110 report that.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import OPEN_INGRESS

NAME = "job-open-ingress"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for o in ctx.fact(OPEN_INGRESS):
        yield Issue(
            o.object,
            f"{o.object} ({', '.join(o.groups)}) accepts connections from outside the job on "
            f"{', '.join(o.ranges)}: {'; '.join(o.sources)} can connect. The widest opening is "
            f"{o.widest_rule}. The inventory declares no door or scraper for this. Fix: narrow "
            "that rule to the peers that need the job (or remove it), or declare the access in "
            "the inventory (`doors:`, `metrics:`) so the generated policies open exactly that.",
            o.pos,
        )
