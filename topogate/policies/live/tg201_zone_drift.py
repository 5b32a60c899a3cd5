"""TG201 zone-drift: a zone of the inventory has no node in the cluster, or the cluster has nodes
in a zone the inventory does not list.

`topogate drift` reads the nodes (live, or a `kubectl get nodes -o json` file) and groups them
by the cluster's `zoneLabel`. The finding sits at the zone (missing) or at the cluster (extra).

Why: placement pins jobs to zones and network zones open doors between them. A zone that
is gone strands every job pinned there; a zone that was added is one the scheduler may use and
no policy or pin knows about.

Failing example: the inventory lists `us-east-1a` and `us-east-1b`; the cluster also runs
nodes in `us-east-1c`.

Passing example: the inventory lists exactly the zones its nodes carry.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import ZONE, issues

NAME = "zone-drift"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, ZONE)
