"""GitHub Actions workflow commands: each finding becomes an annotation on the PR's diff.

Escaping follows the runner's rules (actions/toolkit `command.ts`): in the message
% CR LF are percent-encoded; in property values ':' and ',' are too, as they delimit
properties.
"""

from __future__ import annotations

from topogate.analysis.result import CheckResult
from topogate.core.findings import Finding
from topogate.report.base import Reporter, counts_line, has_file, sorted_findings

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


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
        lines = [annotation(f) for f in sorted_findings(result)]
        # A plain last line for the log: annotations are capped per step by GitHub, the
        # count is not.
        lines.append(f"topogate: {counts_line(result)}")
        return "\n".join(lines) + "\n"
