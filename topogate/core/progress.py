"""Progress on stderr for work that takes more than about a second, for a person at a terminal.

Never under CI (`CI` set to anything but false/0), never when stderr is not a terminal, never
with machine formats (json, sarif) or --quiet: a log or a parser must see exactly the report.
One status line, redrawn in place and erased when the work ends, so the terminal afterwards
holds only what the command printed.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TextIO

MACHINE_FORMATS = ("json", "sarif", "junit")
_current: _Line | None = None


def wanted(fmt: str = "text", quiet: bool = False, stream: TextIO | None = None,
           env: Mapping[str, str] | None = None) -> bool:
    stream = sys.stderr if stream is None else stream
    env = os.environ if env is None else env
    under_ci = env.get("CI", "").strip().lower() not in ("", "0", "false")
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):  # a closed or foreign stream
        tty = False
    return tty and not under_ci and not quiet and fmt not in MACHINE_FORMATS


class _Line(threading.Thread):
    def __init__(self, label: str, stream: TextIO, delay: float, every: float):
        super().__init__(name="topogate-progress", daemon=True)
        self.label = label
        self.detail = ""
        self.stream = stream
        self.delay = delay
        self.every = every
        self.started = time.monotonic()
        self.done = threading.Event()
        self.drawn = False

    def run(self) -> None:
        if self.done.wait(self.delay):
            return  # quick work: say nothing
        while not self.done.is_set():
            elapsed = time.monotonic() - self.started
            detail = f": {self.detail}" if self.detail else ""
            self.stream.write(f"\r\x1b[K{self.label}{detail} ({elapsed:.0f} s)")
            self.stream.flush()
            self.drawn = True
            self.done.wait(self.every)

    def stop(self) -> None:
        self.done.set()
        self.join()
        if self.drawn:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


@contextlib.contextmanager
def shown(label: str, on: bool, stream: TextIO | None = None, delay: float = 1.0,
          every: float = 0.5) -> Iterator[None]:
    """Show `label` (and the latest note) while the block runs, if `on` and it runs > delay."""
    global _current
    if not on or _current is not None:
        yield
        return
    line = _Line(label, sys.stderr if stream is None else stream, delay, every)
    _current = line
    line.start()
    try:
        yield
    finally:
        _current = None
        line.stop()


def note(detail: str) -> None:
    """What the work is doing now; costs a global lookup when no progress is shown."""
    line = _current
    if line is not None:
        line.detail = detail
