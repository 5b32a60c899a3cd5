"""Findings: what a rule says, stamped by the engine with the rule's ID, name and severity."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from topogate.core.position import NOWHERE, Position


@dataclass(frozen=True)
class Issue:
    """What a rule yields: the object it is about, where, and what will happen / how to fix."""

    object: str  # Kind/namespace/name, or "Inventory/<name>"
    message: str
    pos: Position = NOWHERE
    detail: str = ""  # preformatted text shown below the message by text/markdown (e.g. a diff)
    # A rule whose findings differ in effect (TG105: a split today vs. a latent one) may lower
    # the severity of one finding; "" means the rule's SEVERITY.
    severity: str = ""


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    column: int
    rule: str
    name: str
    severity: str
    object: str
    message: str
    # Shown by the text and markdown reporters only; not part of the JSON/SARIF shape or order.
    detail: str = field(default="", compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule, "name": self.name, "severity": self.severity, "object": self.object,
            "file": self.file, "line": self.line, "column": self.column, "message": self.message,
        }

__all__ = ["Finding", "Issue"]
