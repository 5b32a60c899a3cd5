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

__all__ = ["NOWHERE", "Position"]
