"""A pull-request comment / job summary: the verdict first, then what to fix, then pictures
of the jobs that are in trouble. Clean jobs get one table row each, not a picture: a PR that
touches fifty healthy jobs should still fit on a screen (and under GitHub's comment limit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from topogate.analysis.result import CheckResult, JobMap, SettingsUse
from topogate.core.findings import Finding
from topogate.inventory.model import Inventory
from topogate.report.base import (
    Reporter,
    baseline_line,
    counts_line,
    flow_key,
    has_file,
    narrowed_effect,
    narrowed_value,
    port_text,
    settings_head,
    sorted_findings,
    sorted_jobs,
    waiver_text,
    zone_choice,
    zone_choice_text,
)
from topogate.report.mermaid import job_diagram
from topogate.report.openings import Opening, job_openings, network_zones

# GitHub rejects comments over 65,536 characters; these caps keep a huge run well below it.
MAX_FINDING_ROWS = 100
MAX_DIAGRAMS = 10
MAX_BLOCKED_LINES = 10
MAX_DETAILS = 20


def cell(s: str) -> str:
    """Text safe inside a GFM table cell (and inert as HTML: a PR comment renders HTML).
    Brackets are escaped: a `[text](url)` written in a file name or a quoted value would be
    a link in the pull request's comment (phishing)."""
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
    s = s.replace("[", "&#91;").replace("]", "&#93;")
    return "<br>".join(line.strip() for line in s.strip().splitlines())


def where(f: Finding) -> str:
    return code_safe(f"{f.file}:{f.line}" if has_file(f.file) else f.object)


def code_safe(text: str) -> str:
    # A file name is the pull request's: its backticks and emphasis marks are shown as written.
    return cell(text).replace("`", "&#96;").replace("*", "&#42;").replace("_", "&#95;")


def findings_table(findings: list[Finding]) -> list[str]:
    lines = ["| Rule | Severity | Where | Message |", "| --- | --- | --- | --- |"]
    for f in findings[:MAX_FINDING_ROWS]:
        lines.append(f"| {cell(f.rule)} {cell(f.name)} | {cell(f.severity)} | {where(f)} | {cell(f.message)} |")
    if len(findings) > MAX_FINDING_ROWS:
        lines += ["", f"…and {len(findings) - MAX_FINDING_ROWS} more findings (see the text or SARIF report)."]
    return lines


def details(findings: list[Finding]) -> list[str]:
    """Findings that carry preformatted detail (TG002's diffs), each in a fenced block."""
    shown = [f for f in findings if f.detail][:MAX_DETAILS]
    lines: list[str] = []
    for f in shown:
        # The diff shows committed files, which a pull request controls: the fence is longer
        # than any backtick run inside, so nothing in it can close the block and become markup.
        fence = "`" * max(3, 1 + max((len(r) for r in re.findall(r"`+", f.detail)), default=0))
        lines += [f"<details><summary>{where(f)}: {cell(f.rule)} {cell(f.name)}</summary>", "",
                  f"{fence}diff", f.detail.rstrip("\n"), fence, "", "</details>", ""]
    rest = sum(1 for f in findings if f.detail) - len(shown)
    if rest > 0:
        lines += [f"…and {rest} more (see the text report).", ""]
    return lines


def in_trouble(job: JobMap) -> bool:
    return bool(job.blocked) or not job.colocated or not job.schedulable


def job_section(job: JobMap, picture: bool, openings: tuple[Opening, ...] = (),
                zones: Mapping[str, str] | None = None) -> list[str]:
    choice = zone_choice(job)
    state = " · ".join([
        f"colocated ({zone_choice_text(choice)})" if choice else
        "colocated" if job.colocated else "**can be split across zones**",
        "schedulable" if job.schedulable else "**not schedulable**",
    ])
    groups = ", ".join(f"{g.name} ×{g.pods}" if choice else
                       f"{g.name} ×{g.pods} ({', '.join(g.zones) or 'nowhere'})" for g in job.groups)
    lines = [f"#### {cell(job.object)} · cluster {cell(job.cluster)}", "", f"{state} · {cell(groups)}", ""]
    blocked = sorted(job.blocked, key=flow_key)
    if blocked:
        lines.append("Blocked flows:")
        for f in blocked[:MAX_BLOCKED_LINES]:
            lines.append(f"- {cell(f.src)} ({cell(f.src_zone)}) → {cell(f.dst)} ({cell(f.dst_zone)}) "
                         f"{port_text(f)} {cell(f.purpose)}: {cell(f.reason)}")
        if len(blocked) > MAX_BLOCKED_LINES:
            lines.append(f"- …and {len(blocked) - MAX_BLOCKED_LINES} more")
        lines.append("")
    if picture:
        lines += ["```mermaid", job_diagram(job, openings, zones).rstrip("\n"), "```", ""]
    return lines


def _zone_cell(job: JobMap) -> str:
    choice = zone_choice(job)
    return f"one of {', '.join(choice)}" if choice else ", ".join(job.zones)


def clean_table(jobs: list[JobMap]) -> list[str]:
    lines = [f"<details><summary>{len(jobs)} clean workload{'s' if len(jobs) != 1 else ''}: "
             "colocated, schedulable, no blocked flow</summary>", "",
             "| Workload | Cluster | Zone |", "| --- | --- | --- |"]
    lines += [f"| {cell(j.object)} | {cell(j.cluster)} | {cell(_zone_cell(j))} |" for j in jobs]
    return [*lines, "", "</details>", ""]


def settings_section(use: SettingsUse) -> list[str]:
    """The settings file used, and a row per setting that narrowed the check."""
    lines = ["### Settings", "", cell(settings_head(use)), ""]
    if use.narrowed:
        lines += ["| Setting | Where | Left out |", "| --- | --- | --- |",
                  *(f"| {cell(narrowed_value(n))} | {code_safe(str(n.pos))} | {cell(narrowed_effect(n))} |"
                    for n in use.narrowed), ""]
    return lines


class MarkdownReporter(Reporter):
    name = "markdown"
    description = "a PR comment or job summary, with mermaid pictures of jobs in trouble"

    def __init__(self, *, strict: bool = False, inventory: Inventory | None = None) -> None:
        super().__init__(strict=strict)
        # The inventory the result was checked against: the pictures draw each job's doors,
        # scrapers and egress from it (topogate.report.openings). None: the flows alone.
        self.inventory = inventory

    def render(self, result: CheckResult) -> str:
        failed = self.failed(result)
        lines = [f"## {'❌' if failed else '✅'} topogate check {'failed' if failed else 'passed'}", "",
                 counts_line(result), ""]
        findings = sorted_findings(result)
        if findings:
            lines += ["### Findings", "", *findings_table(findings), "", *details(findings)]
        if result.suppressed:
            lines += ["### Suppressed by annotation", "", "| Rule | Object | Reason |", "| --- | --- | --- |",
                      *(f"| {cell(s.rule)} | {cell(s.object)} | {cell(s.reason)} |"
                        for s in result.suppressed), ""]
        if result.waived:
            lines += ["### Waived by the inventory", "", "| Rule | Object | Waiver | Reason |", "| --- | --- | --- | --- |",
                      *(f"| {cell(w.finding.rule)} | {cell(w.finding.object)} | "
                        f"{cell(f'{w.waiver.pos.file}:{w.waiver.pos.line}')} | {cell(waiver_text(w.waiver))} |"
                        for w in result.waived), ""]
        if result.baseline is not None:
            lines += [f"*{cell(baseline_line(result.baseline))}*", ""]
        if result.settings is not None:
            lines += settings_section(result.settings)
        jobs = sorted_jobs(result)
        trouble = [j for j in jobs if in_trouble(j)]
        clean = [j for j in jobs if not in_trouble(j)]
        if trouble:
            lines += ["### Workloads that need attention", ""]
            for i, j in enumerate(trouble):
                lines += job_section(j, picture=i < MAX_DIAGRAMS,
                                     openings=job_openings(self.inventory, j) if i < MAX_DIAGRAMS else (),
                                     zones=network_zones(self.inventory, j))
            if len(trouble) > MAX_DIAGRAMS:
                lines += [f"Pictures are shown for the first {MAX_DIAGRAMS}; "
                          "`topogate explain INVENTORY WORKLOAD --format mermaid` draws any job.", ""]
        if clean:
            lines += ["### Clean workloads", "", *clean_table(clean)]
        return "\n".join(lines).rstrip("\n") + "\n"


__all__ = ["MarkdownReporter", "cell"]
