"""Human output: compiler-style finding lines (editors and terminals make them clickable),
then one short summary per workload, then the counts.

How many workload summaries: every one in a small run (up to SMALL_RUN workloads) or with
`-v`; at scale only the failing ones and one line for the rest, since 6,000 lines of "colocated,
schedulable" bury the one that is not; none with `--quiet` (findings and the count line only).
"""

from __future__ import annotations

from topogate.analysis.result import CheckResult, Flow, GroupMap, JobMap
from topogate.core.findings import Finding
from topogate.report.base import (
    Reporter,
    baseline_line,
    counts_line,
    flow_key,
    has_file,
    port_text,
    settings_lines,
    sorted_findings,
    sorted_jobs,
    suppressed_lines,
    waived_lines,
    zone_choice,
    zone_choice_text,
)

INDENT = "    "
SMALL_RUN = 20  # workloads: up to this many, every summary is shown by default
QUIET, DEFAULT, VERBOSE = -1, 0, 1


def finding_line(f: Finding) -> str:
    where = f"{f.file}:{f.line}:{f.column}" if has_file(f.file) else f.object
    first, *rest = f.message.splitlines() or [""]
    # Continuation lines are indented so `grep TG101` style tools still see one finding
    # per unindented line.
    detail = f.detail.splitlines()
    return "\n".join([f"{where}: {f.severity} {f.rule} {f.name}: {first}",
                      *(INDENT + r for r in rest), *(INDENT + d for d in detail)])


def group_line(g: GroupMap, with_zones: bool = True) -> str:
    gpus = f" ({g.gpus_per_pod} GPU/pod)" if g.gpus_per_pod else ""
    zones = ", ".join(g.zones) if g.zones else "nowhere (no feasible node)"
    return f"  {g.name} x{g.pods}{gpus}: {zones}" if with_zones else f"  {g.name} x{g.pods}{gpus}"


def blocked_line(f: Flow) -> str:
    return (f"  blocked: {f.src}@{f.src_zone or '?'} -> {f.dst}@{f.dst_zone or '?'} "
            f"{port_text(f)} ({f.purpose}): {' '.join(f.reason.split())}")


def job_summary(job: JobMap) -> str:
    choice = zone_choice(job)
    state = ", ".join([
        f"colocated ({zone_choice_text(choice)})" if choice else
        "colocated" if job.colocated else "NOT colocated",
        "schedulable" if job.schedulable else "NOT schedulable",
    ])
    lines = [f"{job.object} (cluster {job.cluster}): {state}"]
    if job.kueue:
        lines.append(f"  placed by {job.kueue}")
    lines += [group_line(g, with_zones=not choice) for g in job.groups]
    lines += [blocked_line(f) for f in sorted(job.blocked, key=flow_key)]
    return "\n".join(lines)


def job_fails(job: JobMap, failing_objects: set[str]) -> bool:
    return (not job.colocated or not job.schedulable or bool(job.blocked)
            or job.object in failing_objects)


class TextReporter(Reporter):
    name = "text"
    description = "file:line:column lines for people, then a summary per workload"

    def __init__(self, *, strict: bool = False, verbosity: int = DEFAULT) -> None:
        super().__init__(strict=strict)
        self.verbosity = verbosity

    def render(self, result: CheckResult) -> str:
        blocks: list[str] = []
        findings = sorted_findings(result)
        if findings:
            blocks.append("\n".join(finding_line(f) for f in findings))
        jobs = sorted_jobs(result)
        if jobs and self.verbosity > QUIET:
            blocks.append(self.summaries(result, jobs))
        if result.suppressed:
            blocks.append("\n".join(suppressed_lines(result)))
        if result.waived:
            blocks.append("\n".join(waived_lines(result)))
        if result.baseline is not None:
            blocks.append(baseline_line(result.baseline))
        if result.settings is not None:
            blocks.append("\n".join(settings_lines(result)))
        verdict = "FAIL" if self.failed(result) else "ok"
        blocks.append(f"{verdict}: {counts_line(result)}")
        return "\n\n".join(blocks) + "\n"

    def summaries(self, result: CheckResult, jobs: list[JobMap]) -> str:
        if self.verbosity >= VERBOSE or len(jobs) <= SMALL_RUN:
            return "\n".join(job_summary(j) for j in jobs)
        severities = ("error", "warning") if self.strict else ("error",)
        failing_objects = {f.object for f in result.findings if f.severity in severities}
        shown = [j for j in jobs if job_fails(j, failing_objects)]
        rest = len(jobs) - len(shown)
        lines = [job_summary(j) for j in shown]
        if rest:
            other = "other " if shown else ""
            lines.append(f"{rest:,} {other}workload{'s' if rest != 1 else ''} colocated and "
                         "schedulable with no blocked flow (-v lists every workload)")
        return "\n".join(lines)
