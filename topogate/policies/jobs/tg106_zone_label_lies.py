"""TG106 zone-label-lies: a pod label that a policy uses as zone identity disagrees with where
the pod can actually land.

Cilium sees a zone only as a pod label. If a policy selects pods by a zone label (the cluster's
zone label key, `topology.kubernetes.io/zone`, any label whose value is a zone name, or
`topogate.dev/network-zone`), that label must be true: the group's feasible zones must be exactly
the zone the label names (or lie inside the network zone it names).

Why: a hand-written `zone: zone-b` on a pod the scheduler may put in zone-a makes the policy
reason about the wrong zone: traffic the author meant to keep inside a zone is allowed across it,
or the reverse, and only at run time.

Failing example: the master is labelled `zone: zone-b`, the policy selects on `zone`, and the
master has no affinity, so it can land in zone-a or zone-b.

Passing example: the label is set only on pods pinned by required nodeAffinity to that zone.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import ZONE_LABEL_LIES

NAME = "zone-label-lies"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for lie in ctx.fact(ZONE_LABEL_LIES):
        claim = "network zone" if lie.kind == "network-zone" else "zone"
        yield Issue(
            lie.object,
            f"{lie.object}: group {lie.group} is labelled {lie.key}={lie.value}, which "
            f"{', '.join(lie.policies)} use(s) as its {claim}, but its pods can land in "
            f"{', '.join(lie.zones)}. The policy will treat the pods as being where they are not. "
            f"Fix: pin the group to the {claim} its label names, or stop selecting on that label.",
            lie.pos,
        )
