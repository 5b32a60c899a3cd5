"""A one-shot `topogate check` process ends without freeing its heap object by object, and
without losing anything a normal exit does: output flushed, the report file written, atexit
handlers run, the exit code kept. In-process callers (tests, explain) are never cut short and
get the collector back as it was."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import TOPOGATE, invoke

from topogate.cli.app import main
from topogate.core import gctune

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
INCIDENT = ROOT / "fixtures" / "incident"


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)


def test_exit_now_flushes_runs_atexit_and_keeps_the_code() -> None:
    p = _python(
        "import atexit, sys\n"
        "from topogate.core import gctune\n"
        "atexit.register(lambda: print('atexit ran'))\n"
        "print('report', end='')\n"
        "sys.stderr.write('note')\n"
        "gctune.exit_now(3)\n"
        "print('never')\n")
    assert (p.returncode, p.stdout, p.stderr) == (3, "reportatexit ran\n", "note")


def test_exit_now_waits_for_a_running_thread_like_a_normal_exit() -> None:
    p = _python(
        "import threading, time\n"
        "from topogate.core import gctune\n"
        "threading.Thread(target=lambda: (time.sleep(0.3), print('thread done'))).start()\n"
        "gctune.exit_now(1)\n")
    assert (p.returncode, p.stdout) == (1, "thread done\n")


def test_only_the_command_line_process_is_one_shot(tmp_path: Path) -> None:
    assert not gctune.one_shot(main)  # pytest's process
    probe = "from topogate.cli import main\nfrom topogate.core import gctune\nprint(gctune.one_shot(main))\n"
    # A program that imports main and calls it in-process is not the command line...
    assert _python(probe).stdout == "False\n"
    # ...a file named as the console script is (here with the probe's body instead of main()).
    script = tmp_path / "topogate"
    script.write_text(probe)
    p = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, check=False)
    assert p.stdout == "True\n"
    # ...and so is python -m topogate.cli (run as runpy runs it for -m), whose check ends in
    # exit_now, as long as its streams are the process's own.
    p = _python(
        "import runpy, sys\n"
        f"sys.argv = ['cli.py', 'check', {str(LAB)!r}, {str(INCIDENT / 'broken')!r}, '--quiet']\n"
        "import topogate.core.gctune as g\n"
        "real = g.exit_now\n"
        "g.exit_now = lambda code: (print('one-shot exit', code), real(code))\n"
        "runpy.run_module('topogate.cli', run_name='__main__', alter_sys=True)\n")
    assert p.returncode == 1 and p.stdout.endswith("one-shot exit 1\n"), p.stderr


def test_cli_process_writes_report_file_and_exit_code(tmp_path: Path) -> None:
    md = tmp_path / "report.md"
    p = subprocess.run(
        [*TOPOGATE, "check", str(LAB), str(INCIDENT / "broken"),
         "--format", "text", "-o", str(md)],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "PYTHONPATH": str(ROOT), "CI": "true"})
    inproc = invoke("check", str(LAB), str(INCIDENT / "broken"), "--format", "text")
    assert p.returncode == inproc.exit_code == 1
    assert p.stdout == inproc.stdout
    assert "```mermaid" in md.read_text()
    assert not list(tmp_path.glob(".topogate-report-*"))


@pytest.mark.parametrize("enabled", [True, False])
def test_in_process_check_gives_the_collector_back(enabled: bool) -> None:
    was = gc.isenabled()
    try:
        gc.enable() if enabled else gc.disable()
        r = invoke("check", str(LAB), str(INCIDENT / "broken"), "--format", "json")
        assert r.exit_code == 1
        assert gc.isenabled() is enabled
    finally:
        gc.enable() if was else gc.disable()


def test_paused_restores_the_collector_on_error() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), gctune.paused():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_generate_builds_and_writes_with_the_collector_paused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Every collection while generate builds its model walks all of it (core.gctune): none
    # runs from the inventory's read to the last file written, and an in-process caller gets
    # the collector back on.
    from topogate.sources import inventory
    from topogate.tree import writer

    seen: list[str] = []
    inside = [False]

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and inside[0]:
            seen.append(f"generation {info['generation']}")

    def load(*args: object, **kwargs: object) -> object:
        inside[0] = True
        return real_load(*args, **kwargs)

    def write(*args: object, **kwargs: object) -> object:
        try:
            return real_write(*args, **kwargs)
        finally:
            inside[0] = False

    real_load, real_write = inventory.load_inventory, writer.write_tree
    monkeypatch.setattr(inventory, "load_inventory", load)
    monkeypatch.setattr(writer, "write_tree", write)
    before = gc.get_threshold()
    gc.set_threshold(1, 1, 1)  # a collection at almost every allocation, were the collector on
    gc.callbacks.append(record)
    try:
        r = invoke("generate", str(LAB), "-o", str(tmp_path / "out"), "--quiet")
    finally:
        gc.callbacks.remove(record)
        gc.set_threshold(*before)
    assert r.exit_code == 0, r.output
    assert (tmp_path / "out" / "clusters").is_dir() and not inside[0]
    assert seen == []
    assert gc.isenabled()
