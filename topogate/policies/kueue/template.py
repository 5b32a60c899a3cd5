"""The one template of the Kueue rules: each reports the concerns of one kind that the Kueue
analysis (analysis/placement/kueue.py) found, at the concern's own place, with its message.

A rule module holds its doc (the docstring), its name and severity, and which kind of concern
it reports: `check = concerns(KIND)`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.kueue.facts import KUEUE_CONCERNS


def concerns(kind: str) -> Callable[[Context], Iterator[Issue]]:
    """The check of a rule reporting every Kueue concern of `kind`."""

    def check(ctx: Context) -> Iterator[Issue]:
        for c in ctx.fact(KUEUE_CONCERNS):
            if c.kind == kind:
                yield Issue(c.object, c.message, c.pos)

    return check


__all__ = ["concerns"]
