"""Reviewable diffs: a generated file changes only when its own content does, and drift is shown
where it is (first differing line) and as a unified diff."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import TOPOGATE, run_cli

from topogate.generators import render_tree
from topogate.sources.inventory import load_inventory
from topogate.tree import writer
from topogate.tree.treediff import first_difference

ROOT = Path(__file__).resolve().parents[2]
JOB = "clusters/gpu-east/workloads/ml-team/bert-mpi"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """fixtures/multi copied, with its generated tree in deploy/."""
    shutil.copytree(ROOT / "fixtures" / "multi", tmp_path / "topogate")
    code, _, err = run_cli("generate", str(tmp_path / "topogate/inventory.yaml"), "-o", str(tmp_path / "deploy"))
    assert code == 0, err
    return tmp_path


def _changed(repo: Path) -> list[tuple[str, str]]:
    inv = load_inventory(str(repo / "topogate/inventory.yaml"))
    out = repo / "deploy"
    return writer.diff_tree(out, render_tree(inv, str(out)))


def test_editing_a_base_image_changes_no_generated_file(repo: Path) -> None:
    # The incident of issue 12: one image tag in one base marked every generated file changed.
    job = repo / "topogate/bases/llama-ft/job.yaml"
    job.write_text(job.read_text().replace("llama-ft:1.4.2", "llama-ft:1.4.3"))
    assert _changed(repo) == []


def test_changing_one_job_changes_only_that_jobs_files(repo: Path) -> None:
    inv = repo / "topogate/inventory.yaml"
    inv.write_text(inv.read_text().replace("  zone: us-east-1a\n", "  zone: us-east-1b\n", 1))
    changed = _changed(repo)
    assert changed, "moving the job to another zone must change its overlay"
    assert all(status == "changed" and path.startswith(JOB + "/") for status, path in changed), changed


def test_generate_check_diff_prints_a_unified_diff(repo: Path) -> None:
    patch = repo / "deploy" / JOB / "placement-patch.yaml"
    patch.write_text(patch.read_text().replace("us-east-1a", "us-east-1c"))
    inv, out = str(repo / "topogate/inventory.yaml"), str(repo / "deploy")
    code, stdout, _ = run_cli("generate", inv, "-o", out, "--check", "--diff")
    assert code == 1
    assert f"  changed  {JOB}/placement-patch.yaml" in stdout
    assert f"--- {out}/{JOB}/placement-patch.yaml (committed)\n" in stdout
    assert f"+++ {out}/{JOB}/placement-patch.yaml (generate)\n" in stdout
    assert "\n-            - us-east-1c\n" in stdout and "\n+            - us-east-1a\n" in stdout
    # Without --diff the list alone, as before.
    code, stdout, _ = run_cli("generate", inv, "-o", out, "--check")
    assert code == 1 and "---" not in stdout


def test_diff_without_check_implies_it(repo: Path) -> None:
    # Before: exit 2, "--diff goes with --check". Asking for the diff is asking to compare:
    # nothing is written.
    code, stdout, stderr = run_cli("generate", str(repo / "topogate/inventory.yaml"), "-o", str(repo / "x"), "--diff")
    assert code == 1 and "is not what `topogate generate` would write" in stdout and "+++ " in stdout
    assert not (repo / "x").exists()


def test_tg002_points_at_the_first_differing_line_and_shows_the_diff(repo: Path) -> None:
    cnp = repo / "deploy" / JOB / "ciliumnetworkpolicy.yaml"
    lines = cnp.read_text().splitlines(keepends=True)
    target = next(i for i, ln in enumerate(lines) if "port: '22'" in ln)
    lines[target] = lines[target].replace("'22'", "'2222'")
    cnp.write_text("".join(lines))
    inv, out = str(repo / "topogate/inventory.yaml"), str(repo / "deploy")
    code, text, _ = run_cli("check", inv, "--rendered", out, out, "--format", "text")
    assert code == 1
    drift = [ln for ln in text.splitlines() if " TG002 " in ln]
    assert drift == [ln for ln in drift if ln.startswith(f"{out}/{JOB}/ciliumnetworkpolicy.yaml:{target + 1}:1: ")]
    assert len(drift) == 1
    assert "\n    -      - port: '2222'\n    +      - port: '22'\n" in text  # the diff, indented
    _, md, _ = run_cli("check", inv, "--rendered", out, out, "--format", "markdown")
    assert "```diff\n" in md and "\n-      - port: '2222'\n+      - port: '22'\n" in md
    _, gh, _ = run_cli("check", inv, "--rendered", out, out, "--format", "github")
    assert f"file={out}/{JOB}/ciliumnetworkpolicy.yaml,line={target + 1}," in gh


def test_rendered_directory_that_does_not_exist_is_exit_2_one_line(repo: Path) -> None:
    inv = str(repo / "topogate/inventory.yaml")
    code, stdout, stderr = run_cli("check", inv, "--rendered", str(repo / "nope"), str(repo / "deploy"))
    assert code == 2 and stdout == ""
    assert stderr.count("\n") == 1 and "--rendered" in stderr and "no such directory" in stderr


@pytest.mark.parametrize(("old", "new", "line"), [
    (["a\n", "b\n", "c\n"], ["a\n", "B\n", "c\n"], 2),
    (["a\n", "b\n"], ["a\n", "b\n", "c\n"], 2),  # appended: the last committed line
    (["a\n", "b\n", "c\n"], ["a\n"], 2),  # cut: the first line generate no longer writes
    ([], ["a\n"], 1),
])
def test_first_difference(old: list[str], new: list[str], line: int) -> None:
    assert first_difference(old, new) == line


def test_markdown_diff_cannot_break_out_of_its_block(repo: Path) -> None:
    # A committed file is pull-request input: backticks in it must not close the diff's fence.
    cnp = repo / "deploy" / JOB / "ciliumnetworkpolicy.yaml"
    cnp.write_text(cnp.read_text() + "# `````\n# <img src=x onerror=alert(1)>\n")
    inv, out = str(repo / "topogate/inventory.yaml"), str(repo / "deploy")
    _, md, _ = run_cli("check", inv, "--rendered", out, out, "--format", "markdown")
    assert "``````diff\n" in md and "\n``````\n" in md


def test_check_diff_with_a_fifo_in_place_of_a_generated_file_does_not_hang(repo: Path) -> None:
    """A committed tree comes from the pull request: a FIFO where a generated file belongs is a
    difference to show, never something to wait on (before the fix `--diff` blocked in read)."""
    import os
    import subprocess

    victim = repo / "deploy" / JOB / "kustomization.yaml"
    victim.unlink()
    os.mkfifo(victim)
    # A subprocess with a timeout: an in-process hang would stall the whole suite.
    proc = subprocess.run(
        [*TOPOGATE, "generate", str(repo / "topogate/inventory.yaml"),
         "-o", str(repo / "deploy"), "--check", "--diff"],
        capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 1, proc.stderr
    assert f"{JOB}/kustomization.yaml" in proc.stdout
    assert f"+++ b/{JOB}/kustomization.yaml" in proc.stdout or JOB in proc.stdout
