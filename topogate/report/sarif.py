"""SARIF 2.1.0, for GitHub code scanning and any other SARIF viewer: the one SARIF writer.

`sarif_log` and `sarif_text` make every SARIF document topogate writes (check's findings here,
`diff`'s connectivity notes in topogate.diff.render): one schema, one run shape, one
serialisation (tests/report/test_report_pipeline.py fails on a second writer).

Every registered rule is listed in tool.driver.rules (viewers show rule help even for rules
that found nothing this run); each result points at its rule by id and by index.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
from typing import Any
from urllib.parse import quote

from topogate.analysis.result import CheckResult, RuleInfo, SettingsUse
from topogate.core.findings import Finding
from topogate.core.version import rule_anchor, rules_url, version
from topogate.report.base import (
    Reporter,
    has_file,
    narrowed_effect,
    narrowed_value,
    settings_dict,
    settings_head,
    sorted_findings,
)

SCHEMA_URI = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
SRCROOT = "%SRCROOT%"
LEVELS = {"error": "error", "warning": "warning", "info": "note"}
FINGERPRINT = "topogate/v1"


def level(severity: str) -> str:
    return LEVELS.get(severity, "warning")


def artifact_location(file: str) -> dict[str, str]:
    """A URI for a path as the user gave it: relative ones stay relative to the checkout
    (%SRCROOT%) so code scanning can map them onto the repository's files."""
    path = file.replace("\\", "/")
    if path.startswith("/"):
        return {"uri": "file://" + quote(posixpath.normpath(path))}
    path = posixpath.normpath(path)
    return {"uri": quote(path), "uriBaseId": SRCROOT}


def rule_descriptor(rule: RuleInfo, docs: str | None = None) -> dict[str, Any]:
    """A rule as SARIF describes one; `docs`: the URL of docs/rules.md, for its helpUri."""
    doc = rule.doc.strip() or rule.summary
    out: dict[str, Any] = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary or rule.name},
        "fullDescription": {"text": doc},
        "help": {"text": doc, "markdown": doc},
        "defaultConfiguration": {"level": level(rule.severity)},
        "properties": {"tags": ["topogate"]},
    }
    if docs:
        out["helpUri"] = f"{docs}#{rule_anchor(rule.id, rule.name)}"
    return out


def driver_dict(rules: list[dict[str, Any]], tool_version: str | None = None) -> dict[str, Any]:
    """The tool as code scanning shows it: its name, version (the installed topogate's by
    default: the same version writes the same bytes) and, where known, where its rules are."""
    ver = tool_version or version()
    driver: dict[str, Any] = {"name": "topogate", "version": ver, "semanticVersion": ver, "rules": rules}
    docs = rules_url()
    if docs:
        driver["informationUri"] = docs
    return driver


def _rules(result: CheckResult) -> list[RuleInfo]:
    """Registered rules plus any rule a finding names that is not registered (the engine's
    own findings), so every result has a valid ruleIndex."""
    rules = {r.id: r for r in result.rules}
    hidden = [f for f, _ in result.annotated] + [w.finding for w in result.waived]
    hidden += list(result.baseline.findings) if result.baseline is not None else []
    for f in (*result.findings, *hidden):
        if f.rule not in rules:
            rules[f.rule] = RuleInfo(id=f.rule, name=f.name, severity=f.severity, summary=f.name, doc="")
    return [rules[k] for k in sorted(rules)]


def fingerprint(f: Finding) -> str:
    # Line-independent, so a finding keeps its identity (and its dismissal in code scanning)
    # when unrelated lines above it move.
    key = "\0".join((f.rule, f.object, f.file, f.message))
    return hashlib.sha256(key.encode()).hexdigest()


def result_dict(f: Finding, index: dict[str, int]) -> dict[str, Any]:
    res: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": level(f.severity),
        "message": {"text": f.message or f.name},
        "partialFingerprints": {FINGERPRINT: fingerprint(f)},
    }
    location: dict[str, Any] = {"logicalLocations": [{"fullyQualifiedName": f.object}]}
    if has_file(f.file):
        location["physicalLocation"] = {
            "artifactLocation": artifact_location(f.file),
            "region": {"startLine": max(f.line, 1), "startColumn": max(f.column, 1)},
        }
    res["locations"] = [location]
    return res


def _suppressed(f: Finding, index: dict[str, int], kind: str, reason: str, file: str,
                line: int) -> dict[str, Any]:
    """A hidden finding stays in the log, marked suppressed, so code scanning shows it as
    dismissed-by-source rather than fixed."""
    res = result_dict(f, index)
    sup: dict[str, Any] = {"kind": kind, "status": "accepted", "justification": reason}
    if has_file(file):
        sup["location"] = {"physicalLocation": {"artifactLocation": artifact_location(file),
                                                "region": {"startLine": max(line, 1)}}}
    res["suppressions"] = [sup]
    return res


def _results(result: CheckResult, index: dict[str, int]) -> list[dict[str, Any]]:
    out = [result_dict(f, index) for f in sorted_findings(result)]
    hidden = [(f, "inSource", s.reason, s.pos.file, s.pos.line) for f, s in result.annotated]
    hidden += [(w.finding, "external", w.waiver.reason, w.waiver.pos.file, w.waiver.pos.line)
               for w in result.waived]
    if result.baseline is not None:  # the baseline file holds no line of its own per finding
        hidden += [(f, "external", f"in the baseline {result.baseline.file}", result.baseline.file, 1)
                   for f in result.baseline.findings]
    out += [_suppressed(f, index, kind, reason, file, line)
            for f, kind, reason, file, line in sorted(hidden, key=lambda h: h[0])]
    return out


def sarif_log(driver: dict[str, Any], results: list[dict[str, Any]],
              invocations: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A SARIF 2.1.0 log of one run of `driver` (driver_dict) with `results`; `invocations`
    (the settings a check used) when there are some."""
    run: dict[str, Any] = {"tool": {"driver": driver}}
    if invocations is not None:
        run["invocations"] = invocations
    # Columns come from YAML marks, which count characters, not UTF-16 units.
    run["columnKind"] = "unicodeCodePoints"
    run["results"] = results
    return {"$schema": SCHEMA_URI, "version": "2.1.0", "runs": [run]}


def sarif_text(log: dict[str, Any]) -> str:
    """A SARIF log as its file's bytes: indented, non-ASCII kept, one final newline."""
    return json.dumps(log, indent=2, ensure_ascii=False) + "\n"


def sarif_dict(result: CheckResult, tool_version: str | None = None) -> dict[str, Any]:
    rules = _rules(result)
    index = {r.id: i for i, r in enumerate(rules)}
    docs = rules_url()
    driver = driver_dict([rule_descriptor(r, docs) for r in rules], tool_version)
    return sarif_log(driver, _results(result, index),
                     [invocation(result.settings)] if result.settings is not None else None)


def invocation(use: SettingsUse) -> dict[str, Any]:
    """The settings file used, as SARIF says a tool's configuration: one configuration
    notification per setting that narrowed the check, at its line (a file read at a git ref has
    no place in the checkout: its notification has no location), and the same data as the JSON
    report's summary.settings in the invocation's properties."""
    notes = []
    for n in use.narrowed:
        note: dict[str, Any] = {"descriptor": {"id": f"topogate/settings/{n.setting}"}, "level": "note",
                                "message": {"text": f"{narrowed_value(n)}: {narrowed_effect(n)}"}}
        if not n.ref and has_file(n.pos.file):
            note["locations"] = [{"physicalLocation": {
                "artifactLocation": artifact_location(n.pos.file),
                "region": {"startLine": max(n.pos.line, 1), "startColumn": max(n.pos.column, 1)}}}]
        notes.append(note)
    return {"executionSuccessful": True, "toolConfigurationNotifications": notes,
            "properties": {"settings": settings_dict(use), "summary": settings_head(use)}}


class SarifReporter(Reporter):
    name = "sarif"
    description = "SARIF 2.1.0 for code scanning"

    def __init__(self, *, strict: bool = False, tool_version: str | None = None) -> None:
        super().__init__(strict=strict)
        self.tool_version = tool_version  # None: the installed topogate's

    def render(self, result: CheckResult) -> str:
        return sarif_text(sarif_dict(result, self.tool_version))


__all__ = ["SarifReporter", "artifact_location", "driver_dict", "sarif_dict", "sarif_log", "sarif_text"]
