"""What every reporter shares: the interface, and the few conventions all formats agree on.

Reporters never reason about the map and never do I/O: they turn a finished CheckResult into
one string, so the CLI decides where it goes and tests can compare strings byte for byte.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, ClassVar

from topogate.analysis.result import BaselineUse, CheckResult, Flow, JobMap, Narrowed, SettingsUse
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
    if result.baseline is not None and result.baseline.findings:
        parts.append(f"{len(result.baseline.findings)} baselined")
    left_out = deselected_text(result)
    if left_out:
        parts.append(left_out)
    parts += settings_counts(result)
    line = f"{', '.join(parts)} in {plural(len(result.jobs), 'workload')}"
    s = result.scope
    if s is None:
        return line
    if (s.checked == "nothing" and not result.findings and not result.jobs and not result.suppressed
            and not result.waived):
        return f"nothing to check since {s.since} ({s.text})"
    return f"{line} (--changed-since {s.since}: {s.text})"


def deselected_text(result: CheckResult) -> str:
    """"3 hidden by --select/--ignore (2 errors, 1 warning: TG101, TG102)", or "" when nothing was.
    What the settings file hid is its own part of the counts (settings_counts)."""
    hidden = deselected(result)
    if result.settings is not None and result.settings.hidden:
        by_file = set(result.settings.hidden)
        hidden = tuple(f for f in hidden if f not in by_file)
    if not hidden:
        return ""
    return f"{len(hidden)} hidden by --select/--ignore ({hidden_breakdown(hidden)})"


def hidden_breakdown(hidden: Sequence[Finding]) -> str:
    """"2 errors, 1 warning: TG101, TG102": what some hidden findings were."""
    by = [plural(n, word) for word, n in (
        ("error", sum(1 for f in hidden if f.severity == "error")),
        ("warning", sum(1 for f in hidden if f.severity == "warning"))) if n]
    infos = sum(1 for f in hidden if f.severity == "info")
    if infos:
        by.append(f"{infos} info")
    rules = ", ".join(sorted({f.rule for f in hidden}))
    return f"{', '.join(by)}: {rules}"


def settings_counts(result: CheckResult) -> list[str]:
    """The settings file's part of the counts line: what it hid and left unread or out."""
    use = result.settings
    if use is None:
        return []
    parts = []
    if use.hidden:
        parts.append(f"{len(use.hidden)} hidden by {use.label} ({hidden_breakdown(use.hidden)})")
    paths = {p for n in use.narrowed for p in n.paths}
    if paths:
        parts.append(f"{plural(len(paths), 'path')} left unread by {use.label}")
    clusters = {c for n in use.narrowed for c in n.clusters}
    if clusters:
        parts.append(f"{plural(len(clusters), 'cluster')} left out by {use.label}")
    return parts


def settings_head(use: SettingsUse) -> str:
    """"settings: .topogate.yaml", with what --changed-since took from the ref."""
    text = f"settings: {use.file or 'no settings file here'}"
    if use.said:
        text += f"; {use.said}"
    return text if use.narrowed else f"{text}; no setting narrowed this check"


def narrowed_value(n: Narrowed) -> str:
    values = ", ".join(n.value)
    return f"{n.setting}: {n.glob}: {values}" if n.glob else f"{n.setting}: {values}"


def narrowed_effect(n: Narrowed) -> str:
    """What one setting left out: "hid 2 findings (2 errors: TG101)", "left 1 path unread (a.yaml)"."""
    if n.setting == "exclude":
        shown = ", ".join(n.paths[:5]) + (f" and {len(n.paths) - 5} more" if len(n.paths) > 5 else "")
        return f"left {plural(len(n.paths), 'path')} unread" + (f" ({shown})" if n.paths else "")
    if n.setting == "cluster":
        return (f"left out {plural(len(n.clusters), 'cluster')}" + (f" ({', '.join(n.clusters)})" if n.clusters else "")
                + f", {plural(n.objects, 'object')} of them not analysed")
    if not n.findings:
        return "hid no finding"
    return f"hid {plural(len(n.findings), 'finding')} ({hidden_breakdown(n.findings)})"


def narrowed_line(n: Narrowed) -> str:
    return f"{n.pos}: {narrowed_value(n)}: {narrowed_effect(n)}"


def settings_lines(result: CheckResult) -> list[str]:
    """The settings file used, then one line per setting that narrowed the check (none when no
    file was used: such a report keeps its bytes)."""
    use = result.settings
    if use is None:
        return []
    return [settings_head(use), *(f"  {narrowed_line(n)}" for n in use.narrowed)]


def _counted(findings: Sequence[Finding]) -> dict[str, Any]:
    by_rule: dict[str, int] = {}
    for f in findings:
        by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
    return {"count": len(findings), "errors": sum(1 for f in findings if f.severity == "error"),
            "warnings": sum(1 for f in findings if f.severity == "warning"), "rules": by_rule}


def settings_dict(use: SettingsUse) -> dict[str, Any]:
    """The JSON shape of the settings a check used (docs/cli.md, "The settings in the reports")."""
    out: dict[str, Any] = {"file": use.file}
    if use.base and use.taken:
        out["base"] = use.base
        out["taken"] = list(use.taken)
    out["hidden"] = _counted(use.hidden)
    narrowed = []
    for n in use.narrowed:
        d: dict[str, Any] = {"setting": n.setting}
        if n.glob:
            d["glob"] = n.glob
        d["value"] = list(n.value)
        d["file"] = n.pos.file.removeprefix(f"{n.ref}:") if n.ref else n.pos.file
        if n.ref:
            d["ref"] = n.ref
        d["line"], d["column"] = n.pos.line, n.pos.column
        if n.setting == "exclude":
            d["paths"] = list(n.paths)
        elif n.setting == "cluster":
            d["clusters"], d["objects"] = list(n.clusters), n.objects
        else:
            d["findings"] = _counted(n.findings)
        narrowed.append(d)
    out["narrowed"] = narrowed
    return out


def suppressed_lines(result: CheckResult) -> list[str]:
    """One line per honoured suppression: what was hidden, where, and the reason given."""
    return [f"suppressed: {s.rule} on {s.object} ({s.pos.file}:{s.pos.line}): {s.reason}"
            for s in result.suppressed]


def baseline_line(use: BaselineUse) -> str:
    """One line on the baseline a check used: how many findings it listed, and what of it no
    longer applies or was not honoured."""
    where = f"{use.ref}:{use.file}" if use.ref else use.file
    parts = [f"baseline {where}: {plural(len(use.findings), 'finding')} baselined "
             f"({hidden_breakdown(use.findings)})" if use.findings else f"baseline {where}: nothing baselined"]
    if use.unmatched:
        parts.append(f"{plural(use.unmatched, 'entry', 'entries')} no finding matches any more (run `topogate "
                     "baseline` to drop them)")
    if use.refused:
        first = use.refused[0]
        parts.append(f"{plural(len(use.refused), 'entry', 'entries')} the pull request added not honoured "
                     f"({first.file}:{first.line} first)")
    return "; ".join(parts)


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
