"""`-o FILE` onto what is not a regular file (issue 33, item 7).

A regular file (or a new name) is replaced whole, atomically. A character device or a FIFO
(`-o /dev/stdout` in a pipeline, `-o /dev/null`, `-o >(gzip > r.gz)`) is written through, as a
shell's `>` writes it, escaped for a CI log as standard output is: replacing it would put a
regular file where the device node was (as root, `schema -o /dev/null` did). A directory, a
socket or a block device is refused with exit 2 before any work.

Run as real processes: what is at stake is what the command does to the file system. The real
/dev/null and /dev/full are named directly only after the same command was seen to write
through a symbolic link to them in a temporary directory, so that code which would replace the
node replaces the link instead, and never the machine's device.
"""

from __future__ import annotations

import os
import select
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
from conftest import TOPOGATE

ROOT = Path(__file__).resolve().parents[2]
LAB = "fixtures/lab/inventory.yaml"
BROKEN = "fixtures/incident/broken"
CHECK = ["check", LAB, BROKEN]


def _cmd(args: list[str]) -> list[str]:
    return [*TOPOGATE, *args]


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(_cmd(args), cwd=ROOT, capture_output=True, text=True, timeout=120)


def _schema() -> str:
    from topogate.cli.schema import schema_text

    return schema_text()


def _through_fifo(args: list[str], fifo: Path) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Run `args` while this process reads `fifo` (opened first, without blocking, so the command
    never waits for a reader); what came through it."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    got = bytearray()
    try:
        proc = subprocess.Popen(_cmd(args), cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            ready, _, _ = select.select([fd], [], [], 0.1)
            chunk = os.read(fd, 1 << 16) if ready else b""
            got += chunk
            if not chunk and proc.poll() is not None:
                break
        out, err = proc.communicate(timeout=10)
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), bytes(got)
    finally:
        os.close(fd)


def _is_char_device(path: str, rdev: int) -> bool:
    st = os.lstat(path)
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == rdev


def test_a_fifo_is_written_through_and_stays_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "schema.json"
    os.mkfifo(fifo)
    proc, got = _through_fifo(["schema", "-o", str(fifo)], fifo)
    assert proc.returncode == 0, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO was replaced by a regular file"
    assert got.decode() == _schema()
    assert list(tmp_path.iterdir()) == [fifo]  # no temporary file left beside it


def test_a_report_through_a_fifo_is_the_one_printed_for_the_log(tmp_path: Path) -> None:
    # A file name a pull request chose, carrying a workflow command: standard output escapes it,
    # and so does the report that goes through a FIFO (which may be the runner's log).
    fifo = tmp_path / "report.md"
    os.mkfifo(fifo)
    proc, got = _through_fifo([*CHECK, "--format", "markdown", "-o", str(fifo)], fifo)
    assert proc.returncode == 1, proc.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert got.decode() == proc.stdout and proc.stdout.startswith("## ❌ topogate check failed")


def test_a_link_to_a_character_device_is_written_through(tmp_path: Path) -> None:
    null_dev, full_dev = os.stat("/dev/null").st_rdev, os.stat("/dev/full").st_rdev
    link = tmp_path / "schema.json"
    link.symlink_to("/dev/null")
    proc = _run(["schema", "-o", str(link)])
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/null", "the link was replaced by a regular file"
    full = tmp_path / "report.md"
    full.symlink_to("/dev/full")
    proc = _run([*CHECK, "-o", str(full)])
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().endswith(f"-o {full}: cannot write: No space left on device")
    assert full.is_symlink() and os.readlink(full) == "/dev/full"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md", "schema.json"]
    # The same through the devices themselves (safe now: the links above were written through).
    proc = _run(["schema", "-o", "/dev/null"])
    assert proc.returncode == 0 and _is_char_device("/dev/null", null_dev), proc.stderr
    proc = _run([*CHECK, "-o", "/dev/full"])
    assert proc.returncode == 2 and "-o /dev/full: cannot write: No space left on device" in proc.stderr
    assert _is_char_device("/dev/full", full_dev)
    assert _is_char_device("/dev/null", null_dev)


def test_dev_stdout_is_standard_output(tmp_path: Path) -> None:
    if not os.path.islink("/dev/stdout"):
        pytest.skip("no /dev/stdout link on this machine")
    before = os.readlink("/dev/stdout")
    fifo = tmp_path / "probe.json"
    os.mkfifo(fifo)  # the same write-through first, where a replace would cost nothing
    proc, got = _through_fifo(["schema", "-o", str(fifo)], fifo)
    assert proc.returncode == 0 and stat.S_ISFIFO(os.lstat(fifo).st_mode) and got.decode() == _schema()
    proc = _run(["schema", "-o", "/dev/stdout"])  # standard output: a pipe
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == _schema()
    out = tmp_path / "out.txt"
    with out.open("w") as fh:  # standard output: a regular file; the report is added to it
        done = subprocess.run(_cmd([*CHECK, "--format", "json", "-o", "/dev/stdout", "--output-format", "text"]),
                              cwd=ROOT, stdout=fh, stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    text = out.read_text()
    assert text.startswith("{") and text.rstrip().endswith("FAIL: 3 errors, 0 warnings in 1 workload")
    assert os.path.islink("/dev/stdout") and os.readlink("/dev/stdout") == before


def test_a_directory_or_a_socket_is_refused_before_any_work(tmp_path: Path) -> None:
    d = tmp_path / "d"
    d.mkdir()
    to_dir = tmp_path / "to-dir.json"
    to_dir.symlink_to(d)
    proc = _run(["schema", "-o", str(to_dir)])
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"topogate schema: {to_dir} is a directory"
    assert to_dir.is_symlink() and d.is_dir() and list(d.iterdir()) == []
    sock_path = tmp_path / "report.md"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(sock_path))
        for args in (["schema", "-o", str(sock_path)], [*CHECK, "-o", str(sock_path)]):
            proc = _run(args)
            assert proc.returncode == 2, (args, proc.stderr)
            assert f"{sock_path} is a socket" in proc.stderr and proc.stdout == ""
            assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)


def test_a_regular_file_is_still_replaced_whole(tmp_path: Path) -> None:
    f = tmp_path / "schema.json"
    f.write_text("old")
    inode = f.stat().st_ino
    hard = tmp_path / "other-name"
    os.link(f, hard)  # a second name of the old file keeps the old text: a new file took the name
    proc = _run(["schema", "-o", str(f)])
    assert proc.returncode == 0, proc.stderr
    assert f.read_text() == _schema() and f.stat().st_ino != inode and hard.read_text() == "old"
