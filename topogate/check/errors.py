"""The error of a check whose input cannot be read at all (exit 2)."""

from __future__ import annotations

from topogate.safeio.saferead import InputError


class CheckInputError(Exception):
    """Input that cannot be read at all (exit 2): one problem a line (`lines`, each already
    safe to print as one line), the first with a position to print."""

    def __init__(self, *lines: str):
        super().__init__("\n".join(lines))
        self.lines = lines

    @classmethod
    def of(cls, err: InputError) -> CheckInputError:
        """Every problem `err` holds, a line each (InputErrors holds several)."""
        return cls(*err.lines())


__all__ = ["CheckInputError"]
