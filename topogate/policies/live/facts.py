"""The kinds of live fact (policies.context.LiveFact), one per TG2xx rule, and the rules' view
of them. A plain `check` has none, so the family finds nothing there."""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context, LiveFact

ZONE, POOL_SIZE, SCHEDULING, GPUS, UNDESCRIBED = "zone", "pool-size", "scheduling", "gpus", "undescribed"
SPLIT, PENDING, UNMANAGED, DIFFERS = "split", "pending", "unmanaged", "differs"
CARRIED_DENIED = "carried-denied"  # check --flows: recorded traffic, not the cluster now


def issues(ctx: Context, kind: str) -> Iterator[Issue]:
    """The facts of one kind as rule issues."""
    for f in ctx.given.live:
        if f.kind == kind:
            yield Issue(f.object, f.message, f.pos)


__all__ = ["CARRIED_DENIED", "DIFFERS", "GPUS", "LiveFact", "PENDING", "POOL_SIZE", "SCHEDULING", "SPLIT", "UNDESCRIBED",
           "UNMANAGED", "ZONE", "issues"]
