"""Run every registered rule over the context: stamp ID, name and severity, apply waivers."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType

from topogate.analysis.result import RuleInfo, Waived
from topogate.core.findings import Finding, Issue
from topogate.core.position import Position, note_of
from topogate.inventory.model import Waiver
from topogate.policies import REGISTRY
from topogate.policies.context import Context

WAIVER_RULE = "TG003"
# Findings no waiver hides: the one about waivers, and the one about the gate's own settings (a
# pull request's inventory could otherwise waive the finding its settings change gets).
UNWAIVABLE = (WAIVER_RULE, "TG011")


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
                _noted(i.message, i.pos), i.detail)
        for i in issues
    ]


def _noted(message: str, pos: Position) -> str:
    """A finding at a field an Argo CD Application or Flux Kustomization changed names both
    lines: it points at the GitOps line, and says where the object itself is written."""
    note = note_of(pos)
    return f"{message} {note}" if note else message


@dataclass(frozen=True)
class RuleRun:
    findings: tuple[Finding, ...]
    waived: tuple[Waived, ...] = ()


def _waiver_for(f: Finding, waivers: Iterable[Waiver], ctx: Context) -> Waiver | None:
    for w in waivers:
        if w.rule not in (f.rule, f.name) or w.object not in ("*", f.object):
            continue
        if w.expires is not None and w.expires < ctx.today:
            continue  # an expired waiver no longer hides anything; TG003 reports it
        return w
    return None


def evaluate(ctx: Context, only: Iterable[str] | None = None) -> RuleRun:
    """Every selected rule's findings, split into those shown and those a waiver hides."""
    selected = set(only) if only is not None else None
    ctx = dataclasses.replace(ctx, known_rules=tuple((rid, mod.NAME) for rid, mod in sorted(REGISTRY.items())))
    findings: list[Finding] = []
    for rid, mod in sorted(REGISTRY.items()):
        if selected is not None and rid not in selected:
            continue
        findings.extend(_stamp(rid, mod, mod.check(ctx)))
    waivers = ctx.inventory.waivers if ctx.inventory else ()
    kept: set[Finding] = set()
    waived: set[Waived] = set()
    for f in findings:
        w = None if f.rule in UNWAIVABLE else _waiver_for(f, waivers, ctx)
        if w is None:
            kept.add(f)
        else:
            waived.add(Waived(f, w))
    return RuleRun(tuple(sorted(kept)), tuple(sorted(waived, key=lambda x: x.finding)))


def run_rules(ctx: Context, only: Iterable[str] | None = None) -> tuple[Finding, ...]:
    return evaluate(ctx, only).findings

__all__ = ["all_rules", "evaluate", "run_rules"]
