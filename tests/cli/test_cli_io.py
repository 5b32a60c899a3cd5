"""Standard input as a manifest source (`-`), and colour only on a terminal without NO_COLOR."""

from __future__ import annotations

import io
import os
import pty
import subprocess
from pathlib import Path

import pytest
from conftest import TOPOGATE, invoke

from topogate.safeio.stdin import StdinError, read_stdin

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
BROKEN = ROOT / "fixtures" / "incident" / "broken"


def _stream() -> str:
    return "\n---\n".join((BROKEN / f).read_text() for f in ("coordinator.yaml", "workers.yaml", "policies.yaml"))


def test_check_reads_manifests_from_stdin_with_positions() -> None:
    r = invoke("check", LAB, "-", input=_stream())
    assert r.exit_code == 1
    lines = [ln for ln in r.stdout.splitlines() if " TG101 " in ln]
    # nested positions resolve inside the stream, not at the document start
    workers_at = _stream().split("kind: Job\n", 1)[0].count("\n")  # 1-based line of its apiVersion
    assert [ln.split(": ", 1)[0] for ln in lines] == ["<stdin>:11:5", f"<stdin>:{workers_at + 9}:5"]


def test_trace_reads_stdin() -> None:
    r = invoke("trace", "-", "--from", "ml-demo/Deployment/coordinator", "--to",
               "ml-demo/Job/gpu-workers", "--port", "23456", input=_stream())
    assert "[<stdin>:11:5]" in r.stdout and r.exit_code in (0, 1)


def test_stdin_is_bounded_and_binary_is_one_line() -> None:
    with pytest.raises(StdinError, match="more than 1 MiB"):
        read_stdin(io.BytesIO(b"a" * (1024 * 1024 + 1)), limit=1024 * 1024)
    r = invoke("check", LAB, "-", input=b"\x00" * 100)
    assert r.exit_code == 2
    assert r.stderr == "topogate: <stdin>:1:1: U+0000 is not allowed in YAML; remove it or quote it escaped\n"


def _on_a_terminal(env: dict[str, str]) -> str:
    """The CLI's stdout when it is a real pseudo-terminal."""
    master, slave = pty.openpty()
    proc = subprocess.Popen([*TOPOGATE, "check", LAB, str(BROKEN)],
                            stdout=slave, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    os.close(slave)
    chunks = []
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(master)
    return b"".join(chunks).decode()


def test_colour_on_a_terminal_only() -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "GITHUB_ACTIONS")}
    coloured = _on_a_terminal(env)
    assert "\033[31m\033[1merror\033[0m TG101" in coloured and "\033[31m\033[1mFAIL\033[0m" in coloured
    assert "\033[" not in _on_a_terminal({**env, "NO_COLOR": "1"})
    piped = subprocess.run([*TOPOGATE, "check", LAB, str(BROKEN)],
                           capture_output=True, text=True, env=env, cwd=ROOT)
    assert piped.returncode == 1 and "\033[" not in piped.stdout and "FAIL: 3 errors" in piped.stdout
