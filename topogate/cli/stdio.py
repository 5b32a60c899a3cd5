"""Standard output that cannot take the output: one line on stderr and exit 2, never a traceback.

Three ways a command's output is lost: stdout on a full disk (`> /dev/full`, ENOSPC), a reader
that went away (`topogate check ... | head -0`, EPIPE) and no stdout at all (`>&-`, fd 1
closed). Python's own answers are a traceback (ENOSPC), click's silent exit 1 (EPIPE: "findings"
for a clean check) and, with fd 1 closed, no output with exit 0 (click drops what it cannot
print) or a traceback (`sys.stdout` is None). Each is now "topogate: cannot write to standard
output: ...", exit 2 (nothing was delivered; exit codes: topogate.core.exitcodes).

How: the process's stdout is replaced, at start, by a text stream over fd 1 whose writes raise
`StdoutError` (an OSError, so nothing else changes) and which drops everything after the first
failure, so the interpreter's final flush is quiet. The command group catches `StdoutError`
around parsing (group `--help`, `--version`) and around the command, and flushes inside that
guard, so a report still in the buffer fails there too. A closed fd 0, 1 or 2 is opened on
/dev/null first, so no file topogate opens (a lock file, a report) becomes a child's stdout.
In-process runs (click's CliRunner) keep their captured streams untouched.
"""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Callable
from typing import TypeVar

import click

from topogate.core.exitcodes import ExitCode

T = TypeVar("T")


class StdoutError(OSError):
    """A write to standard output failed (full disk, closed pipe, closed descriptor)."""


class _Fd1(io.RawIOBase):
    """fd 1, raw: a failed write raises StdoutError once; later writes are dropped."""

    def __init__(self, closed: bool):
        super().__init__()
        self.was_closed = closed  # fd 1 was closed at start (now /dev/null): every write fails
        self.failed = False

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return not self.was_closed and os.isatty(1)

    def fileno(self) -> int:
        return 1

    def write(self, b: object) -> int:
        data = memoryview(b).cast("B")  # type: ignore[arg-type]
        if self.failed:
            return len(data)
        try:
            if self.was_closed:
                raise OSError(errno.EBADF, "it is closed")
            return os.write(1, data)
        except OSError as e:
            self.failed = True
            raise StdoutError(e.errno, _why(e)) from None


def _why(e: OSError) -> str:
    if e.errno == errno.EPIPE:
        return "the reader closed it (broken pipe)"
    return e.strerror or str(e)


def _open_closed_fds() -> bool:
    """Open /dev/null on any of fds 0-2 that is closed; True when fd 1 was."""
    closed_1 = False
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            got = os.open(os.devnull, os.O_RDWR)
            if got != fd:
                os.dup2(got, fd)
                os.close(got)
            closed_1 = closed_1 or fd == 1
    return closed_1


_ORIGINAL: list[object] = []


def install() -> None:
    """Replace the process's stdout with the guarded one (not under CliRunner, whose stdout is
    a capture: that is never the interpreter's own)."""
    real = sys.__stdout__
    if sys.stdout is not real:
        return
    closed = _open_closed_fds() or real is None
    encoding = real.encoding if real is not None else "utf-8"
    errors = real.errors if real is not None else "strict"
    raw = _Fd1(closed)
    _ORIGINAL.append(real)  # kept: nothing of the interpreter's own stream is finalised early
    sys.stdout = io.TextIOWrapper(io.BufferedWriter(raw), encoding=encoding, errors=errors,
                                  line_buffering=raw.isatty(), write_through=False)
    # The process's stdout now: topogate.core.gctune.one_shot tells the command line from an
    # in-process run (CliRunner) by `sys.stdout is sys.__stdout__`.
    setattr(sys, "__stdout__", sys.stdout)  # noqa: B010 - typeshed marks it Final


def _stderr_line(text: str) -> None:
    try:
        click.echo(text, err=True)
    except OSError:
        pass  # stderr is gone too: the exit code is all that is left


def guarded(step: Callable[[], T]) -> T:
    """Run `step` (parsing, or the command) and flush stdout; a failed write to stdout during
    either is one line and exit 2."""
    try:
        try:
            return step()
        finally:
            if sys.stdout is not None:
                sys.stdout.flush()
    except StdoutError as e:
        _stderr_line(f"topogate: cannot write to standard output: {e.strerror}; the output is incomplete")
        raise click.exceptions.Exit(int(ExitCode.BAD_INVOCATION)) from None


__all__ = ["guarded", "install"]
