"""Nothing topogate prints can emit a GitHub Actions workflow command (issue 10 item 4).

`action.yml` prints `generate --check` and `check` into the job log; the runner treats a line
that starts with `::` (after whitespace) as a command and `##[` anywhere as the older form.
Workload names cannot be hostile (DNS-1123), but file names, the inventory path, base paths,
OUT and messages quoting user values can. Each test here gives one of those a value that tries
`::error ...` and `::stop-commands::`, and asserts that no printed line is a command.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, invoke

from topogate.core import escape

HOSTILE = "x\n::error file=a,line=1::pwned\n::stop-commands::tok\r\n##[error]old"


def assert_no_command(*outputs: str) -> None:
    for text in outputs:
        for ln in text.split("\n"):
            assert not ln.lstrip().startswith("::"), ln
            assert "##[" not in ln, ln
            assert "\r" not in ln and "\x1b" not in ln, ln


def test_one_line_shows_control_characters_and_defuses_commands() -> None:
    assert escape.one_line("a\nb\tc\x1b[31m\u2028\u202e") == "a\\nb\\tc\\x1b[31m\\u2028\\u202e"
    assert escape.one_line("::error::x") == "%3A:error::x"
    assert escape.one_line("  ::stop-commands::t") == "  %3A:stop-commands::t"
    assert escape.one_line("see ##[error]x") == "see ##%5Berror]x"
    # IPv6 and ordinary colons are left alone: only a line that starts with '::' is a command
    assert escape.one_line("fd00::/8 ns:a") == "fd00::/8 ns:a"
    assert escape.line("\tkeep tabs") == "\tkeep tabs"


def test_lines_keeps_line_breaks_and_defuses_each_line() -> None:
    out = escape.lines("ok\n    ::error::x\nfine\n")
    assert out == "ok\n    %3A:error::x\nfine\n"


def test_json_text_decodes_to_the_same_value() -> None:
    import json

    s = json.dumps({"m": "##[error]x"})
    assert "##[" not in escape.json_text(s)
    assert json.loads(escape.json_text(s)) == {"m": "##[error]x"}


def _lab(tmp_path: Path, name: str) -> Path:
    """The lab fixture with its inventory renamed to `name` (a hostile file name)."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "lab", repo)
    inv = repo / name
    (repo / "inventory.yaml").rename(inv)
    return inv


HOSTILE_NAME = "::error file=a,line=1::pwned ##[error]x\n::stop-commands::tok"


def test_generate_and_check_with_a_hostile_inventory_and_out_name(tmp_path: Path) -> None:
    inv = _lab(tmp_path, "inv\n" + HOSTILE_NAME + ".yaml")
    out = tmp_path / ("out\n" + HOSTILE_NAME)
    r = invoke("generate", str(inv), "-o", str(out), "--check")
    assert r.exit_code == 1
    assert_no_command(r.stdout, r.stderr)
    assert "\\n::stop-commands::tok" in r.stdout  # shown, its newline visibly escaped
    r = invoke("generate", str(inv), "-o", str(out))
    assert r.exit_code == 0, r.stderr
    assert_no_command(r.stdout, r.stderr)
    r = invoke("generate", str(inv), "-o", str(out), "--check")
    assert r.exit_code == 0 and "is up to date" in r.stdout
    assert_no_command(r.stdout, r.stderr)


@pytest.mark.parametrize("name", ["::error::pwned", "::stop-commands::tok", "a\n::error::b",
                                  "##[error]c"])
def test_generate_check_lists_hostile_file_names_in_out_safely(tmp_path: Path, name: str) -> None:
    inv = FIXTURES / "lab" / "inventory.yaml"
    out = tmp_path / "out"
    assert invoke("generate", str(inv), "-o", str(out)).exit_code == 0
    (out / name).write_text("not generated\n")
    r = invoke("generate", str(inv), "-o", str(out), "--check")
    assert r.exit_code == 1
    assert "removed" in r.stdout and "First move or delete" in r.stdout
    assert_no_command(r.stdout, r.stderr)
    r = invoke("generate", str(inv), "-o", str(out))
    assert r.exit_code == 2  # refuses the foreign file, naming it safely
    assert_no_command(r.stdout, r.stderr)
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_hostile_base_path_in_an_inventory_error_is_one_safe_line(tmp_path: Path) -> None:
    src = (FIXTURES / "lab" / "inventory.yaml").read_text()
    assert "base: bases/train" in src
    inv = tmp_path / "inventory.yaml"
    inv.write_text(src.replace("base: bases/train",
                               'base: "bases/::error::pwned\\n::stop-commands::tok"'))
    for args in (["generate", str(inv), "-o", str(tmp_path / "o")], ["check", str(inv)]):
        r = invoke(*args)
        assert r.exit_code == 2, r.output
        assert_no_command(r.stdout, r.stderr)


def test_check_text_output_with_hostile_manifest_file_names(tmp_path: Path) -> None:
    inv = FIXTURES / "lab" / "inventory.yaml"
    out = tmp_path / "out"
    assert invoke("generate", str(inv), "-o", str(out)).exit_code == 0
    manifests = tmp_path / "m"
    shutil.copytree(out, manifests)
    # every generated manifest renamed to a name that tries to be a command
    for i, p in enumerate(sorted(x for x in manifests.rglob("*.yaml") if x.is_file())):
        p.rename(p.with_name(f"::error::pwned{i}\n::stop-commands::t{i}.yaml"))
    for fmt in ("text", "markdown", "json", "sarif"):
        r = invoke("check", str(inv), str(manifests), "--format", fmt)
        assert r.exit_code in (0, 1), r.output
        assert_no_command(r.stdout, r.stderr)


def test_check_output_file_that_cannot_be_written_is_exit_2_one_line(tmp_path: Path) -> None:
    # Issue 10 item 6: a traceback (exit 1, read as "findings") after printing the report.
    inv = FIXTURES / "lab" / "inventory.yaml"
    r = invoke("check", str(inv), "--format", "text",
               "-o", str(tmp_path / "nonexistent" / "r.md"))
    assert r.exit_code == 2
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("topogate: cannot write the report to ") and "r.md" in line
    assert "Traceback" not in r.output


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_trace_output_with_a_hostile_policy_file_name(tmp_path: Path, fmt: str) -> None:
    lab = tmp_path / "lab"
    shutil.copytree(FIXTURES / "trace" / "lab-zone-label", lab)  # a denied flow: exit 1
    (lab / "policies.yaml").rename(lab / "::error::pwned\n::stop-commands::t ##[error]x.yaml")
    r = invoke("trace", str(lab), "--from", "ml-demo/Deployment/gpu-workers",
               "--to", "ml-demo/Deployment/coordinator", "--port", "23456",
               "--format", fmt)
    assert r.exit_code == 1, r.output
    assert "pwned" in r.stdout  # the policy's file is named, harmlessly
    assert_no_command(r.stdout, r.stderr)


def test_explain_errors_with_a_hostile_workload_argument_and_inventory_name(tmp_path: Path) -> None:
    inv = _lab(tmp_path, "::error::inv\n::stop-commands::t.yaml")
    r = invoke("explain", str(inv), "::error::x\n::stop-commands::y")
    assert r.exit_code == 2, r.output
    assert "no job named" in r.stderr
    assert_no_command(r.stdout, r.stderr)
    broken = tmp_path / "repo" / "::error::broken\n.yaml"
    broken.write_text("clusters: [\n")
    r = invoke("explain", str(broken), "x")
    assert r.exit_code == 2, r.output
    assert_no_command(r.stdout, r.stderr)


def test_a_newline_in_the_inventory_file_name_cannot_inject_yaml_into_generated_files(
        tmp_path: Path) -> None:
    # Found while testing the above: the header comment carried the file name raw, so a newline
    # in it started a line of YAML in every generated file (kustomize then refused them all).
    inv = _lab(tmp_path, "inv.yaml\nresources: [evil.example]")
    out = tmp_path / "out"
    r = invoke("generate", str(inv), "-o", str(out))
    assert r.exit_code == 0, r.output
    for f in out.rglob("*.yaml"):
        text = f.read_text()
        assert "\nresources: [evil.example]" not in text, f
        assert text.splitlines()[0].endswith("do not edit"), f
    r = invoke("check", str(inv), str(out), "--format", "text")
    assert r.exit_code in (0, 1), r.output
