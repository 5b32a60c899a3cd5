"""Which findings `check` reports: `--select`/`--ignore` and the objects' suppression
annotations (topogate.policies.selection), applied to a check's outcome."""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from topogate.analysis.result import BaselineUse, CheckResult
from topogate.check.baseline import Baseline
from topogate.check.baseline import apply as apply_baseline
from topogate.check.config import Globs
from topogate.check.errors import CheckInputError
from topogate.check.run import CheckOutcome
from topogate.core.exitcodes import recounted
from topogate.core.position import Position
from topogate.policies.selection import (
    LISTS_THEM,
    SelectedResult,
    SelectionError,
    apply,
    deselected,
    resolve_rules,
)


def select_outcome(outcome: CheckOutcome, select: Sequence[str], ignore: Sequence[str],
                   strict: bool, per_path: Sequence[tuple[Globs, Sequence[str]]] = (),
                   always: Collection[str] = ()) -> CheckOutcome:
    """`check`'s outcome after --select/--ignore, the configuration's per-path ignores and the
    objects' suppression annotations. Rules in `always` are kept whatever `select`, `ignore`
    and `per_path` say (the caller leaves them out where the command line itself drops them)."""
    rules = outcome.result.rules
    problems: list[str] = []
    chosen: frozenset[str] | None = None
    dropped: frozenset[str] = frozenset()
    # Both options are read before either fails, so one run names every typo.
    try:
        chosen = resolve_rules(select, rules, "--select") if select else None
    except SelectionError as err:
        problems.append(str(err).removesuffix(LISTS_THEM))
    try:
        dropped = resolve_rules(ignore, rules, "--ignore") if ignore else frozenset()
    except SelectionError as err:
        problems.append(str(err).removesuffix(LISTS_THEM))
    if problems:
        raise CheckInputError("; ".join(problems) + LISTS_THEM)
    if outcome.inventory is None:
        return outcome  # the inventory did not load: its problems are never selected away
    kept = frozenset(always)
    result = apply(outcome.result, outcome.objects, chosen | kept if chosen is not None else None, dropped - kept)
    if per_path:
        result = _per_path(result, [(g, resolve_rules(rs, rules, "per-path-ignores") - kept) for g, rs in per_path])
    # 2 (unreadable input) is never lowered
    code = recounted(outcome.exit_code, result.errors, result.warnings, strict)
    return dataclasses.replace(outcome, result=result, exit_code=code)


def baselined_outcome(outcome: CheckOutcome, base: Baseline, strict: bool, refused: tuple[Position, ...] = (),
                      ref: str = "") -> CheckOutcome:
    """The outcome with every finding `base` lists baselined: out of the findings that fail, into
    the result's `baseline` (counted by every report)."""
    if outcome.inventory is None:
        return outcome
    done = apply_baseline(outcome.result.findings, base)
    use = BaselineUse(base.file, done.baselined, len(done.unmatched), refused, ref)
    result = dataclasses.replace(outcome.result, findings=done.kept, baseline=use)
    code = recounted(outcome.exit_code, result.errors, result.warnings, strict)
    return dataclasses.replace(outcome, result=result, exit_code=code)


def _per_path(result: CheckResult, ignores: list[tuple[Globs, frozenset[str]]]) -> CheckResult:
    """Findings in files a per-path ignore covers leave the report, counted with what
    --select/--ignore hid."""
    hidden = [f for f in result.findings if any(f.rule in rs and g.matches(f.file) for g, rs in ignores)]
    if not hidden:
        return result
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(CheckResult)}
    gone = set(hidden)
    fields["findings"] = tuple(f for f in result.findings if f not in gone)
    return SelectedResult(**fields, deselected=tuple(sorted({*deselected(result), *hidden})))


__all__ = ["baselined_outcome", "select_outcome"]
