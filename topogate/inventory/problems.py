"""What the inventory loader reports: a problem at a file position, and the error holding them all."""

from __future__ import annotations

from dataclasses import dataclass

from topogate.core.position import Position


@dataclass(frozen=True, order=True)
class Problem:
    pos: Position
    message: str

    def __str__(self) -> str:
        return f"{self.pos}: {self.message}"


class InventoryError(Exception):
    def __init__(self, problems: list[Problem]):
        self.problems = sorted(set(problems))
        super().__init__("\n".join(str(p) for p in self.problems))

__all__ = ["InventoryError", "Problem"]
