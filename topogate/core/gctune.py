"""Cyclic garbage collection paused while a large, acyclic model is built in one go.

`generate` and `check` allocate millions of dicts, lists and nodes and free almost none of them
until they exit; every collection of an older generation walks all that was made so far, more
often the larger the input. Measured with gc.callbacks on the benchmark's `generate` (stop 49):
at 10,000 jobs 136 collections took 0.7-1.3 s (0.06 s at 2,000 jobs) with the thresholds
raised for the render, the superlinear part of its time, and none with the collector paused;
peak RSS the same (308 MiB), as what it builds has no cyclic garbage to speak of (a parser
breaks its own cycles when disposed). The collector only decides when unreachable cycles are
freed, never what a program computes.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NoReturn


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside the block; the collector's state is put back after it.

    For a block that builds a large model and frees almost nothing: each collection would
    rescan the growing heap (measured: 3x the parse time of a check). Nested blocks and a
    collector already off (a one-shot command) are left as they are."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def one_shot(entry: object) -> bool:
    """Whether this process is the command line itself, which ends when its command does:
    `python -m topogate.cli`, or the `topogate` console script (a file of that name that
    imports `main` and calls it). Not a test, nor a program that calls `main` in-process
    (CliRunner replaces the standard streams; a program of its own has another name)."""
    m = sys.modules.get("__main__")
    if entry is None or getattr(m, "main", None) is not entry:
        return False
    if sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__:
        return False
    spec = getattr(m, "__spec__", None)
    if spec is not None:
        return bool(spec.name in ("topogate.cli", "topogate.cli.__main__"))
    name = os.path.basename(str(getattr(m, "__file__", "") or ""))
    return name.removesuffix(".exe").removesuffix("-script.py") == "topogate"


def hold() -> None:
    """No cyclic collection for the rest of a one-shot command.

    A check at 10,000 jobs ends with a heap of about 1 GB built with the collector paused; the
    first collection after the pause walked all of it (6.3 s, seen in the reporter's sort).
    What the command still allocates after that is the report, freed by reference counting."""
    gc.disable()


def exit_now(code: int) -> NoReturn:
    """End a one-shot command without freeing its heap object by object.

    At interpreter exit every object is deallocated in turn, seconds for a large check, after
    the report is printed. Output is flushed and the atexit handlers run (they stop kubectl
    children and remove temporary directories) as on a normal exit; then the process ends.
    Anything unusual (a closed stream, a thread still running) takes the normal exit, so the
    interpreter reports and waits exactly as it always has; a standard output that cannot be
    written (a full disk, a reader gone) raises here, for the command line to report in one
    line (topogate.cli.stdio) rather than exit with `code` as if the report had been read."""
    try:
        sys.stdout.flush()
    except ValueError:
        sys.exit(code)
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        sys.exit(code)
    if threading.active_count() > 1:
        sys.exit(code)
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        os._exit(120)  # what the interpreter exits with when it cannot flush at exit
    os._exit(code)

__all__ = ["exit_now", "hold", "one_shot", "paused"]
