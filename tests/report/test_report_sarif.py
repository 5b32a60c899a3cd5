"""SARIF 2.1.0: the parts of the format GitHub code scanning reads, checked explicitly.

No PyPI package ships the OASIS schema unedited and the project vendors no upstream files, so
`SARIF_SUBSET` below is our own JSON Schema for the subset of SARIF 2.1.0 that topogate writes
(written from the specification's field definitions: version, runs[].tool.driver.rules,
results[] with ruleId/ruleIndex/level/message/locations/regions). The structural tests also check
what a schema cannot express (rule indexes that point at the right rule, relative URIs with
%SRCROOT%, one rule per id).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_support import CLEAN_RESULT, FINDINGS, RULES, result

from topogate.report.sarif import SarifReporter, artifact_location

_MESSAGE = {"type": "object", "required": ["text"], "properties": {"text": {"type": "string"}}}
_REGION = {"type": "object", "properties": {"startLine": {"type": "integer", "minimum": 1},
                                            "startColumn": {"type": "integer", "minimum": 1}}}
_LOCATION = {"type": "object", "properties": {"physicalLocation": {
    "type": "object", "required": ["artifactLocation"],
    "properties": {"artifactLocation": {"type": "object", "required": ["uri"],
                                        "properties": {"uri": {"type": "string", "minLength": 1},
                                                       "uriBaseId": {"type": "string"}}},
                   "region": _REGION}}}}
_RULE = {"type": "object", "required": ["id"], "properties": {
    "id": {"type": "string"}, "name": {"type": "string"}, "shortDescription": _MESSAGE,
    "fullDescription": _MESSAGE,
    "defaultConfiguration": {"type": "object", "properties": {
        "level": {"enum": ["none", "note", "warning", "error"]}}}}}
_RESULT = {"type": "object", "required": ["message"], "properties": {
    "ruleId": {"type": "string"}, "ruleIndex": {"type": "integer", "minimum": 0},
    "level": {"enum": ["none", "note", "warning", "error"]}, "message": _MESSAGE,
    "locations": {"type": "array", "items": _LOCATION}}}
SARIF_SUBSET = {
    "type": "object", "required": ["version", "runs"],
    "properties": {
        "version": {"const": "2.1.0"}, "$schema": {"type": "string"},
        "runs": {"type": "array", "minItems": 1, "items": {
            "type": "object", "required": ["tool"],
            "properties": {
                "tool": {"type": "object", "required": ["driver"], "properties": {"driver": {
                    "type": "object", "required": ["name"],
                    "properties": {"name": {"type": "string"}, "rules": {"type": "array", "items": _RULE}}}}},
                "results": {"type": "array", "items": _RESULT}}}}}}


def render(r: Any = None, **kw: Any) -> dict[str, Any]:
    return json.loads(SarifReporter(**kw).render(r or result()))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(SARIF_SUBSET)
    return jsonschema.Draft202012Validator(SARIF_SUBSET)


@pytest.mark.parametrize("case", ["findings", "clean", "versioned"])
def test_valid_against_sarif_subset(validator: jsonschema.Draft202012Validator, case: str) -> None:
    doc = {"findings": render(), "clean": render(CLEAN_RESULT),
           "versioned": render(tool_version="0.1.0")}[case]
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_schema_catches_a_broken_log(validator: jsonschema.Draft202012Validator) -> None:
    # Guard against a validator that accepts anything (e.g. a schema that failed to load).
    doc = render()
    doc["runs"][0]["results"][0]["level"] = "fatal"
    del doc["runs"][0]["tool"]["driver"]["name"]
    assert len(list(validator.iter_errors(doc))) >= 2


def test_required_structure_explicitly() -> None:
    doc = render()
    assert doc["version"] == "2.1.0"
    assert doc["$schema"].endswith("sarif-schema-2.1.0.json")
    (run,) = doc["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] == "topogate"
    ids = [r["id"] for r in driver["rules"]]
    assert len(ids) == len(set(ids))
    # every registered rule, found or not, plus the unregistered one a finding names
    assert set(ids) == {r.id for r in RULES} | {"TG001"}
    for rule in driver["rules"]:
        assert set(rule) >= {"id", "name", "shortDescription", "fullDescription", "help",
                             "defaultConfiguration"}
        assert rule["help"]["markdown"] and rule["shortDescription"]["text"]
        assert rule["defaultConfiguration"]["level"] in {"error", "warning", "note"}
    hard = driver["rules"][ids.index("TG101")]
    assert hard["help"]["markdown"].startswith("A required flow is denied")
    assert "```yaml" in hard["help"]["markdown"]
    assert driver["rules"][ids.index("TG120")]["defaultConfiguration"]["level"] == "note"

    results = run["results"]
    assert len(results) == len(FINDINGS)
    for res in results:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] in {"error", "warning", "note"}
        assert res["message"]["text"]
        assert res["partialFingerprints"]


def test_locations() -> None:
    by_rule = {r["ruleId"]: r for r in render()["runs"][0]["results"]}
    loc = by_rule["TG101"]["locations"][0]
    assert loc["physicalLocation"] == {
        "artifactLocation": {"uri": "jobs/llama.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 30, "startColumn": 7},
    }
    assert loc["logicalLocations"] == [{"fullyQualifiedName": "PyTorchJob/ml-team/llama-ft"}]
    assert by_rule["TG101"]["level"] == "error"
    assert by_rule["TG110"]["level"] == "warning"
    assert by_rule["TG120"]["level"] == "note"
    # no file known: no physical location rather than a made-up one
    assert "physicalLocation" not in by_rule["TG120"]["locations"][0]
    # absolute path: a file URI, percent-encoded, without a base
    assert by_rule["TG001"]["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "file:///abs/path/with%20space.yaml"}


@pytest.mark.parametrize(("given", "expected"), [
    ("jobs/a.yaml", {"uri": "jobs/a.yaml", "uriBaseId": "%SRCROOT%"}),
    ("./jobs/a.yaml", {"uri": "jobs/a.yaml", "uriBaseId": "%SRCROOT%"}),
    ("jobs\\win.yaml", {"uri": "jobs/win.yaml", "uriBaseId": "%SRCROOT%"}),
    ("jobs/a b#c.yaml", {"uri": "jobs/a%20b%23c.yaml", "uriBaseId": "%SRCROOT%"}),
    ("/srv/repo/a.yaml", {"uri": "file:///srv/repo/a.yaml"}),
])
def test_artifact_location(given: str, expected: dict[str, str]) -> None:
    assert artifact_location(given) == expected


def test_fingerprint_ignores_line_moves() -> None:
    from dataclasses import replace

    moved = result(findings=tuple(replace(f, line=f.line + 10) for f in FINDINGS))
    fp = [r["partialFingerprints"] for r in render()["runs"][0]["results"]]
    fp_moved = [r["partialFingerprints"] for r in render(moved)["runs"][0]["results"]]
    assert fp == fp_moved


def test_the_driver_names_its_version_and_each_rule_its_documentation(monkeypatch: pytest.MonkeyPatch) -> None:
    from importlib import metadata

    from topogate.core.version import rule_anchor
    from topogate.policies.engine import all_rules

    driver = render()["runs"][0]["tool"]["driver"]
    assert driver["version"] == driver["semanticVersion"] == metadata.version("topogate")
    assert render(tool_version="1.2.3")["runs"][0]["tool"]["driver"]["semanticVersion"] == "1.2.3"
    # where the rules are documented is known only where the environment says (the Action)
    assert "informationUri" not in driver and not any("helpUri" in r for r in driver["rules"])
    url = "https://github.com/acme/topogate/blob/v1.2.0/docs/rules.md"
    monkeypatch.setenv("TOPOGATE_RULES_URL", url)
    driver = render()["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == url
    anchors = {r["id"]: r["helpUri"] for r in driver["rules"]}
    assert anchors["TG101"] == f"{url}#tg101-hard-block"
    # every registered rule's anchor is its heading in docs/rules.md, as GitHub slugs it
    headings = {line[3:].lower().replace(" ", "-") for line in
                (Path(__file__).resolve().parents[2] / "docs" / "rules.md").read_text().splitlines()
                if line.startswith("## TG")}
    assert {rule_anchor(r.id, r.name) for r in all_rules()} == headings
    monkeypatch.setenv("TOPOGATE_RULES_URL", "javascript:alert(1)")
    assert "informationUri" not in render()["runs"][0]["tool"]["driver"]
