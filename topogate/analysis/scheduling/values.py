"""Loose values of a pod spec read the way the API server parses them: lists of strings, and
integers written as numbers or strings (node-affinity Gt/Lt, taint comparisons)."""

from __future__ import annotations

from typing import Any


def as_str_list(v: Any) -> list[str]:
    if not isinstance(v, list):
        return []
    return [str(x) for x in v if x is not None]


def int_or_none(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s, 10)
        except ValueError:
            return None
    return None
