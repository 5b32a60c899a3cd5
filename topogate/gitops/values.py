"""Reading parsed YAML whose shape nobody promised (an engine object, a built object)."""

from __future__ import annotations

from typing import Any


def mapping(v: Any) -> dict[str, Any]:
    """v when it is a mapping, else an empty one."""
    return v if isinstance(v, dict) else {}


__all__ = ["mapping"]
