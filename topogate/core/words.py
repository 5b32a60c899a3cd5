"""Counted nouns in messages: "1 GPU", "2 GPUs", never "1 GPUs"."""

from __future__ import annotations


def plural(n: int, word: str, many: str = "") -> str:
    """`n word` with the noun agreeing with n (`many` for irregular plurals); thousands are
    grouped ("1,500 jobs")."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"

__all__ = ["plural"]
