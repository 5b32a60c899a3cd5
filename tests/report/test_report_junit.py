"""--format junit: JUnit XML as GitLab, Jenkins and Azure DevOps read it, read back here with
junitparser (a reader CI report tools use), and --exit-zero for report-only runs."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

from conftest import invoke
from junitparser import Failure, JUnitXml
from report_support import CLEAN_RESULT, FINDINGS, result

from topogate.core.findings import Finding
from topogate.report import get_reporter

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
BROKEN = str(ROOT / "fixtures" / "incident" / "broken")
FIXED = str(ROOT / "fixtures" / "incident" / "fixed")


def _read(text: str, tmp_path: Path) -> JUnitXml:
    f = tmp_path / "report.xml"
    f.write_text(text)
    return JUnitXml.fromfile(str(f))


def _cases(xml: JUnitXml) -> dict[str, list[str]]:
    """testcase name -> the rules its failure names (empty: passed)."""
    out: dict[str, list[str]] = {}
    for suite in xml:
        for case in suite:
            fails = [r for r in case.result if isinstance(r, Failure)]
            out[case.name] = [f.type for f in fails]
    return out


def test_workloads_are_testcases_and_failing_findings_fail_them(tmp_path: Path) -> None:
    xml = _read(get_reporter("junit").render(result()), tmp_path)
    suites = {s.name: s for s in xml}
    assert list(suites) == ["gpu-east", "topogate"]
    assert (suites["gpu-east"].tests, suites["gpu-east"].failures) == (2, 1)
    cases = _cases(xml)
    assert cases["PyTorchJob/ml-team/clean-ft"] == []
    assert cases["PyTorchJob/ml-team/llama-ft"] == ["TG102"]  # one failure, both findings in its text
    assert cases["CiliumNetworkPolicy/ml-team/old"] == []  # a warning does not fail without --strict
    assert cases["File/x"] == ["TG001"]
    llama = next(c for s in xml for c in s if c.name == "PyTorchJob/ml-team/llama-ft")
    text = llama.result[0].text
    assert "jobs/llama.yaml:30:7: error TG101 hard-block" in text and "jobs/llama.yaml:9:7" in text
    assert (xml.tests, xml.failures) == (5, 2)


def test_strict_fails_on_warnings_too(tmp_path: Path) -> None:
    cases = _cases(_read(get_reporter("junit", strict=True).render(result()), tmp_path))
    assert cases["CiliumNetworkPolicy/ml-team/old"] == ["TG110"]
    assert cases["Namespace/ml-team"] == []  # info never fails


def test_clean_run_is_all_passed(tmp_path: Path) -> None:
    xml = _read(get_reporter("junit").render(CLEAN_RESULT), tmp_path)
    assert (xml.tests, xml.failures, xml.errors) == (1, 0, 0)


def test_control_characters_from_hostile_names_keep_it_well_formed(tmp_path: Path) -> None:
    nasty = Finding("a\x1b[31m.yaml", 1, 1, "TG001", "unreadable", "error", "File/\x00x\x0b", "bad \x07 byte")
    text = get_reporter("junit").render(replace(result(), findings=(*FINDINGS, nasty)))
    ET.fromstring(text.split("\n", 1)[1])  # raises on a character XML 1.0 cannot hold
    assert "File/\\x00x\\x0b" in _cases(_read(text, tmp_path))


def test_cli_junit_and_xml_suffix(tmp_path: Path) -> None:
    report = tmp_path / "topogate.xml"
    r = invoke("check", LAB, BROKEN, "--format", "junit", "-o", str(report))
    assert r.exit_code == 1, r.stderr
    assert report.read_text() == r.stdout  # -o FILE.xml is junit by its extension
    xml = _read(r.stdout, tmp_path)
    # the incident's job, failed; its first finding by place names the failure (TG101 and TG102
    # are both at the coordinator's template, TG101 first)
    assert _cases(xml) == {"Group/ml-demo/train": ["TG101"]}
    assert [s.name for s in xml] == ["lab"]  # its cluster


def test_exit_zero_reports_but_does_not_fail() -> None:
    r = invoke("check", LAB, BROKEN, "--format", "text", "--exit-zero")
    assert r.exit_code == 0, r.stderr
    assert "FAIL: " in r.stdout and "TG101" in r.stdout  # the report is the same
    # bad input is still exit 2: no report was made, and 0 would read as "checked, fine"
    r = invoke("check", LAB, "does/not/exist", "--exit-zero")
    assert r.exit_code == 2
    assert invoke("check", LAB, FIXED, "--exit-zero").exit_code == 0


def test_every_suite_carries_the_counts_line_not_a_failure_message(tmp_path: Path) -> None:
    # The first suite has a failing workload; the suites after it once carried that failure's
    # first line as their topogate.summary, instead of the run's counts.
    root = ET.fromstring(get_reporter("junit").render(result()).split("\n", 1)[1])
    summaries = {s.get("name"): [p.get("value") for p in s.iter("property") if p.get("name") == "topogate.summary"]
                 for s in root.iter("testsuite")}
    line = "3 errors, 1 warning, 1 info in 2 workloads"
    assert summaries == {"gpu-east": [line], "topogate": [line]}
