"""The gate's settings cannot be weakened unseen (topogate.check.settings_guard, TG011,
topogate.check.settings_report).

Under `check --changed-since REF` the settings that narrow the gate are REF's wherever the pull
request's file narrows more, and each such setting is a TG011 finding at its line; every report
format names the settings file used and what each of its settings left out, with counts, and
blames the command line only for what the command line did.

Real git in scratch repositories (a commit on main, a branch that changes the settings), the
real `kubectl kustomize` where a tree is built, through the CLI as the GitHub Action runs it.
"""

from __future__ import annotations

import json
import os
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import git, run_cli

from topogate.generators import render_tree
from topogate.policies import REGISTRY
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

ROOT = Path(__file__).resolve().parents[2]
CHECK = ("lab/inventory.yaml", "apps")  # the incident: TG101 on two files, TG102 on the coordinator
SETTINGS = ".topogate.yaml"



def commit_all(repo: Path, msg: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", msg)


def check(*args: str) -> tuple[int, str, str]:
    return run_cli("check", *args)


def rules_of(out: str) -> list[tuple[str, int]]:
    return sorted((f["rule"], f["line"]) for f in json.loads(out)["findings"])


Repo = Callable[..., Path]


@pytest.fixture
def lab_repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Repo:
    """The lab inventory and the incident's manifests (apps/) committed on main with `base` as
    the settings file (None: no file); HEAD on a branch whose settings file is `head` (None:
    deleted) and which touches apps/, so the narrowed check reads them."""

    def make(base: str | None, head: str | None, name: str = SETTINGS) -> Path:
        r = tmp_path / "repo"
        shutil.copytree(ROOT / "fixtures" / "lab", r / "lab")
        shutil.copytree(ROOT / "fixtures" / "incident" / "broken", r / "apps")
        if base is not None:
            (r / name).write_text(base)
        git(r, "init", "-q", "-b", "main")
        commit_all(r, "main")
        git(r, "checkout", "-qb", "change")
        if head is None:
            (r / name).unlink(missing_ok=True)
        else:
            (r / name).write_text(head)
        with (r / "apps" / "workers.yaml").open("a") as f:
            f.write("# reviewed\n")
        commit_all(r, "the pull request")
        monkeypatch.chdir(r)
        return r

    return make


# --- a pull request that weakens each setting: REF's applies, TG011 at the line ---

# select: [TG102] leaves out every other TG1 rule; the message names eight and counts the rest.
_TG1_OTHERS = sum(1 for rid in REGISTRY if rid.startswith("TG1") and rid != "TG102")

WEAKENINGS = [
    # (setting, main's file, the pull request's, TG011's line, what it says, rules reported as main's)
    ("ignore", None, "# the gate\nignore: [TG101]\n", 2, "ignore: TG101 newly ignored, which main's settings "
     "do not (ignore: no rule)", [("TG101", 10), ("TG101", 11), ("TG102", 11)]),
    ("select", "select: [TG1]\n", "# the gate\nselect: [TG102]\n", 2,
     f"select: TG102 leaves out TG101, TG103, TG104, TG105, TG106, TG107, TG108, TG109 and {_TG1_OTHERS - 8} more, "
     "which main's "
     "settings do not (select: TG1)", [("TG101", 10), ("TG101", 11), ("TG102", 11)]),
    ("exclude", None, "# the gate\nexclude: [apps/policies.yaml]\n", 2,
     "exclude: apps/policies.yaml newly left unread, which main's settings do not (exclude: nothing)",
     [("TG101", 10), ("TG101", 11), ("TG102", 11)]),
    ("per-path-ignores", "per-path-ignores:\n  'apps/coordinator.yaml': [TG102]\n",
     "# the gate\nper-path-ignores:\n  'apps/coordinator.yaml': [TG102]\n  'apps/workers.yaml': [hard-block]\n", 4,
     "per-path-ignores: apps/workers.yaml: TG101 newly ignored there, which main's settings do not "
     "(per-path-ignores apps/workers.yaml: no rule)", [("TG101", 10), ("TG101", 11)]),
    ("strict", "strict: true\nignore: [TG1]\n", "ignore: [TG1]\n\nstrict: false\n", 3,
     "strict: false lets warnings pass, which main's settings do not (strict: true)", []),
]


@pytest.mark.parametrize(("setting", "base", "head", "line", "says", "reported"), WEAKENINGS,
                         ids=[w[0] for w in WEAKENINGS])
def test_a_weakened_setting_is_main_s_and_a_finding_at_its_line(
        lab_repo: Repo, setting: str, base: str | None, head: str, line: int, says: str,
        reported: list[tuple[str, int]]) -> None:
    lab_repo(base, head)
    code, out, err = check(*CHECK, "--changed-since", "main", "--format", "json")
    findings = json.loads(out)["findings"]
    (tg011,) = [f for f in findings if f["rule"] == "TG011"]
    assert (tg011["file"], tg011["line"], tg011["severity"]) == (SETTINGS, line, "warning")
    assert tg011["message"] == (f"{says}; under --changed-since this check uses main's {setting}, but once "
                                "merged every check reading this file would " + {
                                    "strict": "let warnings pass", "exclude": "leave those paths unread",
                                    "per-path-ignores": "hide those rules' findings in those files",
                                }.get(setting, "hide those rules' findings"))
    assert [r for r in rules_of(out) if r[0] != "TG011"] == reported  # as main's settings decide
    assert code == 1, err  # strict (main's): the TG011 warning fails the check too
    assert json.loads(out)["summary"]["settings"]["taken"] == [setting]


def test_a_cluster_the_pull_request_restricts_the_check_to_is_not_applied(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    r = tmp_path / "repo"
    shutil.copytree(ROOT / "fixtures" / "multi", r)
    writer.write_tree(r / "deploy", render_tree(load_inventory(str(r / "inventory.yaml")), str(r / "deploy")))
    git(r, "init", "-q", "-b", "main")
    commit_all(r, "main")
    git(r, "checkout", "-qb", "change")
    (r / SETTINGS).write_text("cluster: gpu-east\n")
    job = r / "bases/resnet/job.yaml"  # gpu-west's JobSet
    job.write_text(job.read_text().replace("resnet:3.1", "resnet:3.2"))
    monkeypatch.chdir(r)
    code, out, _ = check("inventory.yaml", "deploy/clusters", "--changed-since", "main", "--format", "json")
    data = json.loads(out)
    assert [(f["rule"], f["file"], f["line"]) for f in data["findings"] if f["rule"] == "TG011"] == [
        ("TG011", SETTINGS, 1)]
    assert {w["cluster"] for w in data["workloads"]} == {"gpu-west"}  # the changed cluster, analysed
    # Without --changed-since the file is used as it is, and the reports say what it left out.
    code, out, _ = check("inventory.yaml", "deploy/clusters", "--format", "text")
    assert code == 0
    assert out.endswith("settings: .topogate.yaml\n"
                        "  .topogate.yaml:1:1: cluster: gpu-east: left out 1 cluster (gpu-west), "
                        "10 objects of them not analysed\n\n"
                        "ok: 0 errors, 0 warnings, 1 cluster left out by .topogate.yaml in 2 workloads\n")


def test_a_deleted_settings_file_that_was_strict_is_strict(lab_repo: Repo) -> None:
    lab_repo("strict: true\nignore: [TG1]\n", None)
    code, out, _ = check(*CHECK, "--changed-since", "main", "-q")
    assert out.startswith(".topogate.yaml:1:1: warning TG011 settings-weakened: strict left out lets warnings "
                          "pass, which main's settings do not (strict: true)")
    assert code == 1


def test_settings_moved_to_another_file_are_compared_with_main_s(lab_repo: Repo) -> None:
    # main keeps them in pyproject.toml; the pull request adds a .topogate.yaml, which wins.
    r = lab_repo("[project]\nname = 'platform'\n\n[tool.topogate]\nignore = ['TG102']\n",
                 "[project]\nname = 'platform'\n\n[tool.topogate]\nignore = ['TG102', 'TG101']\n",
                 name="pyproject.toml")
    code, out, _ = check(*CHECK, "--changed-since", "main", "--format", "json")
    assert ("TG011", 5) in rules_of(out)  # the line naming the key in [tool.topogate]
    assert json.loads(out)["summary"]["settings"]["base"] == "main:pyproject.toml"
    (r / SETTINGS).write_text("ignore: [TG102, TG101]\n")
    git(r, "add", SETTINGS)
    code, out, _ = check(*CHECK, "--changed-since", "main", "--format", "json")
    assert [f for f in json.loads(out)["findings"] if f["rule"] == "TG011"][0]["file"] == SETTINGS
    assert ("TG101", 10) in rules_of(out) and ("TG102", 11) not in rules_of(out)


def test_the_pull_request_s_inventory_cannot_waive_tg011(lab_repo: Repo) -> None:
    r = lab_repo(None, "ignore: [TG101]\n")
    inv = r / "lab/inventory.yaml"
    inv.write_text(inv.read_text() + "waivers:\n- {rule: TG011, object: '*', reason: trust me, expires: '2999-01-01'}\n")
    _, out, _ = check(*CHECK, "--changed-since", "main", "--format", "json")
    assert ("TG011", 1) in rules_of(out) and "waived" not in json.loads(out)["summary"]


# --- every report format names the settings and what they left out ---


def test_every_format_names_the_settings_and_the_counts_under_changed_since(lab_repo: Repo) -> None:
    lab_repo("ignore: [TG102]\n", "ignore: [TG102, TG101]\nexclude: [apps/policies.yaml]\n")
    args = (*CHECK, "--changed-since", "main")
    head = ("settings: .topogate.yaml; ignore and exclude from main:.topogate.yaml: this file narrows them more "
            "(--changed-since main)")
    narrowed = "main:.topogate.yaml:1:1: ignore: TG102: hid 1 finding (1 error: TG102)"
    counts = ("2 errors, 2 warnings, 1 hidden by .topogate.yaml (1 error: TG102) in 1 workload "
              "(--changed-since main: 1 of 1 cluster changed (lab))")
    tg011 = ["ignore: TG101 newly ignored, which main's settings do not (ignore: TG102)",
             "exclude: apps/policies.yaml newly left unread, which main's settings do not (exclude: nothing)"]

    code, text, _ = check(*args, "-q")
    assert code == 1
    assert text.startswith(f".topogate.yaml:1:1: warning TG011 settings-weakened: {tg011[0]}")
    assert f"\n.topogate.yaml:2:1: warning TG011 settings-weakened: {tg011[1]}" in text
    assert text.endswith(f"\n\n{head}\n  {narrowed}\n\nFAIL: {counts}\n")

    _, out, _ = check(*args, "--format", "json")
    settings = json.loads(out)["summary"]["settings"]
    assert settings == {
        "file": ".topogate.yaml", "base": "main:.topogate.yaml", "taken": ["ignore", "exclude"],
        "hidden": {"count": 1, "errors": 1, "warnings": 0, "rules": {"TG102": 1}},
        "narrowed": [{"setting": "ignore", "value": ["TG102"], "file": ".topogate.yaml", "ref": "main",
                      "line": 1, "column": 1,
                      "findings": {"count": 1, "errors": 1, "warnings": 0, "rules": {"TG102": 1}}}]}

    _, out, _ = check(*args, "--format", "sarif")
    run = json.loads(out)["runs"][0]
    (inv,) = run["invocations"]
    assert inv["executionSuccessful"] is True and inv["properties"]["settings"] == settings
    assert inv["properties"]["summary"] == head
    (note,) = inv["toolConfigurationNotifications"]
    assert note["message"]["text"] == "ignore: TG102: hid 1 finding (1 error: TG102)"
    assert "locations" not in note  # main's file is no file of the checkout
    assert sorted((r["locations"][0]["physicalLocation"]["region"]["startLine"], r["message"]["text"].split(";")[0])
                  for r in run["results"] if r["ruleId"] == "TG011") == [(1, tg011[0]), (2, tg011[1])]

    _, out, _ = check(*args, "--format", "github")
    lines = out.splitlines()
    assert lines[0].startswith(f"::warning file=.topogate.yaml,line=1,col=1,title=TG011 settings-weakened::{tg011[0]}")
    assert lines[-3:] == [f"topogate: {head}", f"topogate: {narrowed}", f"topogate: {counts}"]

    _, out, _ = check(*args, "--format", "markdown")
    assert f"\n{counts}\n" in out
    assert "| TG011 settings-weakened | warning | .topogate.yaml:2 | exclude: apps/policies.yaml newly" in out
    assert (f"### Settings\n\n{head}\n\n| Setting | Where | Left out |\n| --- | --- | --- |\n"
            "| ignore: TG102 | main:.topogate.yaml:1:1 | hid 1 finding (1 error: TG102) |\n") in out

    _, out, _ = check(*args, "--format", "junit")
    root = ET.fromstring(out.split("\n", 1)[1])
    for suite in root.iter("testsuite"):
        props = [(p.get("name"), p.get("value")) for p in suite.iter("property")]
        assert props == [("topogate.summary", counts), ("topogate.settings", head), ("topogate.narrowed", narrowed)]
    (case,) = [c for c in root.iter("testcase") if c.get("name") == "Settings/.topogate.yaml"]
    assert case.findtext("system-out", "").count("warning TG011 settings-weakened") == 2


def test_the_file_and_the_command_line_are_each_blamed_for_what_they_hid(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No --changed-since: the file is used as it is; the reports name it and count per setting.
    shutil.copytree(ROOT / "fixtures" / "incident" / "broken", tmp_path / "apps")
    (tmp_path / SETTINGS).write_text("ignore: [TG102]\nper-path-ignores:\n  'apps/workers.yaml': [hard-block]\n")
    monkeypatch.chdir(tmp_path)
    lab = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
    code, out, _ = check(lab, "apps", "--ignore", "TG101", "-q")
    assert code == 0
    assert out == ("settings: .topogate.yaml\n"
                   "  .topogate.yaml:1:1: ignore: TG102: hid 1 finding (1 error: TG102)\n"
                   "  .topogate.yaml:3:3: per-path-ignores: apps/workers.yaml: hard-block: hid 1 finding "
                   "(1 error: TG101)\n\n"
                   "ok: 0 errors, 0 warnings, 2 hidden by --select/--ignore (2 errors: TG101), "
                   "1 hidden by .topogate.yaml (1 error: TG102) in 1 workload\n")
    # docs/cli.md ("The settings in the reports") shows this output
    assert f"```text\n{out}```\n" in (ROOT / "docs" / "cli.md").read_text()
    _, out, _ = check(lab, "apps", "--format", "json")
    summary = json.loads(out)["summary"]
    assert summary["deselected"]["rules"] == {"TG101": 1, "TG102": 1}  # every hidden one, as before
    assert [(n["setting"], n.get("glob"), n["line"], n["column"], n["findings"]["rules"])
            for n in summary["settings"]["narrowed"]] == [
        ("ignore", None, 1, 1, {"TG102": 1}), ("per-path-ignores", "apps/workers.yaml", 3, 3, {"TG101": 1})]
    assert summary["settings"]["hidden"]["count"] == 2


def test_a_live_check_names_the_settings_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / SETTINGS).write_text("ignore: [TG208, TG209]\n")
    monkeypatch.chdir(tmp_path)
    eks = ROOT / "fixtures" / "live" / "eks"
    code, out, _ = check(str(eks / "inventory.yaml"), "--live", "--from-file", str(eks / "live-broken.json"), "-q")
    assert code == 1
    assert out.endswith("settings: .topogate.yaml\n"
                        "  .topogate.yaml:1:1: ignore: TG208, TG209: hid 3 findings (2 errors, 1 warning: TG208, "
                        "TG209)\n\nFAIL: 10 errors, 1 warning, 3 hidden by .topogate.yaml (2 errors, 1 warning: "
                        "TG208, TG209) in 1 workload\n")


def test_excluded_paths_are_counted_and_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shutil.copytree(ROOT / "fixtures" / "incident" / "broken", tmp_path / "apps")
    (tmp_path / SETTINGS).write_text("# vendored\nexclude: ['**/polic*', vendor]\n")
    monkeypatch.chdir(tmp_path)
    lab = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
    _, out, _ = check(lab, "apps", "-q", "--exclude", "apps/nothing.yaml")
    assert out.endswith("settings: .topogate.yaml\n"
                        "  .topogate.yaml:2:1: exclude: **/polic*, vendor: left 1 path unread (apps/policies.yaml)\n\n"
                        "FAIL: 1 error, 1 warning, 1 path left unread by .topogate.yaml in 1 workload\n")
    _, out, _ = check(lab, "apps", "--format", "json")
    (n,) = json.loads(out)["summary"]["settings"]["narrowed"]
    assert (n["setting"], n["value"], n["paths"], n["line"]) == ("exclude", ["**/polic*", "vendor"],
                                                                 ["apps/policies.yaml"], 2)
    _, out, _ = check(lab, "apps", "--format", "sarif")
    (note,) = json.loads(out)["runs"][0]["invocations"][0]["toolConfigurationNotifications"]
    assert note["locations"][0]["physicalLocation"] == {
        "artifactLocation": {"uri": ".topogate.yaml", "uriBaseId": "%SRCROOT%"},
        "region": {"startLine": 2, "startColumn": 1}}


def test_a_pull_request_that_leaves_the_settings_alone_is_checked_with_them(lab_repo: Repo) -> None:
    settings = "ignore: [TG102]\n"
    lab_repo(settings, settings)
    code, out, err = check(*CHECK, "--changed-since", "main", "-q")
    assert "TG011" not in out and err == ""
    assert out.endswith("settings: .topogate.yaml\n"
                        "  .topogate.yaml:1:1: ignore: TG102: hid 1 finding (1 error: TG102)\n\n"
                        "FAIL: 2 errors, 0 warnings, 1 hidden by .topogate.yaml (1 error: TG102) in 1 workload "
                        "(--changed-since main: 1 of 1 cluster changed (lab))\n")


def test_a_pull_request_that_only_strengthens_the_settings_is_taken_as_it_is(lab_repo: Repo) -> None:
    lab_repo("ignore: [TG102]\n", "ignore: []\nstrict: true\n")
    code, out, _ = check(*CHECK, "--changed-since", "main", "-q")
    assert "TG011" not in out and "TG102" in out
    assert out.endswith("settings: .topogate.yaml; no setting narrowed this check\n\n"
                        "FAIL: 3 errors, 0 warnings in 1 workload (--changed-since main: 1 of 1 cluster changed (lab))\n")


def test_without_a_settings_file_every_format_prints_what_it_printed(lab_repo: Repo) -> None:
    # The guard of what is left unchanged (this passes on the code before the settings were
    # reported too): no settings file here or at main, nothing about settings in any report.
    lab_repo(None, None)
    for fmt in ("text", "json", "sarif", "github", "markdown", "junit"):
        code, out, err = check(*CHECK, "--changed-since", "main", "--format", fmt)
        assert (code, out, err) == check(*CHECK, "--changed-since", "main", "--format", fmt, "--no-config")
        assert not any(mark in out for mark in ("settings: ", "### Settings", '"invocations"', '"settings"',
                                                "topogate.settings"))


# --- what cannot be read ---


def test_invalid_settings_at_the_ref_stop_the_check_with_their_position(lab_repo: Repo) -> None:
    lab_repo("ignore: [TG999]\n", "ignore: [TG102]\n")
    code, out, err = check(*CHECK, "--changed-since", "main")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "main:.topogate.yaml:1:10: ignore: TG999 is no rule (`topogate rules` lists them)",
        "topogate: 1 problem in the configuration main:.topogate.yaml: under --changed-since the settings that "
        "narrow the check are read from main; fix them there, or run with --no-config; nothing was checked."]
    code, out, _ = check(*CHECK, "--changed-since", "main", "--no-config", "-q")
    assert code == 1 and "settings" not in out  # --no-config reads no file, at main or here


def test_when_git_cannot_answer_nothing_of_the_file_narrows_the_check(lab_repo: Repo) -> None:
    lab_repo("ignore: [TG101]\n", "ignore: [TG101]\n")
    code, out, err = check(*CHECK, "--changed-since", "no-such-ref", "-q")
    assert err.splitlines()[0] == (
        "topogate: --changed-since no-such-ref: the settings at no-such-ref cannot be read ('no-such-ref' is not a "
        "commit here): ignore of .topogate.yaml narrow the check and are not applied")
    assert code == 1 and out.count("error TG101") == 2
    assert "settings: .topogate.yaml; ignore not applied: the settings at no-such-ref cannot be read" in out


def test_a_settings_file_at_the_ref_that_is_a_symbolic_link_is_not_followed(lab_repo: Repo) -> None:
    r = lab_repo(None, "ignore: [TG101]\n")
    git(r, "checkout", "-q", "main")
    (r / "elsewhere.yaml").write_text("ignore: [TG101]\n")
    os.symlink("elsewhere.yaml", r / SETTINGS)
    commit_all(r, "a link")
    git(r, "checkout", "-q", "change")
    _, out, err = check(*CHECK, "--changed-since", "main", "-q")
    assert "(.topogate.yaml is not a regular file there (git mode 120000))" in err
    assert out.count("error TG101") == 2


def test_a_config_file_outside_the_repository_is_the_workflow_s(
        lab_repo: Repo, tmp_path: Path) -> None:
    lab_repo(None, None)
    outside = tmp_path / "ci" / "topogate.yaml"
    outside.parent.mkdir()
    outside.write_text("ignore: [TG101]\n")
    code, out, _ = check(*CHECK, "--changed-since", "main", "--config", str(outside), "-q")
    assert "TG011" not in out and "error TG101" not in out
    assert "ignore: TG101: hid 2 findings (2 errors: TG101)" in out


def test_show_settings_says_what_came_from_the_ref(lab_repo: Repo) -> None:
    lab_repo("ignore: [TG102]\n", "ignore: [TG102, TG101]\n")
    _, out, _ = check(*CHECK, "--changed-since", "main", "--show-settings")
    assert "# --changed-since main: ignore as main:.topogate.yaml (" in out and "ignore: [TG102]\n" in out


# --- inventory and paths: a check with no argument at all ---

NAMED = "inventory: lab/inventory.yaml\npaths: [apps]\n"


def test_no_argument_takes_inventory_and_paths_from_the_settings(lab_repo: Repo) -> None:
    lab_repo(NAMED, NAMED)
    code, out, err = check("--format", "json")
    assert code == 1, err
    assert [r for r in rules_of(out) if r[0] != "TG011"] == [("TG101", 10), ("TG101", 11), ("TG102", 11)]
    assert rules_of(out) == rules_of(check(*CHECK, "--format", "json")[1])  # as if named
    # the command line's arguments win: a named inventory and no PATHs checks its own tree
    code, out, _ = check("lab/inventory.yaml", "--format", "json")
    assert code == 0 and rules_of(out) == []


def test_settings_may_not_point_the_check_outside_the_repository(lab_repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.yaml"
    outside.write_text("apiVersion: topogate.dev/v1alpha1\n")
    lab_repo(None, f"inventory: {outside}\npaths: [apps, ../..]\n")
    code, out, err = check("--format", "json")
    assert code == 2 and out == ""
    assert f".topogate.yaml:1:12: inventory: '{outside}' resolves outside the repository" in err
    assert ".topogate.yaml:2:15: paths: '../..' resolves outside the repository" in err


@pytest.mark.parametrize("head,line,says", [
    ("inventory: lab/other.yaml\npaths: [apps]\n", 1,
     "inventory: lab/other.yaml replaces the inventory the check reads, which main's settings do not "
     "(inventory: lab/inventory.yaml); under --changed-since this check uses main's inventory, but once merged "
     "every check reading this file would check against another inventory"),
    ("inventory: lab/inventory.yaml\npaths: [lab]\n", 2,
     "paths: apps no longer listed, which main's settings do not (paths: apps); under --changed-since this "
     "check uses main's paths, but once merged every check reading this file would leave those paths unread"),
])
def test_a_pull_request_that_moves_the_inventory_or_drops_a_path_checks_main_s(
        lab_repo: Repo, head: str, line: int, says: str) -> None:
    repo = lab_repo(NAMED, head)
    shutil.copy(repo / "lab" / "inventory.yaml", repo / "lab" / "other.yaml")
    code, out, err = check("--changed-since", "main", "--format", "json")
    (tg011,) = [f for f in json.loads(out)["findings"] if f["rule"] == "TG011"]
    assert (tg011["file"], tg011["line"], tg011["message"]) == (SETTINGS, line, says)
    # main's inventory and its paths were checked (with the pull request's new ones: every path
    # either lists is read): the incident's findings are all there
    assert {("TG101", 10), ("TG101", 11), ("TG102", 11)} <= set(rules_of(out))
