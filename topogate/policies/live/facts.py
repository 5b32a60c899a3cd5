"""What the TG2xx rules read: facts about the live cluster, on top of the usual Context.

A subclass rather than a new field of analysis.Context: the live facts exist only for the live
commands, and the rules of that family find nothing on a plain `check`'s context.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from topogate.core.findings import Issue
from topogate.core.position import Position
from topogate.policies.context import Context

# The kinds of fact, one per rule of the family.
ZONE, POOL_SIZE, SCHEDULING, GPUS, UNDESCRIBED = "zone", "pool-size", "scheduling", "gpus", "undescribed"
SPLIT, PENDING, UNMANAGED, DIFFERS = "split", "pending", "unmanaged", "differs"


@dataclass(frozen=True, order=True)
class LiveFact:
    kind: str
    object: str
    message: str
    pos: Position


@dataclass(frozen=True)
class LiveContext(Context):
    live: tuple[LiveFact, ...] = ()


def issues(ctx: Context, kind: str) -> Iterator[Issue]:
    """The facts of one kind as rule issues; none on a context that is not a live one."""
    if isinstance(ctx, LiveContext):
        for f in ctx.live:
            if f.kind == kind:
                yield Issue(f.object, f.message, f.pos)
