"""Findings hidden by an inventory waiver or a `topogate.dev/ignore` annotation are never
silent: every format counts them, text/markdown/JSON list them with the waiver's own line, and
SARIF keeps them as suppressed results (so code scanning shows "dismissed", not "fixed")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
BROKEN = ROOT / "fixtures" / "incident" / "broken"
WAIVER = """waivers:
- rule: may-split
  object: Group/ml-demo/train
  reason: zone-b GPUs arrive next sprint
  expires: "2999-01-31"
"""


def run(*args: str) -> tuple[int, str]:
    res = invoke(*args)
    return res.exit_code, res.stdout


def _waived_lab(tmp_path: Path) -> tuple[str, int]:
    lab = tmp_path / "lab"
    shutil.copytree(ROOT / "fixtures" / "lab", lab)
    inv = lab / "inventory.yaml"
    text = inv.read_text()
    inv.write_text(text + WAIVER)
    return str(inv), text.count("\n") + 2  # the waiver's `- rule:` line


def test_waived_finding_is_counted_and_listed(tmp_path: Path) -> None:
    inv, line = _waived_lab(tmp_path)
    code, out = run("check", inv, str(BROKEN))
    assert code == 1  # TG101 is not waived
    assert "TG102" not in out.split("waived:")[0]
    assert ("waived: TG102 on Group/ml-demo/train (fixtures/incident/broken/" in out
            and f") by {inv}:{line}: zone-b GPUs arrive next sprint (until 2999-01-31)" in out)
    assert out.rstrip().endswith("FAIL: 2 errors, 0 warnings, 1 waived by the inventory in 1 workload")


def test_waived_finding_in_json_markdown_and_sarif(tmp_path: Path) -> None:
    inv, line = _waived_lab(tmp_path)
    _, out = run("check", inv, str(BROKEN), "--format", "json")
    data = json.loads(out)
    assert {f["rule"] for f in data["findings"]} == {"TG101"}
    (w,) = data["summary"]["waived"]
    assert (w["finding"]["rule"], w["line"], w["expires"]) == ("TG102", line, "2999-01-31")
    _, md = run("check", inv, str(BROKEN), "--format", "markdown")
    assert "### Waived by the inventory" in md and f"inventory.yaml:{line}" in md
    _, sarif = run("check", inv, str(BROKEN), "--format", "sarif")
    results = json.loads(sarif)["runs"][0]["results"]
    hidden = [r for r in results if "suppressions" in r]
    assert [r["ruleId"] for r in hidden] == ["TG102"]
    (sup,) = hidden[0]["suppressions"]
    assert sup["kind"] == "external" and sup["justification"] == "zone-b GPUs arrive next sprint"
    assert sup["location"]["physicalLocation"]["region"]["startLine"] == line
    assert sorted(r["ruleId"] for r in results if "suppressions" not in r) == ["TG101", "TG101"]


def test_ignored_rule_is_not_counted_as_waived(tmp_path: Path) -> None:
    inv, _ = _waived_lab(tmp_path)
    _, out = run("check", inv, str(BROKEN), "--ignore", "TG102")
    assert "waived" not in out


def test_annotation_suppressed_findings_stay_in_sarif(tmp_path: Path) -> None:
    d = tmp_path / "m"
    shutil.copytree(BROKEN, d)
    f = d / "coordinator.yaml"
    f.write_text(f.read_text().replace("  namespace: ml-demo\n", "  namespace: ml-demo\n  annotations:\n"
                                       "    topogate.dev/ignore: 'TG102: smoke test'\n", 1))
    code, sarif = run("check", str(ROOT / "fixtures" / "lab" / "inventory.yaml"), str(d), "--format", "sarif")
    assert code == 1
    hidden = [r for r in json.loads(sarif)["runs"][0]["results"] if "suppressions" in r]
    assert [(r["ruleId"], r["suppressions"][0]["kind"], r["suppressions"][0]["justification"])
            for r in hidden] == [("TG102", "inSource", "smoke test")]
    assert hidden[0]["suppressions"][0]["location"]["physicalLocation"]["artifactLocation"]["uri"].endswith(
        "coordinator.yaml")


def test_select_and_ignore_count_what_they_hid_in_every_format() -> None:
    # Before: "ok: 0 errors" printed under a job that is NOT colocated with two blocked flows,
    # and nothing said that three errors had been filtered away.
    lab = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
    code, text = run("check", lab, str(BROKEN), "--ignore", "TG1", "--format", "text")
    assert code == 0 and "NOT colocated" in text
    assert text.rstrip().endswith("ok: 0 errors, 0 warnings, 3 hidden by --select/--ignore "
                                  "(3 errors: TG101, TG102) in 1 workload")
    code, out = run("check", lab, str(BROKEN), "--select", "TG102", "--format", "json")
    summary = json.loads(out)["summary"]
    assert summary["deselected"] == {"count": 2, "errors": 2, "warnings": 0, "rules": {"TG101": 2}}
    for fmt in ("github", "markdown", "junit"):
        _, out = run("check", lab, str(BROKEN), "--select", "TG102", "--format", fmt)
        assert "2 hidden by --select/--ignore (2 errors: TG101)" in out, fmt
    # nothing selected away: nothing said
    _, out = run("check", lab, str(BROKEN), "--format", "text")
    assert "hidden by" not in out
    _, out = run("check", lab, str(BROKEN), "--format", "json")
    assert "deselected" not in json.loads(out)["summary"]


OPENS = """---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: allow-cluster
  namespace: ml-demo
  annotations:
    topogate.dev/ignore: "TG112: the evaluation service reads the job's metrics through this, for now"
spec:
  endpointSelector: {}
  ingress:
  - fromEntities: [cluster]
"""


def test_an_annotation_where_the_finding_is_shown_hides_it(tmp_path: Path) -> None:
    """TG112 is about the job but shown at the policy rule that opens it: an annotation on that
    policy (where the report sends the reader) hides it, counted; one on another object does not."""
    lab = tmp_path / "lab"
    shutil.copytree(ROOT / "fixtures" / "lab", lab)
    assert run("generate", str(lab / "inventory.yaml"), "-o", str(lab / "out"))[0] == 0
    (lab / "policy.yaml").write_text(OPENS)
    code, out = run("check", str(lab / "inventory.yaml"), str(lab / "out" / "clusters" / "lab"),
                    str(lab / "policy.yaml"), "--format", "json")
    data = json.loads(out)
    assert "TG112" not in {f["rule"] for f in data["findings"]}, data["findings"]
    (hidden,) = [s for s in data["summary"]["suppressed"] if s["rule"] == "TG112"]
    assert hidden["object"] == "CiliumNetworkPolicy/ml-demo/allow-cluster"
    # the same annotation on an object the finding is neither about nor shown at hides nothing
    (lab / "policy.yaml").write_text(OPENS.replace("annotations:\n    topogate.dev/ignore", "labels:\n    x: y\n  annotations:\n    other")
                                     + OPENS.replace("allow-cluster", "unrelated").replace("fromEntities: [cluster]", "fromEntities: [host]"))
    _, out = run("check", str(lab / "inventory.yaml"), str(lab / "out" / "clusters" / "lab"),
                 str(lab / "policy.yaml"), "--format", "json")
    assert "TG112" in {f["rule"] for f in json.loads(out)["findings"]}
