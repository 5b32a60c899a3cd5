"""The limits on what topogate reads and on the children it runs, settable by environment.

Every input comes from pull requests, forks included: a file, a YAML document or a `kubectl
kustomize` build must not be able to take the machine with it. Each limit has a default sized
for real repositories (documented in docs/security.md) and an environment variable to change it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

MiB = 1024 * 1024

# name -> (default, minimum, unit shown in messages)
_SETTINGS: dict[str, tuple[int, int, str]] = {
    "TOPOGATE_MAX_FILE_MB": (32, 1, "MB"),
    "TOPOGATE_CHILD_TIMEOUT": (300, 1, "s"),
    "TOPOGATE_CHILD_MEMORY_MB": (4096, 1024, "MB"),
    "TOPOGATE_CHILD_OUTPUT_MB": (512, 1, "MB"),
    # The live commands: every API read of one command ends by this deadline (a CronJob's own
    # deadline should be longer, so topogate exits 75 with a message instead of being killed),
    # and one list page may hold at most this much.
    "TOPOGATE_LIVE_DEADLINE": (300, 1, "s"),
    "TOPOGATE_LIVE_PAGE_MB": (256, 1, "MB"),
}

# A document may hold this many more values after its aliases are expanded than as written:
# ordinary anchors (a shared label set) stay far below, a billion-laughs document far above.
MAX_ALIAS_GROWTH = 200_000
# Kubernetes objects nest 20-40 levels (CRD schemas the most); Python's own recursion stops
# somewhere near 1,000, and several later steps recurse once per level.
MAX_DEPTH = 100


class LimitError(Exception):
    """A limit variable that is not a number in range: a bad invocation (exit 2)."""


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int
    child_timeout_s: int
    child_memory_bytes: int
    child_output_bytes: int


def _read(name: str) -> int:
    default, minimum, unit = _SETTINGS[name]
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isascii() or not raw.isdigit() or int(raw) < minimum:
        raise LimitError(f"{name}={raw!r}: expected a whole number of {unit}, at least {minimum}")
    return int(raw)


def max_file_bytes() -> int:
    """TOPOGATE_MAX_FILE_MB in bytes, read now (the one limit every file read asks for)."""
    return _read("TOPOGATE_MAX_FILE_MB") * MiB


def live_deadline_s() -> int:
    return _read("TOPOGATE_LIVE_DEADLINE")


def live_page_bytes() -> int:
    return _read("TOPOGATE_LIVE_PAGE_MB") * MiB


def current() -> Limits:
    """The limits in force now (read each time: tests and long-lived callers may change them)."""
    return Limits(
        max_file_bytes=_read("TOPOGATE_MAX_FILE_MB") * MiB,
        child_timeout_s=_read("TOPOGATE_CHILD_TIMEOUT"),
        child_memory_bytes=_read("TOPOGATE_CHILD_MEMORY_MB") * MiB,
        child_output_bytes=_read("TOPOGATE_CHILD_OUTPUT_MB") * MiB,
    )
