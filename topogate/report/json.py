"""The machine-readable report: DESIGN.md's shape exactly, plus an additive `summary`.

Field names are a contract with tests outside the repo; JobMap.as_dict() owns the workload
shape, this module only orders things so the same map always gives the same bytes.
"""

from __future__ import annotations

import json
from typing import Any

from topogate.analysis.result import CheckResult, JobMap
from topogate.policies.selection import deselected
from topogate.report.base import Reporter, settings_dict, sorted_findings, sorted_jobs


def _blocked_key(b: dict[str, Any]) -> tuple[str, ...]:
    return tuple(str(b.get(k, "")) for k in ("from", "to", "fromZone", "toZone", "protocol")) + (
        f"{b.get('port', 0):08d}",
    )


def workload_dict(job: JobMap) -> dict[str, Any]:
    d = job.as_dict()
    # The analysis emits flows in its own order; sort so the report does not depend on it.
    d["blocked"] = sorted(d["blocked"], key=_blocked_key)
    return d


def report_dict(result: CheckResult) -> dict[str, Any]:
    out: dict[str, Any] = {
        "findings": [f.as_dict() for f in sorted_findings(result)],
        "workloads": [workload_dict(j) for j in sorted_jobs(result)],
        "summary": {"errors": result.errors, "warnings": result.warnings},
    }
    if result.suppressed:
        # Additive, and only when something was suppressed, so existing reports keep their bytes.
        out["summary"]["suppressed"] = [
            {"rule": s.rule, "object": s.object, "reason": s.reason, "file": s.pos.file,
             "line": s.pos.line} for s in result.suppressed]
    if result.waived:
        out["summary"]["waived"] = [
            {"finding": w.finding.as_dict(), "reason": w.waiver.reason,
             "expires": w.waiver.expires.isoformat() if w.waiver.expires else None,
             "file": w.waiver.pos.file, "line": w.waiver.pos.line} for w in result.waived]
    if result.baseline is not None:
        # Additive, only with a baseline file: the findings it listed and what of it is stale.
        b = result.baseline
        out["summary"]["baselined"] = {
            "file": b.file, "ref": b.ref or None, "count": len(b.findings),
            "findings": [f.as_dict() for f in sorted(b.findings)], "unmatched": b.unmatched,
            "refused": [{"file": p.file, "line": p.line} for p in b.refused]}
    hidden = deselected(result)
    if hidden:
        # Additive, only when --select/--ignore left findings out: how many, of which rules.
        by_rule: dict[str, int] = {}
        for f in hidden:
            by_rule[f.rule] = by_rule.get(f.rule, 0) + 1
        out["summary"]["deselected"] = {
            "count": len(hidden), "errors": sum(1 for f in hidden if f.severity == "error"),
            "warnings": sum(1 for f in hidden if f.severity == "warning"), "rules": by_rule}
    if result.settings is not None:
        # Additive, only when a settings file was used: the file, and what each setting left out.
        out["summary"]["settings"] = settings_dict(result.settings)
    if result.scope is not None:
        # Additive, only with --changed-since: what the run covered.
        out["summary"]["changedSince"] = {"ref": result.scope.since, "checked": result.scope.checked,
                                          "detail": result.scope.text}
    return out


class JsonReporter(Reporter):
    name = "json"
    description = "findings and workloads as JSON (stable field names)"

    def render(self, result: CheckResult) -> str:
        return json.dumps(report_dict(result), indent=2, ensure_ascii=False) + "\n"
