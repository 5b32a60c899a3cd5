"""Which findings `check` reports: `--select`/`--ignore` and the objects' suppression
annotations (topogate.policies.selection), applied to a check's outcome."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from topogate.check.errors import CheckInputError
from topogate.check.run import CheckOutcome
from topogate.core.exitcodes import ExitCode, exit_for
from topogate.policies.selection import LISTS_THEM, SelectionError, apply, resolve_rules


def select_outcome(outcome: CheckOutcome, select: Sequence[str], ignore: Sequence[str],
                   strict: bool) -> CheckOutcome:
    """`check`'s outcome after --select/--ignore and the objects' suppression annotations."""
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
    result = apply(outcome.result, outcome.objects, chosen, dropped)
    # 2 (unreadable input) is never lowered
    code = (outcome.exit_code if outcome.exit_code == ExitCode.BAD_INVOCATION
            else exit_for(result.errors, result.warnings, strict))
    return dataclasses.replace(outcome, result=result, exit_code=code)


__all__ = ["select_outcome"]
