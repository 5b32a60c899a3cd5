"""What the GitOps render says beside the objects: what it could not read, a variable Flux
leaves unset, a render the engine itself would fail. The rules TG012-TG014 report them."""

from __future__ import annotations

from dataclasses import dataclass

from topogate.core.position import Position

NOT_RENDERED = "not-rendered"  # TG012: part of what an engine applies was not read
UNSET = "variable-unset"  # TG013: a variable without a value and without a default
FAILS = "render-fails"  # TG014: the engine's own render fails: it applies nothing of it


@dataclass(frozen=True, order=True)
class Note:
    kind: str  # one of the three above
    object: str  # the engine object, Kind/namespace/name
    message: str
    pos: Position
    severity: str = ""  # "" is the rule's


__all__ = ["FAILS", "NOT_RENDERED", "Note", "UNSET"]
