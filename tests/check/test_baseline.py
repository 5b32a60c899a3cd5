"""`topogate baseline` and `check --baseline` (topogate.check.baseline): a team adopts topogate on
day one without a waiver per object, and new findings still fail.

The incident's manifests (three errors) in a scratch git repository, through the CLI.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import git, run_cli

from topogate.check.baseline import parse

ROOT = Path(__file__).resolve().parents[2]
CHECK = ("lab/inventory.yaml", "apps")
FILE = ".topogate-baseline.json"



@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    r = tmp_path / "repo"
    shutil.copytree(ROOT / "fixtures" / "lab", r / "lab")
    shutil.copytree(ROOT / "fixtures" / "incident" / "broken", r / "apps")
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "main")
    monkeypatch.chdir(r)
    return r


def _baseline(repo: Path) -> None:
    code, out, err = run_cli("baseline", *CHECK)
    assert code == 0, err
    assert out == f"wrote {FILE}: 3 finding(s) (3 error(s), 0 warning(s)); commit it, and `check` reports them as baselined\n"
    git(repo, "add", FILE)


def test_today_s_findings_are_baselined_and_a_new_one_still_fails(repo: Path) -> None:
    assert run_cli("check", *CHECK)[0] == 1
    _baseline(repo)
    code, out, _ = run_cli("check", *CHECK, "--baseline", FILE)
    assert code == 0, out
    assert f"baseline {FILE}: 3 findings baselined (3 errors: TG101, TG102)" in out
    assert out.rstrip().endswith("ok: 0 errors, 0 warnings, 3 baselined in 1 workload")
    # a new finding: a second policy that blocks another flow fails as before, alone
    policies = repo / "apps" / "policies.yaml"
    policies.write_text(policies.read_text() + (
        "---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: other\n"
        "---\napiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: other}\nspec:\n"
        "  template:\n    spec:\n      affinity: x\n      containers: [{name: c, image: x}]\n"))
    code, out, err = run_cli("check", *CHECK, "--baseline", FILE)
    assert code == 2 and "affinity" in err  # bad input is never baselined


def test_moved_lines_and_every_format(repo: Path) -> None:
    _baseline(repo)
    # lines added above the findings and above the rules their messages cite
    for name in ("coordinator.yaml", "workers.yaml", "policies.yaml"):
        f = repo / "apps" / name
        f.write_text("# reviewed\n# twice\n" + f.read_text())
    code, out, _ = run_cli("check", *CHECK, "--baseline", FILE, "--format", "json")
    summary = json.loads(out)["summary"]
    assert code == 0 and json.loads(out)["findings"] == []
    assert summary["baselined"]["count"] == 3 and summary["baselined"]["unmatched"] == 0
    assert {f["rule"] for f in summary["baselined"]["findings"]} == {"TG101", "TG102"}
    _, sarif, _ = run_cli("check", *CHECK, "--baseline", FILE, "--format", "sarif")
    hidden = [r for r in json.loads(sarif)["runs"][0]["results"] if "suppressions" in r]
    assert len(hidden) == 3 and {r["suppressions"][0]["kind"] for r in hidden} == {"external"}
    assert hidden[0]["suppressions"][0]["justification"] == f"in the baseline {FILE}"
    for fmt, said in (("markdown", "3 baselined"), ("github", f"topogate: baseline {FILE}: 3 findings baselined"),
                      ("junit", "3 baselined")):
        assert said in run_cli("check", *CHECK, "--baseline", FILE, "--format", fmt)[1], fmt


def test_an_entry_no_finding_matches_is_counted(repo: Path) -> None:
    _baseline(repo)
    (repo / "apps" / "policies.yaml").unlink()  # no policy: nothing blocks; the split stays
    code, out, _ = run_cli("check", *CHECK, "--baseline", FILE)
    assert code == 0
    assert ("1 finding baselined (1 error: TG102); 2 entries no finding matches any more (run `topogate "
            "baseline` to drop them)") in out


def test_the_same_findings_give_the_same_bytes(repo: Path) -> None:
    _baseline(repo)
    first = (repo / FILE).read_bytes()
    assert run_cli("baseline", "apps", "lab/inventory.yaml")[0] == 2  # the inventory comes first
    assert run_cli("baseline", *CHECK, "-o", "again.json")[0] == 0
    assert (repo / "again.json").read_bytes() == first
    assert [e.pos.line for e in parse(first.decode(), FILE).entries] == [2, 3, 4]


def test_a_bad_baseline_file_is_exit_2_at_its_place(repo: Path) -> None:
    (repo / FILE).write_text('{"topogate-baseline": 1, "findings": [\n{"rule": 1}\n]}\n')
    git(repo, "add", FILE)
    code, _, err = run_cli("check", *CHECK, "--baseline", FILE)
    assert code == 2
    assert f"{FILE}:1:1: finding 1 needs the strings rule, object, file and message" in err
    (repo / FILE).write_text('{"topogate-baseline": 1, "findings": [\n{,}\n]}\n')
    code, _, err = run_cli("check", *CHECK, "--baseline", FILE)
    assert code == 2 and f"{FILE}:2:2: not JSON" in err


def test_a_pull_request_may_not_baseline_its_own_findings(repo: Path) -> None:
    """Under --changed-since the settings' baseline is REF's: what the pull request adds to it is
    not honoured, and each added entry is TG011 at its line; a path to another file is REF's."""
    (repo / ".topogate.yaml").write_text(f"baseline: {FILE}\n")
    (repo / FILE).write_text('{"topogate-baseline": 1, "findings": [\n]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "an empty baseline")
    git(repo, "checkout", "-qb", "change")
    _baseline(repo)  # the pull request baselines the incident, and touches it
    with (repo / "apps" / "workers.yaml").open("a") as f:
        f.write("# reviewed\n")
    code, out, err = run_cli("check", *CHECK, "--changed-since", "main", "--format", "json")
    report = json.loads(out)
    assert code == 1, err
    assert sorted(f["rule"] for f in report["findings"]) == ["TG011", "TG011", "TG011", "TG101", "TG101", "TG102"]
    tg011 = sorted((f["line"], f["message"][:41]) for f in report["findings"] if f["rule"] == "TG011")
    assert tg011 == [(2, "baseline: TG101 on Group/ml-demo/train (a"), (3, "baseline: TG101 on Group/ml-demo/train (a"),
                     (4, "baseline: TG102 on Group/ml-demo/train (a")]
    assert report["summary"]["baselined"]["count"] == 0 and len(report["summary"]["baselined"]["refused"]) == 3
    # without --changed-since the file is used as it is (and every report says so)
    assert run_cli("check", *CHECK)[0] == 0
