"""Words in messages: counted nouns ("1 GPU", "2 GPUs", never "1 GPUs"), and the nearest known
name for a typo ("did you mean hard-block?", as click says for commands and options)."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def plural(n: int, word: str, many: str = "") -> str:
    """`n word` with the noun agreeing with n (`many` for irregular plurals); thousands are
    grouped ("1,500 jobs")."""
    return f"{n:,} {word if n == 1 else (many or word + 's')}"

def nearest(word: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names closest to `word` (case ignored; a letter O typed for a zero in an ID
    counts as the zero), best first; empty when none is close."""
    by_key: dict[str, str] = {}
    for k in known:
        by_key.setdefault(k.lower(), k)
    key = word.lower()
    if key[:2] == "tg":
        key = key[:2] + key[2:].replace("o", "0")
    if key in by_key:
        return [by_key[key]]
    # 0.75: one or two letters off in a name of ten; "TG999" is not near "TG209"
    return [by_key[m] for m in difflib.get_close_matches(key, list(by_key), n=n, cutoff=0.75)]


def did_you_mean(word: str, known: Iterable[str]) -> str:
    """"; did you mean hard-block?" (or "... one of a, b?"), or "" when nothing is close."""
    close = nearest(word, known)
    if not close:
        return ""
    return f"; did you mean {close[0]}?" if len(close) == 1 else f"; did you mean one of {', '.join(close)}?"


__all__ = ["did_you_mean", "nearest", "plural"]
