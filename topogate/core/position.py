"""Where something was written: a 1-based file:line:column, the unit of every finding and error."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Position:
    """A 1-based place in a file."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


NOWHERE = Position("<unknown>", 1, 1)


def note_of(pos: Position) -> str:
    """What a finding at `pos` adds to its message: "" for a plain position; a position that
    knows more (a field a GitOps engine changed, topogate.gitops.objects) says it in `note()`."""
    note = getattr(pos, "note", None)
    return str(note()) if callable(note) else ""


__all__ = ["NOWHERE", "Position", "note_of"]
