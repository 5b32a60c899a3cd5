"""The child runner: time, memory and output limits; the group dies with topogate.

Real children throughout: `kubectl kustomize` on a real alias bomb, `sh` and `sleep` for the
process-group and parent-death cases."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hostile_support import alias_bomb

from topogate.safeio import limits, subproc
from topogate.sources.kustomization import run_kustomize


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"


def _wait_dead(pid: int, seconds: float = 15.0) -> bool:  # a loaded 2-core CI machine is slow to reap
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not _alive(pid):
            return True
        time.sleep(0.05)
    return False


def _wait_file(p: Path, seconds: float = 10.0) -> int:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if p.exists() and p.read_text().strip():
            return int(p.read_text().strip())
        time.sleep(0.05)
    raise AssertionError(f"{p} never written")


def test_alias_bomb_kustomization_is_stopped_by_the_memory_limit(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Straight to kubectl, past topogate's own alias check, to measure the limit itself:
    # unlimited, this 560-byte file grew kubectl past 20 GB.
    (tmp_path / "cm.yaml").write_text(alias_bomb())
    (tmp_path / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    monkeypatch.setenv("TOPOGATE_CHILD_MEMORY_MB", "1536")
    start = time.monotonic()
    proc = run_kustomize(tmp_path)
    took = time.monotonic() - start
    assert proc.returncode != 0
    assert "the memory limit (TOPOGATE_CHILD_MEMORY_MB" in proc.stderr.splitlines()[-1]
    assert took < 20, took


def test_timeout_kills_the_whole_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPOGATE_CHILD_TIMEOUT", "1")
    gc = tmp_path / "grandchild"
    start = time.monotonic()
    proc = subproc.run(["sh", "-c", f"sleep 60 & echo $! > {gc}; wait"])
    assert time.monotonic() - start < 10
    assert proc.returncode != 0
    assert "time limit (TOPOGATE_CHILD_TIMEOUT)" in proc.stderr
    assert _wait_dead(_wait_file(gc))


def test_output_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPOGATE_CHILD_OUTPUT_MB", "1")
    proc = subproc.run(["sh", "-c", "exec cat /dev/zero"])
    assert proc.returncode != 0 and "output limit" in proc.stderr


def test_success_passes_output_through() -> None:
    proc = subproc.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (proc.returncode, proc.stdout, proc.stderr) == (3, "out\n", "err\n")


def test_a_child_leads_its_own_group_inside_our_session() -> None:
    # Its own group, so a limit kills the whole of it; our session, so its niceness weighs
    # against our threads: where the kernel groups tasks by session for scheduling (autogroup,
    # on by default on most distributions), a child in a session of its own gets as much CPU
    # as all of topogate, whatever its niceness: six kustomize builds at nice 10 held the one
    # thread the builds' output waits on to a third of a CPU.
    code = "import os; print(os.getsid(0), os.getpgrp(), os.getpid(), os.nice(0))"
    proc = subproc.run([sys.executable, "-c", code], nice=10)
    sid, pgrp, pid, nice = map(int, proc.stdout.split())
    assert (sid, pgrp, nice) == (os.getsid(0), pid, min(19, os.nice(0) + 10))
    # The autogroup file, where the kernel has one, names the child's group as ours. Some
    # kernels and sandboxes show it empty or refuse it: then both reads say the same.
    read = ("import sys\ntry:\n    print(open('/proc/self/autogroup').read().split()[:1])\n"
            "except OSError as e:\n    print(type(e).__name__)")
    seen = subproc.run([sys.executable, "-c", read]).stdout
    ours = subprocess.run([sys.executable, "-c", read], capture_output=True, text=True,
                          check=True).stdout
    assert seen == ours


def _topogate_with_child(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int, int]:
    """A Python running subproc.run on a child that starts a grandchild; their pids."""
    child, grandchild = tmp_path / "child", tmp_path / "grandchild"
    code = ("from topogate.safeio import subproc; "
            f"subproc.run(['sh', '-c', 'sleep 60 & echo $! > {grandchild}; echo $$ > {child}; wait'])")
    py = subprocess.Popen([sys.executable, "-c", code], env={**os.environ})
    return py, _wait_file(child), _wait_file(grandchild)


def test_sigterm_to_topogate_kills_the_children(tmp_path: Path) -> None:
    py, child, grandchild = _topogate_with_child(tmp_path)
    py.send_signal(signal.SIGTERM)
    assert py.wait(10) == -signal.SIGTERM  # still dies of the signal, as without the handler
    assert _wait_dead(child) and _wait_dead(grandchild)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_sigkill_to_topogate_kills_the_child(tmp_path: Path) -> None:
    # SIGKILL runs no handler: the kernel's parent-death signal is what stops the child.
    py, child, grandchild = _topogate_with_child(tmp_path)
    py.kill()
    py.wait(10)
    assert _wait_dead(child)
    os.kill(grandchild, signal.SIGKILL)  # beyond the guarantee (see docs/security.md): tidy up


def test_bad_limit_variable_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOPOGATE_CHILD_TIMEOUT", "soon")
    with pytest.raises(limits.LimitError, match="TOPOGATE_CHILD_TIMEOUT='soon'"):
        limits.current()
    monkeypatch.setenv("TOPOGATE_CHILD_TIMEOUT", "²")
    with pytest.raises(limits.LimitError):
        limits.current()


def test_kustomize_runs_offline(tmp_path: Path) -> None:
    # The build that slips past every check still reaches no network: git is allowed no
    # transport (the URL is 127.0.0.1's closed port 9 in case that ever fails).
    (tmp_path / "kustomization.yaml").write_text(
        "resources:\n- http://127.0.0.1:9/example/repo//base?ref=v1\n")
    proc = run_kustomize(tmp_path)
    assert proc.returncode != 0
    assert "transport 'http' not allowed" in proc.stderr
