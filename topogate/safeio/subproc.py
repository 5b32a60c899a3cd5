"""Run a child (`kubectl kustomize`) so that hostile input cannot make it outlive or outgrow us.

Each child runs in a process group of its own, under an address-space limit (RLIMIT_AS), with
a wall-clock timeout and a cap on what it may print; on Linux it is also told to die with the
thread that started it (PR_SET_PDEATHSIG). Whatever way the run ends (done, timed out, over
the cap, KeyboardInterrupt, SIGTERM/SIGHUP, interpreter exit) the whole group is killed, so
nothing it started survives.

Measured with a 2 KB alias-bomb kustomization (tests/safeio/test_subproc.py): unlimited, kubectl grew
past 20 GB; under the default limit it stops with "out of memory" in about a second.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import FrameType

from topogate.safeio import limits

_PR_SET_PDEATHSIG = 1
_STDERR_KEEP = 64 * 1024  # the tail of stderr is what messages quote


def _resolve_prctl() -> Callable[..., int] | None:
    """libc's prctl, looked up once in the parent: the child may not load libraries (a lock
    held by another thread at fork time would deadlock it)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        # lazy: ctypes only where prctl exists (Linux), looked up once
        import ctypes

        fn: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
        return fn
    except (OSError, AttributeError):  # pragma: no cover - a libc without prctl
        return None


_PRCTL = _resolve_prctl()
_LIVE: set[int] = set()  # process groups of running children
_LIVE_LOCK = threading.Lock()


def _child_setup(memory: int, parent: int, nice: int = 0) -> Callable[[], None]:
    """Runs in the child between fork and exec: plain system calls only, nothing that locks."""

    def setup() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
        if nice:
            os.nice(nice)
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != parent:  # the parent died before the request took effect
                os._exit(1)

    return setup


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def kill_all() -> None:
    """Kill every running child's group (on exit and on a terminating signal)."""
    with _LIVE_LOCK:
        groups = list(_LIVE)
    for pgid in groups:
        _kill_group(pgid)


def _on_signal(signum: int, frame: FrameType | None) -> None:
    kill_all()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)  # die of the same signal, as without the handler


_installed = False


def install_handlers() -> None:
    """Kill children on SIGTERM/SIGHUP and at exit. Only from the main thread, only over the
    default action (an embedding program's own handlers are left alone)."""
    global _installed
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    _installed = True
    atexit.register(kill_all)
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) == signal.SIG_DFL:
            signal.signal(sig, _on_signal)


def _pump(proc: subprocess.Popen[bytes], deadline: float, cap: int) -> tuple[bytes, bytes, str]:
    """Read both pipes until EOF; stop early at the deadline or when stdout passes the cap."""
    out: list[bytes] = []
    err = bytearray()
    size = 0
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    try:
        while sel.get_map():
            left = deadline - time.monotonic()
            if left <= 0:
                return b"".join(out), bytes(err), "timeout"
            for key, _ in sel.select(timeout=min(left, 1.0)):
                chunk = os.read(key.fd, 65536)
                if not chunk:
                    sel.unregister(key.fileobj)
                elif key.data == "out":
                    out.append(chunk)
                    size += len(chunk)
                    if size > cap:
                        return b"".join(out), bytes(err), "output"
                else:
                    err += chunk
                    del err[:-_STDERR_KEEP]
    finally:
        sel.close()
    return b"".join(out), bytes(err), ""


# What a child may see of our environment. Everything else (AWS keys, GITHUB_TOKEN, a
# kubeconfig's path, proxy credentials) stays with us: kubectl kustomize and git need none of it.
_CHILD_ENV = ("PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "TZ", "USER",
              "LOGNAME")


def child_env() -> dict[str, str]:
    """The allow-listed part of os.environ, for a child's own environment to build on."""
    return {k: os.environ[k] for k in _CHILD_ENV if k in os.environ}


def run(argv: Sequence[str], env: Mapping[str, str] | None = None, nice: int = 0) -> subprocess.CompletedProcess[str]:
    """Run argv to completion under the limits; a stopped run is a non-zero return code whose
    stderr's last line says which limit stopped it and how to change it. `nice`: added to the
    child's niceness (a child working beside the caller, which waits on its own work first)."""
    try:
        lim = limits.current()
    except limits.LimitError as e:
        return _stopped(argv, f"not started: {e}")
    install_handlers()
    proc = subprocess.Popen(
        list(argv), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=None if env is None else dict(env), process_group=0,
        preexec_fn=_child_setup(lim.child_memory_bytes, os.getpid(), nice),
    )
    pgid = proc.pid  # process_group=0: the child leads its own group
    with _LIVE_LOCK:
        _LIVE.add(pgid)
    deadline = time.monotonic() + lim.child_timeout_s
    try:
        out, err, stopped = _pump(proc, deadline, lim.child_output_bytes)
        if not stopped:
            # Both pipes at EOF: the child is exiting. Its own exit status, not the kill below
            # racing it (which made a finished `env` or `kubectl` look killed, -9).
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                stopped = "timeout"  # it closed its pipes but lives on
    finally:
        # Done or not, nothing of the group may outlive this call.
        _kill_group(pgid)
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                pipe.close()
        with _LIVE_LOCK:
            _LIVE.discard(pgid)
    stderr = err.decode("utf-8", "replace")
    code = proc.returncode
    if stopped == "timeout":
        return _stopped(argv, f"stopped after {lim.child_timeout_s} s, the time limit "
                              "(TOPOGATE_CHILD_TIMEOUT)")
    if stopped == "output":
        return _stopped(argv, f"stopped: printed more than {lim.child_output_bytes // limits.MiB} "
                              "MB, the output limit (TOPOGATE_CHILD_OUTPUT_MB)")
    if code != 0 and "out of memory" in stderr:
        return _stopped(argv, f"stopped: needed more than {lim.child_memory_bytes // limits.MiB} MB, "
                              "the memory limit (TOPOGATE_CHILD_MEMORY_MB; an alias bomb?)")
    return subprocess.CompletedProcess(list(argv), code, out.decode("utf-8", "replace"), stderr)


def _stopped(argv: Sequence[str], message: str) -> subprocess.CompletedProcess[str]:
    return subprocess.CompletedProcess(list(argv), -signal.SIGKILL, "", message)

