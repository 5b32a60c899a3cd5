"""Run every registered rule over the context: stamp ID, name and severity, apply waivers."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from types import ModuleType

from topogate.analysis.context import Context
from topogate.analysis.result import RuleInfo
from topogate.findings import Finding, Issue
from topogate.inventory.model import Waiver
from topogate.policies import REGISTRY

WAIVER_RULE = "TG003"


def rule_info(rule_id: str, mod: ModuleType) -> RuleInfo:
    doc = inspect.getdoc(mod) or ""
    # The summary is the docstring's first paragraph, which may wrap over several lines.
    summary = " ".join(doc.split("\n\n", 1)[0].split())
    return RuleInfo(rule_id, mod.NAME, mod.SEVERITY, summary, doc)


def all_rules() -> tuple[RuleInfo, ...]:
    return tuple(rule_info(rid, mod) for rid, mod in sorted(REGISTRY.items()))


def _stamp(rule_id: str, mod: ModuleType, issues: Iterable[Issue]) -> list[Finding]:
    return [
        Finding(i.pos.file, i.pos.line, i.pos.column, rule_id, mod.NAME, i.severity or mod.SEVERITY, i.object,
                i.message, i.detail)
        for i in issues
    ]


def _waived(f: Finding, waivers: Iterable[Waiver], ctx: Context) -> bool:
    for w in waivers:
        if w.rule not in (f.rule, f.name) or w.object not in ("*", f.object):
            continue
        if w.expires is not None and w.expires < ctx.today:
            continue  # an expired waiver no longer hides anything; TG003 reports it
        return True
    return False


def run_rules(ctx: Context, only: Iterable[str] | None = None) -> tuple[Finding, ...]:
    selected = set(only) if only is not None else None
    findings: list[Finding] = []
    for rid, mod in sorted(REGISTRY.items()):
        if selected is not None and rid not in selected:
            continue
        findings.extend(_stamp(rid, mod, mod.check(ctx)))
    waivers = ctx.inventory.waivers if ctx.inventory else ()
    kept = [f for f in findings if f.rule == WAIVER_RULE or not _waived(f, waivers, ctx)]
    return tuple(sorted(set(kept)))
