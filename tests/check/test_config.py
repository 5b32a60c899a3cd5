"""The configuration file: found as ruff and yamllint find theirs, validated with positions like
the inventory, merged with the command line, and printed by `topogate config`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

from topogate.check.config import discover, glob_regex

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
BROKEN = ROOT / "fixtures" / "incident" / "broken"


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory outside any repository, holding a copy of the incident's manifests."""
    d = tmp_path / "work"
    shutil.copytree(BROKEN, d / "apps")
    monkeypatch.chdir(d)
    return d


def _rules(out: str) -> list[str]:
    return sorted(f["rule"] for f in json.loads(out)["findings"])


def test_discovery_order_and_where_it_stops(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    sub = repo / "a" / "b"
    sub.mkdir(parents=True)
    (repo / ".git").mkdir()
    assert discover(str(sub)) is None
    (repo / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert discover(str(sub)) is None  # a pyproject.toml without [tool.topogate] is passed over
    (repo / "pyproject.toml").write_text("[tool.topogate]\nstrict = true\n")
    assert discover(str(sub)) == str(repo / "pyproject.toml")  # found from a subdirectory
    (repo / ".topogate.yaml").write_text("strict: true\n")
    assert discover(str(sub)) == str(repo / ".topogate.yaml")  # wins in the same directory
    (tmp_path / ".topogate.yaml").write_text("strict: true\n")
    (repo / ".topogate.yaml").unlink()
    (repo / "pyproject.toml").unlink()
    assert discover(str(sub)) is None  # above the repository's root: someone else's


def test_every_problem_at_once_with_positions(here: Path) -> None:
    (here / ".topogate.yaml").write_text(
        "select: [TG1, hard-blok]\nignor: [TG120]\nstrict: yes\nformat: txt\n"
        "per-path-ignores:\n  \"legacy/**\": [TG1O2]\n")
    code, out, err = run_cli("config")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        ".topogate.yaml:1:15: select: hard-blok is no rule; did you mean hard-block? (`topogate rules` lists them)",
        ".topogate.yaml:2:1: unknown setting 'ignor'; did you mean ignore?; known: select, ignore, strict, "
        "cluster, format, exclude, per-path-ignores, inventory, paths, baseline",
        ".topogate.yaml:3:9: strict must be true or false",
        ".topogate.yaml:4:9: format: 'txt' is not one of auto, text, json, sarif, github, markdown, junit; "
        "did you mean text?",
        ".topogate.yaml:6:17: per-path-ignores legacy/**: TG1O2 is no rule; did you mean TG102? "
        "(`topogate rules` lists them)",
        "topogate: 5 problems in the configuration .topogate.yaml; nothing was checked.",
    ]
    # check refuses to run on it too, before any analysis
    code, out, err = run_cli("check", LAB, "apps")
    assert code == 2 and out == "" and "nothing was checked" in err


def test_pyproject_problems_name_the_key_line(here: Path) -> None:
    (here / "pyproject.toml").write_text("[project]\nname = 'x'\n\n[tool.topogate]\nstrict = true\n"
                                         "selct = ['TG1']\n")
    code, _, err = run_cli("config")
    assert code == 2 and err.startswith("pyproject.toml:6:1: unknown setting 'selct'; did you mean select?")


def test_config_prints_the_settings_and_their_file(here: Path) -> None:
    (here / "pyproject.toml").write_text("[tool.topogate]\nignore = ['TG120']\nexclude = ['vendor/**']\n")
    code, out, _ = run_cli("config")
    assert code == 0 and out == (
        "# pyproject.toml\nselect: []\nignore: [TG120]\nstrict: false\ncluster: null\nformat: null\n"
        "exclude: [vendor/**]\nper-path-ignores: {}\n")
    code, out, _ = run_cli("config", "--no-config")
    assert code == 0 and out.startswith("# no configuration file: the defaults\n")


def test_check_follows_the_file_and_the_command_line_wins(here: Path) -> None:
    (here / ".topogate.yaml").write_text("select: [TG102]\nformat: json\n")
    code, out, _ = run_cli("check", LAB, "apps")
    assert code == 1 and _rules(out) == ["TG102"]  # the file's select and format
    code, out, _ = run_cli("check", LAB, "apps", "--select", "TG101")
    assert code == 1 and _rules(out) == ["TG101", "TG101"]  # --select replaces the file's
    code, out, _ = run_cli("check", LAB, "apps", "--format", "text")
    assert out.rstrip().endswith("in 1 workload") and "FAIL" in out
    code, out, _ = run_cli("check", LAB, "apps", "--no-config", "--format", "json")
    assert _rules(out) == ["TG101", "TG101", "TG102"]
    other = here / "other.yaml"
    other.write_text("ignore: [TG1]\n")
    code, out, _ = run_cli("check", LAB, "apps", "--config", str(other), "--format", "json")
    assert code == 0 and _rules(out) == []
    code, out, _ = run_cli("check", LAB, "apps", "--show-settings", "--ignore", "TG101")
    assert code == 0 and "ignore: [TG101]" in out and "select: [TG102]" in out and "format: json" in out


def test_exclude_leaves_entries_unread(here: Path) -> None:
    # Without the zone policies nothing is blocked: TG101 goes, the split (TG102) stays.
    code, out, _ = run_cli("check", LAB, "apps", "--format", "json", "--exclude", "apps/policies.yaml")
    assert _rules(out) == ["TG102", "TG110"]  # TG110: the namespace now has no policy at all
    (here / ".topogate.yaml").write_text("exclude: ['**/polic*']\n")
    code, out, _ = run_cli("check", LAB, "apps", "--format", "json")
    assert _rules(out) == ["TG102", "TG110"]


def test_per_path_ignores_hide_and_count(here: Path) -> None:
    (here / ".topogate.yaml").write_text("per-path-ignores:\n  'apps/workers.yaml': [hard-block]\n")
    code, out, _ = run_cli("check", LAB, "apps", "--format", "json")
    data = json.loads(out)
    assert _rules(out) == ["TG101", "TG102"]  # the coordinator's TG101 stays
    assert all(not f["file"].endswith("workers.yaml") for f in data["findings"])
    assert data["summary"]["deselected"]["rules"] == {"TG101": 1}


@pytest.mark.parametrize(("pattern", "path", "hit"), [
    ("vendor/**", "vendor/a/b.yaml", True),
    ("vendor", "vendor/a/b.yaml", True),  # a directory covers what is under it
    ("*.yaml", "a/b.yaml", False),  # * stays within a segment
    ("**/*.yaml", "a/b.yaml", True),
    ("**/*.yaml", "b.yaml", True),
    ("apps/x?.yaml", "apps/x1.yaml", True),
])
def test_globs(pattern: str, path: str, hit: bool) -> None:
    assert bool(glob_regex(pattern).fullmatch(path)) is hit
