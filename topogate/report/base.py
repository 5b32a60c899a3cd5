"""What every reporter shares: the interface, and the few conventions all formats agree on.

Reporters never reason about the map and never do I/O: they turn a finished CheckResult into
one string, so the CLI decides where it goes and tests can compare strings byte for byte.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from topogate.analysis.result import CheckResult, Flow, JobMap
from topogate.core.exitcodes import exit_for
from topogate.core.findings import Finding
from topogate.core.position import NOWHERE
from topogate.core.words import plural
from topogate.inventory.model import Waiver
from topogate.policies.selection import deselected

UNKNOWN_FILE = NOWHERE.file


class Reporter(ABC):
    """Turns a CheckResult into text. One subclass per --format value."""

    name: ClassVar[str]
    description: ClassVar[str] = ""

    def __init__(self, *, strict: bool = False) -> None:
        # strict: warnings fail the check too (the CLI's --strict); formats that print a
        # verdict must agree with the exit code.
        self.strict = strict

    @abstractmethod
    def render(self, result: CheckResult) -> str:
        """The whole report, ending with a newline (or empty when the format has nothing)."""

    def failed(self, result: CheckResult) -> bool:
        return exit_for(result.errors, result.warnings, self.strict) != 0


def sorted_findings(result: CheckResult) -> list[Finding]:
    # Finding is ordered by (file, line, column, rule, name, severity, object, message):
    # exactly "by file and line", with every other field as a tie-breaker, so the order of
    # the rules' output never leaks into the report.
    return sorted(result.findings)


def sorted_jobs(result: CheckResult) -> list[JobMap]:
    return sorted(result.jobs, key=lambda j: (j.cluster, j.object))


def flow_key(f: Flow) -> tuple[str, str, str, str, int, str, str]:
    return (f.src, f.dst, f.src_zone, f.dst_zone, f.port, f.protocol, f.purpose)


def port_text(f: Flow) -> str:
    """TCP/23456, or TCP/* for a flow that needs every port (NCCL picks ports at random)."""
    return f"{f.protocol}/{f.port if f.port > 0 else '*'}"


def has_file(file: str) -> bool:
    return bool(file) and file != UNKNOWN_FILE


def counts_line(result: CheckResult) -> str:
    infos = sum(1 for f in result.findings if f.severity == "info")
    parts = [plural(result.errors, "error"), plural(result.warnings, "warning")]
    if infos:
        parts.append(f"{infos} info")
    if result.suppressed:
        parts.append(f"{len(result.suppressed)} suppressed by annotation")
    if result.waived:
        parts.append(f"{len(result.waived)} waived by the inventory")
    left_out = deselected_text(result)
    if left_out:
        parts.append(left_out)
    line = f"{', '.join(parts)} in {plural(len(result.jobs), 'workload')}"
    s = result.scope
    if s is None:
        return line
    if (s.checked == "nothing" and not result.findings and not result.jobs and not result.suppressed
            and not result.waived):
        return f"nothing to check since {s.since} ({s.text})"
    return f"{line} (--changed-since {s.since}: {s.text})"


def deselected_text(result: CheckResult) -> str:
    """"3 hidden by --select/--ignore (2 errors, 1 warning: TG101, TG102)", or "" when nothing was."""
    hidden = deselected(result)
    if not hidden:
        return ""
    by = [plural(n, word) for word, n in (
        ("error", sum(1 for f in hidden if f.severity == "error")),
        ("warning", sum(1 for f in hidden if f.severity == "warning"))) if n]
    infos = sum(1 for f in hidden if f.severity == "info")
    if infos:
        by.append(f"{infos} info")
    rules = ", ".join(sorted({f.rule for f in hidden}))
    return f"{len(hidden)} hidden by --select/--ignore ({', '.join(by)}: {rules})"


def suppressed_lines(result: CheckResult) -> list[str]:
    """One line per honoured suppression: what was hidden, where, and the reason given."""
    return [f"suppressed: {s.rule} on {s.object} ({s.pos.file}:{s.pos.line}): {s.reason}"
            for s in result.suppressed]


def waiver_text(w: Waiver) -> str:
    until = f" (until {w.expires.isoformat()})" if w.expires is not None else ""
    return f"{w.reason}{until}"


def waived_lines(result: CheckResult) -> list[str]:
    """One line per finding a waiver hid: the finding's place, and the waiver's line and reason."""
    return [f"waived: {w.finding.rule} on {w.finding.object} ({w.finding.file}:{w.finding.line}) by "
            f"{w.waiver.pos.file}:{w.waiver.pos.line}: {waiver_text(w.waiver)}" for w in result.waived]


def zone_choice(job: JobMap) -> tuple[str, ...]:
    """The zones a colocated job may pick as a whole, when there is more than one.

    A following job (placement: follow, podAffinity on the zone) lands in one zone, chosen at
    schedule time; listing every zone per group would read as a split. Reporters say the choice
    once, for the job. Empty when the job is not colocated or has one possible zone."""
    if not job.colocated or not job.groups:
        return ()
    common = set(job.groups[0].zones)
    for g in job.groups[1:]:
        common &= set(g.zones)
    return tuple(sorted(common)) if len(common) > 1 else ()


def zone_choice_text(zones: tuple[str, ...]) -> str:
    return f"the whole job in one zone of: {', '.join(zones)}"
