"""`topogate rules RULE` and `rules --format json`: one rule's documentation, or all as data."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from topogate.analysis.result import RuleInfo
from topogate.core.words import did_you_mean


def rule_dict(r: RuleInfo) -> dict[str, Any]:
    return {"id": r.id, "name": r.name, "severity": r.severity,
            "summary": r.summary.split(": ", 1)[-1], "doc": r.doc}


def rules_json(infos: Sequence[RuleInfo]) -> str:
    return json.dumps([rule_dict(r) for r in infos], indent=2, ensure_ascii=False)


def one_rule(infos: Sequence[RuleInfo], wanted: str, fmt: str) -> tuple[str, int]:
    """The text of one rule by ID (any case) or kebab-case name, and the exit code (2: none)."""
    match = [r for r in infos if wanted.upper() == r.id or wanted.lower() == r.name]
    if not match:
        hint = did_you_mean(wanted, [r.id for r in infos] + [r.name for r in infos])
        return f"topogate: no rule '{wanted}'{hint} (`topogate rules` lists them)", 2
    r = match[0]
    if fmt == "json":
        return json.dumps(rule_dict(r), indent=2, ensure_ascii=False), 0
    body = r.doc.split("\n\n", 1)[1].strip() if "\n\n" in r.doc else ""
    head = f"## {r.id} {r.name}" if fmt == "markdown" else f"{r.id} {r.name} ({r.severity})"
    sev = f"\n\nSeverity: {r.severity}" if fmt == "markdown" else ""
    summary = r.summary.split(": ", 1)[-1]
    return f"{head}{sev}\n\n{summary[:1].upper()}{summary[1:]}\n\n{body}", 0

__all__ = ["one_rule", "rules_json"]
