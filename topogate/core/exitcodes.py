"""Exit codes, and the one rule that turns findings into one.

Every command: 0 clean, 1 findings (errors; warnings too under --strict) or differences, 2 bad
invocation or unreadable input. The commands that talk to a service (`audit egress`, the live
commands) add the BSD sysexits values a nightly scheduler acts on: retry later (75,
EX_TEMPFAIL), page someone about permissions (77, EX_NOPERM), fix the configuration (78,
EX_CONFIG).
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


def exit_for(errors: int, warnings: int, strict: bool) -> int:
    """The exit code of a run that found `errors` and `warnings`: errors fail it, and warnings
    too under --strict."""
    return int(FINDINGS) if errors or (strict and warnings) else int(ExitCode.OK)


__all__ = ["FINDINGS", "ExitCode", "exit_for"]
