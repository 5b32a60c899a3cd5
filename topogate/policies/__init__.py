"""The rules: one module per rule, a stable ID, a kebab-case name, the docstring is its doc.

The registry is explicit so an ID can never change by renaming a file.
"""

from __future__ import annotations

from types import ModuleType

from topogate.policies import (
    tg001_inventory_invalid,
    tg002_drift,
    tg003_waiver_expired,
)

REGISTRY: dict[str, ModuleType] = {
    "TG001": tg001_inventory_invalid,
    "TG002": tg002_drift,
    "TG003": tg003_waiver_expired,
}
