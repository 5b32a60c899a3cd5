"""GitHub Actions workflow commands: each finding becomes an annotation on the PR's diff.

Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message
% CR LF are percent-encoded; in property values ':' and ',' are too, as they delimit
properties.
"""

from __future__ import annotations

from topogate.analysis.result import CheckResult
from topogate.core.escape import one_line
from topogate.core.findings import Finding
from topogate.report.base import (
    Reporter,
    baseline_line,
    counts_line,
    has_file,
    settings_lines,
    sorted_findings,
)

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}
# GitHub shows at most this many annotations of each kind (error, warning, notice) per step, and
# drops the rest without a word (docs.github.com: "Workflow commands", annotation limits).
ANNOTATIONS_PER_STEP = 10


def escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(s: str) -> str:
    return escape_data(s).replace(":", "%3A").replace(",", "%2C")


def annotation(f: Finding) -> str:
    props: list[tuple[str, str]] = []
    if has_file(f.file):
        props += [("file", f.file), ("line", str(f.line)), ("col", str(f.column))]
    props.append(("title", f"{f.rule} {f.name}"))
    prop_text = ",".join(f"{k}={escape_property(v)}" for k, v in props)
    message = f.message if has_file(f.file) else f"{f.object}: {f.message}"
    return f"::{COMMANDS.get(f.severity, 'warning')} {prop_text}::{escape_data(message)}"


class GithubReporter(Reporter):
    name = "github"
    description = "GitHub Actions annotations (::error file=..,line=..)"

    def render(self, result: CheckResult) -> str:
        findings = sorted_findings(result)
        lines = [annotation(f) for f in findings]
        # The settings file and what it left out, as plain log lines (one_line: a pattern or a
        # file name is the pull request's, and must not become a workflow command).
        lines += [f"topogate: {one_line(s.strip())}" for s in settings_lines(result)]
        if result.baseline is not None:
            lines.append(f"topogate: {one_line(baseline_line(result.baseline))}")
        # A plain last line for the log: annotations are capped per step by GitHub, the
        # count is not.
        lines.append(f"topogate: {counts_line(result)}")
        cut = cut_annotations(findings)
        if cut:
            lines.append(f"topogate: GitHub shows at most {ANNOTATIONS_PER_STEP} annotations of each kind "
                         f"per step: {cut} not shown on the diff (every finding is in this log); for "
                         "all of them as code-scanning alerts upload SARIF (docs/gitops.md)")
        return "\n".join(lines) + "\n"


def cut_annotations(findings: list[Finding]) -> str:
    """What GitHub will not show, by kind ("14 errors, 2 warnings"); empty when nothing is cut."""
    parts = []
    for severity, word in (("error", "error"), ("warning", "warning"), ("info", "notice")):
        n = sum(1 for f in findings if f.severity == severity) - ANNOTATIONS_PER_STEP
        if n > 0:
            parts.append(f"{n} {word}{'s' if n != 1 else ''}")
    return ", ".join(parts)
