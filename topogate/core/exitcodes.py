"""Exit codes, and the one place that turns what a run found into one.

Every command: 0 clean, 1 findings (errors; warnings too under --strict) or differences, 2 bad
invocation or unreadable input. The commands that talk to a service (`audit egress`, the live
commands) add the BSD sysexits values a nightly scheduler acts on: retry later (75,
EX_TEMPFAIL), page someone about permissions (77, EX_NOPERM), fix the configuration (78,
EX_CONFIG).

What fails a run is each command's own fact (an error finding, a denied trace, a cluster over
budget, a `--fail-on` row); the code it becomes is decided here and nowhere else
(tests/report/test_report_pipeline.py fails on a second decision).
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0  # no error finding (audit: every AWS cluster within its budget, or no budget set)
    OVER_BUDGET = 1  # error findings; audit: at least one cluster-day over its budget
    BAD_INVOCATION = 2  # bad options, unreadable input, a window Cost Explorer refuses
    TEMPORARY = 75  # throttled after retries, data not available yet, network: run again later
    ACCESS_DENIED = 77  # the credentials work but may not call the service
    CONFIG = 78  # no/expired credentials, bad endpoint or region, no cost tag, usage types not found


FINDINGS = ExitCode.OVER_BUDGET  # the same 1, by the name `check` gives it


def fails(severity: str, strict: bool) -> bool:
    """Whether one finding of `severity` fails the run: an error does, a warning under --strict."""
    return severity == "error" or (strict and severity == "warning")


def exit_when(failed: bool) -> int:
    """The exit code of a run whose report is made: 1 when what it found fails it, else 0."""
    return int(FINDINGS) if failed else int(ExitCode.OK)


def exit_for(errors: int, warnings: int, strict: bool) -> int:
    """The exit code of a run that found `errors` and `warnings`: errors fail it, and warnings
    too under --strict."""
    return exit_when(bool(errors) or (strict and bool(warnings)))


def recounted(code: int, errors: int, warnings: int, strict: bool) -> int:
    """`code` after the findings changed (a selection, a baseline): 2, unreadable input, is never
    lowered; otherwise what the findings left say (exit_for)."""
    return code if code == ExitCode.BAD_INVOCATION else exit_for(errors, warnings, strict)


def report_only(code: int, exit_zero: bool) -> int:
    """--exit-zero: findings (1) exit 0; bad input (2) still fails, since no report was made."""
    return int(ExitCode.OK) if exit_zero and code == FINDINGS else code


__all__ = ["FINDINGS", "ExitCode", "exit_for", "exit_when", "fails", "recounted", "report_only"]
