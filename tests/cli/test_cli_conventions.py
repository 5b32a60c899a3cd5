"""CLI conventions users know from ruff and friends: -o in the report's format, `rules RULE`,
`rules --format json`, `check --select/--ignore`, and per-object suppression annotations."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from conftest import run_cli

from topogate.cli.app import main

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
BROKEN = ROOT / "fixtures" / "incident" / "broken"


def rules_of(out: str) -> set[str]:
    return {f["rule"] for f in json.loads(out)["findings"]}


def test_output_file_follows_extension_then_format(tmp_path: Path) -> None:
    md, sarif, other = tmp_path / "r.md", tmp_path / "r.sarif", tmp_path / "r.out"
    run_cli("check", LAB, str(BROKEN), "--format", "json", "-o", str(md))
    assert md.read_text().startswith("## ❌ topogate check failed")  # as before: .md is markdown
    run_cli("check", LAB, str(BROKEN), "--format", "json", "-o", str(sarif))
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    code, out, _ = run_cli("check", LAB, str(BROKEN), "--format", "json", "-o", str(other))
    assert code == 1 and other.read_text() == out  # no extension hint: the --format of stdout
    run_cli("check", LAB, str(BROKEN), "--format", "json", "-o", str(other), "--output-format", "text")
    assert other.read_text().rstrip().endswith("FAIL: 3 errors, 0 warnings in 1 workload")


def test_output_may_be_repeated_each_file_by_its_extension(tmp_path: Path) -> None:
    # One analysis, a summary and a code-scanning file: the action's case.
    md, sarif = tmp_path / "r.md", tmp_path / "r.sarif"
    code, _, err = run_cli("check", LAB, str(BROKEN), "--format", "github", "-o", str(md), "-o", str(sarif))
    assert code == 1, err
    assert md.read_text().startswith("## ❌ topogate check failed")
    assert json.loads(sarif.read_text())["version"] == "2.1.0"
    code, _, err = run_cli("check", LAB, str(BROKEN), "-o", str(md), "-o", str(sarif), "--output-format", "text")
    assert code == 2 and "with several -o, name each file's format by its extension" in err
    code, _, err = run_cli("check", LAB, str(BROKEN), "-o", str(md), "-o", str(md))
    assert code == 2 and "is given twice" in err


def test_rules_shows_one_rule_by_id_or_name() -> None:
    code, by_id, _ = run_cli("rules", "tg101")
    assert code == 0 and by_id.startswith("TG101 hard-block (error)\n")
    assert run_cli("rules", "hard-block")[1] == by_id
    assert "TG102" not in by_id.split("\n", 1)[0]
    code, _, err = run_cli("rules", "TG999")
    assert code == 2 and "no rule 'TG999' (`topogate rules` lists them)" in err  # nothing near it
    # a typo gets the nearest rule, not the whole list on one line (as click does for commands)
    code, _, err = run_cli("rules", "TG1O1")
    assert code == 2 and err.strip() == "topogate: no rule 'TG1O1'; did you mean TG101? (`topogate rules` lists them)"
    code, _, err = run_cli("rules", "hard-blok")
    assert code == 2 and "did you mean hard-block?" in err and "TG102" not in err
    code, out, _ = run_cli("rules", "may-split", "--format", "json")
    assert code == 0 and json.loads(out)["id"] == "TG102"


def test_rules_json_lists_every_rule() -> None:
    from topogate.policies import REGISTRY

    code, out, _ = run_cli("rules", "--format", "json")
    data = json.loads(out)
    assert code == 0 and [r["id"] for r in data] == sorted(REGISTRY)
    assert {"id", "name", "severity", "summary", "doc"} == set(data[0])


def test_select_and_ignore_by_id_prefix_and_name() -> None:
    code, out, _ = run_cli("check", LAB, str(BROKEN), "--format", "json", "--select", "TG102")
    assert (code, rules_of(out)) == (1, {"TG102"})
    code, out, _ = run_cli("check", LAB, str(BROKEN), "--format", "json", "--select", "TG1",
                       "--ignore", "hard-block,may-split")
    assert (code, rules_of(out)) == (0, set())  # nothing left: the exit code follows
    code, _, err = run_cli("check", LAB, str(BROKEN), "--ignore", "TG9")
    assert code == 2 and "--ignore TG9: no such rule" in err
    code, _, err = run_cli("check", LAB, str(BROKEN), "--select", "hard-blok,may-split", "--ignore", "TG1O1")
    assert code == 2 and err.strip() == (
        "topogate: --select hard-blok: no such rule; did you mean hard-block?; --ignore TG1O1: no such "
        "rule; did you mean TG101? (`topogate rules` lists them)")


def _annotated(tmp_path: Path, value: str) -> Path:
    d = tmp_path / "m"
    shutil.copytree(BROKEN, d)
    f = d / "coordinator.yaml"
    text = f.read_text()
    f.write_text(text.replace("  namespace: ml-demo\n", "  namespace: ml-demo\n  annotations:\n"
                              f"    topogate.dev/ignore: {json.dumps(value)}\n", 1))
    return d


def test_suppression_with_reason_hides_the_finding_and_is_reported(tmp_path: Path) -> None:
    d = _annotated(tmp_path, "TG102: smoke test, one node\nhard-block: known, see INC-42")
    code, out, _ = run_cli("check", LAB, str(d), "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["findings"] == []
    assert [(s["rule"], s["reason"]) for s in data["summary"]["suppressed"]] == [
        ("TG101", "known, see INC-42"), ("TG102", "smoke test, one node")]
    code, text, _ = run_cli("check", LAB, str(d))
    assert "suppressed: TG102 on Deployment/ml-demo/coordinator" in text
    assert text.rstrip().endswith("ok: 0 errors, 0 warnings, 2 suppressed by annotation in 1 workload")


def test_suppression_without_reason_hides_nothing(tmp_path: Path) -> None:
    d = _annotated(tmp_path, "TG102")
    code, out, _ = run_cli("check", LAB, str(d), "--format", "json")
    assert code == 1 and {"TG101", "TG102", "TG010"} <= rules_of(out)
    (bad,) = [f for f in json.loads(out)["findings"] if f["rule"] == "TG010"]
    assert "TG102 has no reason" in bad["message"] and bad["file"].endswith("coordinator.yaml")


def _commands() -> list[list[str]]:
    import click

    out: list[list[str]] = []

    def walk(cmd: click.Command, path: list[str]) -> None:
        out.append(path)
        if isinstance(cmd, click.Group):
            for name, sub in sorted(cmd.commands.items()):
                walk(sub, [*path, name])

    walk(main, [])
    return out


def test_every_help_lists_exit_codes_and_shell_completion_is_documented() -> None:
    for path in _commands():
        code, out, _ = run_cli(*path, "--help")
        assert code == 0 and "Exit codes" in out, path
    docs = (ROOT / "docs" / "cli.md").read_text()
    assert "_TOPOGATE_COMPLETE=bash_source topogate" in docs and "zsh_source" in docs and "fish_source" in docs


def test_stdin_as_the_inventory_is_refused_by_name() -> None:
    for cmd in (["check", "-", str(BROKEN)], ["generate", "-", "-o", "out"], ["explain", "-", "train"],
                ["trace", str(BROKEN), "--inventory", "-", "--from", "world", "--to", "world"]):
        code, _, err = run_cli(*cmd)
        assert code == 2 and "the inventory cannot come from standard input" in err, cmd
        assert "No such file" not in err


def test_generate_quiet_prints_only_differences(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, _ = run_cli("generate", LAB, "-o", str(out), "-q")
    assert code == 0 and stdout == "" and any(out.iterdir())
    code, stdout, _ = run_cli("generate", LAB, "-o", str(out), "--check", "-q")
    assert code == 0 and stdout == ""
    code, stdout, _ = run_cli("generate", LAB, "-o", str(out), "--check")
    assert code == 0 and "is up to date" in stdout


def test_clusters_lists_each_cluster_with_the_paths_it_reads(tmp_path: Path) -> None:
    multi = str(ROOT / "fixtures" / "multi" / "inventory.yaml")
    code, out, _ = run_cli("clusters", multi, "--out", "deploy", "--format", "json")
    data = json.loads(out)["clusters"]
    assert code == 0 and [c["name"] for c in data] == ["gpu-east", "gpu-west"]
    east = data[0]
    assert east["workloads"] == 2 and east["provider"] == "aws"
    assert east["paths"][1] == "deploy/clusters/gpu-east"
    assert all(p.endswith("inventory.yaml") or "/bases/" in p or p.startswith("deploy/") for p in east["paths"])
    code, out, _ = run_cli("clusters", multi)
    assert code == 0 and out.splitlines()[0] == "gpu-east  aws us-east-1  2 workloads"
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Inventory\nclusters: 3\n")
    code, _, err = run_cli("clusters", str(bad))
    assert code == 2 and "bad.yaml:" in err
