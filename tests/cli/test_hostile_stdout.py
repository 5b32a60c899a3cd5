"""Output that cannot be delivered is one line and exit 2, never a traceback (issue 21, item 18).

Run as real processes: the cases are the process's own file descriptors. Standard output on a
full disk (/dev/full), a reader that went away (`| head -0`: a pipe whose read end is closed
before the command starts) and a closed fd 1 (`>&-`); `-o FILE` in a directory nobody may
write, for `import` and `check --live`.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import TOPOGATE

ROOT = Path(__file__).resolve().parents[2]
LAB = "fixtures/lab/inventory.yaml"
EKS = "fixtures/live/eks/inventory.yaml"
NODES = "fixtures/live/eks-nodes.json"
LIVE_OK = "fixtures/live/eks/live-ok.json"
LINE = "topogate: cannot write to standard output: {}; the output is incomplete\n"


def _commands(tmp: Path) -> dict[str, list[str]]:
    """A run of every command that prints to standard output, by name."""
    return {
        "check": ["check", LAB, "fixtures/incident/broken"],
        "check --live": ["check", EKS, "--live", "--from-file", LIVE_OK],
        "generate": ["generate", LAB, "-o", str(tmp / "out")],
        "explain": ["explain", LAB, "train", "fixtures/incident/broken"],
        "trace": ["trace", "fixtures/trace/lab", "--from", "ml-demo/Deployment/gpu-workers",
                  "--to", "ml-demo/Deployment/coordinator", "--port", "23456"],
        "diff": ["diff", LAB, "fixtures/lab", "--base", "HEAD"],
        "rules": ["rules"],
        "config": ["config"],
        "clusters": ["clusters", LAB],
        "import": ["import", "--from-file", NODES, "-o", str(tmp / "imported.yaml"), "--force"],
        "drift": ["drift", EKS, "--from-file", NODES],
        "--help": ["--help"],
        "check --help": ["check", "--help"],
        "--version": ["--version"],
    }


def _run(args: list[str], stdout: int | None = None, close_fd1: bool = False) -> tuple[int, str]:
    proc = subprocess.run([*TOPOGATE, *args], cwd=ROOT, stdout=stdout,
                          stderr=subprocess.PIPE, text=True, timeout=120,
                          preexec_fn=(lambda: os.close(1)) if close_fd1 else None)
    return proc.returncode, proc.stderr


def _no_traceback(err: str) -> bool:
    return "Traceback" not in err and "Exception ignored" not in err


@pytest.mark.parametrize("name", list(_commands(Path("/"))))
def test_stdout_on_a_full_disk(name: str, tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        code, err = _run(_commands(tmp_path)[name], stdout=full.fileno())
    assert _no_traceback(err), err
    assert (code, err) == (2, LINE.format("No space left on device"))


def _closed_pipe() -> Iterator[int]:
    r, w = os.pipe()
    os.close(r)  # the reader is gone before the command writes anything: EPIPE, every time
    try:
        yield w
    finally:
        os.close(w)


@pytest.mark.parametrize("name", ["check", "generate", "rules", "--help"])
def test_stdout_read_by_a_reader_that_went_away(name: str, tmp_path: Path) -> None:
    """`topogate ... | head -0`: click's own answer was exit 1 (findings) with no word."""
    w = next(gen := _closed_pipe())
    code, err = _run(_commands(tmp_path)[name], stdout=w)
    gen.close()
    assert _no_traceback(err), err
    assert (code, err) == (2, LINE.format("the reader closed it (broken pipe)"))


@pytest.mark.parametrize("name", ["check", "generate", "rules", "--help"])
def test_stdout_closed(name: str, tmp_path: Path) -> None:
    """`topogate ... >&-`: a traceback (check), or nothing printed and exit 0 (rules)."""
    code, err = _run(_commands(tmp_path)[name], close_fd1=True)
    assert _no_traceback(err), err
    assert (code, err) == (2, LINE.format("it is closed"))


def test_a_command_that_prints_nothing_runs_with_stdout_closed(tmp_path: Path) -> None:
    """Only a write fails: `generate -q` prints nothing, so a closed fd 1 is no problem, and no
    file it opens (the lock, the tree) takes fd 1's place."""
    code, err = _run(["generate", LAB, "-o", str(tmp_path / "out"), "-q"], close_fd1=True)
    assert (code, err) == (0, "")
    assert (tmp_path / "out" / "clusters" / "lab" / "kustomization.yaml").is_file()


def test_a_report_through_a_pipe_is_whole(tmp_path: Path) -> None:
    """The guarded stdout changes nothing for a reader that stays: every byte, the same exit."""
    proc = subprocess.run([*TOPOGATE, "check", LAB, "fixtures/incident/broken"],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and proc.stderr == ""
    assert proc.stdout.endswith("\n") and "FAIL: 3 errors" in proc.stdout


@pytest.fixture
def unwritable(tmp_path: Path) -> Iterator[Path]:
    """A directory this user cannot create files in: mode 0555, or for root (who ignores modes)
    the immutable attribute."""
    d = tmp_path / "locked"
    d.mkdir()
    if os.geteuid() != 0:
        d.chmod(0o555)
        yield d
        d.chmod(0o755)
        return
    if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode != 0:
        pytest.skip("root ignores file modes and chattr +i is not available here")
    try:
        yield d
    finally:
        subprocess.run(["chattr", "-i", str(d)], check=True)


def test_import_into_an_unwritable_directory(unwritable: Path) -> None:
    """A traceback (PermissionError from mkstemp) after the cluster was read; now one line
    before it is: the snapshot named here does not even exist."""
    target = unwritable / "x.yaml"
    code, err = _run(["import", "--from-file", "no-such-snapshot.json", "-o", str(target)],
                     stdout=subprocess.DEVNULL)
    assert code == 2 and "Traceback" not in err
    assert err == f"topogate import: cannot write {target}: {unwritable} is not a writable directory [exit 2]\n"
    assert list(unwritable.iterdir()) == []


def test_check_live_report_into_an_unwritable_directory(unwritable: Path) -> None:
    """Refused before the cluster is read (the pre-check every -o passes), nothing printed."""
    target = unwritable / "report.md"
    code, err = _run(["check", EKS, "--live", "--from-file", "no-such-snapshot.json", "-o", str(target)],
                     stdout=subprocess.PIPE)
    assert code == 2 and "Traceback" not in err
    assert err == f"topogate: cannot write the report to {target}: {unwritable} is not a writable directory\n"
    assert list(unwritable.iterdir()) == []
