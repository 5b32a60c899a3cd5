"""Reading values that may be of the wrong type: after a schema error any field may hold anything,
so the semantic checks read through these and go on with an empty or zero value."""

from __future__ import annotations

import re
from typing import Any

DNS = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")


def labels(d: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in d.items())) if isinstance(d, dict) else ()


def dicts(v: Any) -> list[dict[str, Any]]:
    return [x for x in v if isinstance(x, dict)] if isinstance(v, list) else []


def seq(v: Any) -> list[Any]:
    """v when it is a list: after a schema error a list field may hold anything."""
    return v if isinstance(v, list) else []


def as_map(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def quantity(v: Any) -> str | None:
    if isinstance(v, bool) or v is None:
        return None
    return str(v) if isinstance(v, (int, str)) else None


def as_int(v: Any) -> int:
    if isinstance(v, float) and v.is_integer():
        return int(v)  # JSON Schema counts 2.0 as an integer, so the model must too
    return v if isinstance(v, int) and not isinstance(v, bool) else 0
