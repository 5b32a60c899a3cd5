"""One value computed in a forked child process and sent back pickled over a pipe.

For pure Python work that would otherwise hold the one interpreter (the GIL) while a second
CPU idles: the child starts as a copy of this process, so it needs nothing passed to it and
nothing imported again. Anything amiss (no fork on this system, the child raising, dying or not
answering in time) gives None, and the caller does the work itself: the answer never depends on
whether the child helped. A child past its deadline is killed; every child is reaped.
"""

from __future__ import annotations

import os
import pickle
import select
import signal
import time
from collections.abc import Callable
from typing import Any


class Child:
    """A running child; `result` waits for its value (at most `timeout` seconds)."""

    def __init__(self, pid: int, fd: int):
        self.pid, self.fd = pid, fd

    @classmethod
    def start(cls, work: Callable[[], object]) -> Child | None:
        if not hasattr(os, "fork"):
            return None
        try:
            r, w = os.pipe()
            pid = os.fork()
        except OSError:
            return None
        if pid == 0:  # the child: never returns into the caller's code
            code = 1
            try:
                os.close(r)
                data = pickle.dumps(work(), protocol=pickle.HIGHEST_PROTOCOL)
                with os.fdopen(w, "wb") as out:
                    out.write(data)
                code = 0
            finally:
                os._exit(code)
        os.close(w)
        return cls(pid, r)

    def discard(self) -> None:
        """Kill and reap the child without its value (the caller no longer wants it)."""
        try:
            os.kill(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(self.fd)
        os.waitpid(self.pid, 0)

    def result(self, timeout: float) -> Any:
        """The child's value, or None (it failed, or was killed at the deadline)."""
        chunks: list[bytes] = []
        deadline = time.monotonic() + timeout
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not select.select([self.fd], [], [], left)[0]:
                    os.kill(self.pid, signal.SIGKILL)
                    return None
                chunk = os.read(self.fd, 1 << 20)
                if not chunk:
                    break
                chunks.append(chunk)
        finally:
            os.close(self.fd)
            _, status = os.waitpid(self.pid, 0)
        if not os.WIFEXITED(status) or os.WEXITSTATUS(status) != 0:
            return None
        return pickle.loads(b"".join(chunks))  # noqa: S301 - our own child's bytes


__all__ = ["Child"]
