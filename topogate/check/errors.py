"""The error of a check whose input cannot be read at all (exit 2)."""

from __future__ import annotations


class CheckInputError(Exception):
    """Input that cannot be read at all (exit 2), with a position to print."""


__all__ = ["CheckInputError"]
