"""The JSON report: DESIGN.md's field names exactly (tests outside the repo rely on them)."""

from __future__ import annotations

import json

from report_support import BLOCK_REASON, BROKEN, CLEAN, FINDINGS, result

from topogate.report.json import JsonReporter

FINDING_KEYS = ["rule", "name", "severity", "object", "file", "line", "column", "message"]
WORKLOAD_KEYS = {"object", "cluster", "groups", "colocated", "schedulable", "blocked"}
BLOCKED_KEYS = {"from", "to", "fromZone", "toZone", "port", "reason"}


def render() -> dict:
    return json.loads(JsonReporter().render(result()))


def test_top_level_shape() -> None:
    doc = render()
    assert list(doc) == ["findings", "workloads", "summary"]
    assert doc["summary"] == {"errors": 3, "warnings": 1}


def test_findings_have_exactly_the_documented_fields() -> None:
    doc = render()
    assert len(doc["findings"]) == len(FINDINGS)
    for f in doc["findings"]:
        assert list(f) == FINDING_KEYS
        assert isinstance(f["line"], int) and isinstance(f["column"], int)


def test_findings_sorted_by_file_then_line() -> None:
    where = [(f["file"], f["line"]) for f in render()["findings"]]
    assert where == sorted(where)
    # jobs/llama.yaml:9 before :30 (numeric, not string, order)
    lines = [f["line"] for f in render()["findings"] if f["file"] == "jobs/llama.yaml"]
    assert lines == [9, 30]


def test_workloads_exact() -> None:
    doc = render()
    assert [w["object"] for w in doc["workloads"]] == [CLEAN.object, BROKEN.object]
    for w in doc["workloads"]:
        assert WORKLOAD_KEYS <= set(w)
        for b in w["blocked"]:
            assert BLOCKED_KEYS <= set(b)
    clean, broken = doc["workloads"]
    assert clean == {
        "object": "PyTorchJob/ml-team/clean-ft", "cluster": "gpu-east",
        "groups": [{"name": "Master", "zones": ["us-east-1a"]}, {"name": "Worker", "zones": ["us-east-1a"]}],
        "colocated": True, "schedulable": True, "blocked": [],
    }
    assert broken["groups"] == [{"name": "Master", "zones": ["us-east-1a", "us-east-1b"]},
                                {"name": "Worker", "zones": ["us-east-1a"]}]
    assert broken["colocated"] is False and broken["schedulable"] is True
    assert broken["blocked"] == [
        {"from": "Worker", "to": "Master", "fromZone": "us-east-1a", "toZone": "us-east-1b",
         "port": 0, "protocol": "TCP", "reason": BLOCK_REASON},
        {"from": "Worker", "to": "Master", "fromZone": "us-east-1a", "toZone": "us-east-1b",
         "port": 23456, "protocol": "TCP", "reason": BLOCK_REASON},
    ]


def test_findings_match_finding_as_dict() -> None:
    assert sorted(render()["findings"], key=lambda d: (d["file"], d["line"])) == sorted(
        (f.as_dict() for f in FINDINGS), key=lambda d: (d["file"], d["line"]))


def test_text_is_stable() -> None:
    out = JsonReporter().render(result())
    assert out.endswith("}\n")
    assert out.startswith('{\n  "findings": [\n    {\n      "rule": "TG001"')
    assert "\\n" in out  # newlines inside messages stay escaped, one JSON document
