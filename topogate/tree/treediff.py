"""What differs between a committed generated tree and what `generate` would write, line by line.

`writer.diff_tree` says which files differ; this says where and how, for people reviewing a pull
request: the first differing line of each file (where an annotation belongs) and a unified diff
from the committed file to the one `generate` writes.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from topogate.safeio.saferead import InputError, read_bytes
from topogate.tree import writer

# A diff longer than this is cut: a tree-wide change would otherwise bury the report.
MAX_DIFF_LINES = 60


@dataclass(frozen=True)
class FileDiff:
    status: str  # added | changed | removed (as writer.diff_tree)
    path: str  # relative POSIX path under OUT
    line: int  # first differing line of the committed file (1 when it is missing)
    diff: str  # unified diff, committed -> generated, possibly cut


def _lines(data: bytes | None) -> list[str]:
    if data is None:
        return []
    return data.decode("utf-8", errors="replace").splitlines(keepends=True)


def _read(path: Path) -> bytes | None:
    """A committed file's bytes; None for anything but a regular file within the size cap.

    A FIFO in OUT would hang `generate --check --diff`, and a link to /dev/zero never ends: the
    committed tree comes from the pull request, so it is read like every other input.
    """

    try:
        if not path.is_file() or path.is_symlink():
            return None
        return read_bytes(path, str(path))
    except (OSError, InputError):
        return None


def first_difference(old: list[str], new: list[str]) -> int:
    """1-based line of `old` where `new` first departs from it, clamped to a line `old` has."""
    for i, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return i + 1
    return max(1, min(len(old), len(new) + 1))


def unified(path: str, out: str, old: list[str], new: list[str], limit: int | None) -> str:
    lines = list(difflib.unified_diff(
        old, new, fromfile=f"{out}/{path} (committed)" if old else "/dev/null",
        tofile=f"{out}/{path} (generate)" if new else "/dev/null", n=2))
    lines = [ln if ln.endswith("\n") else ln + "\n\\ No newline at end of file\n" for ln in lines]
    if limit is not None and len(lines) > limit:
        more = len(lines) - limit
        lines = [*lines[:limit], f"... {more} more diff lines: `topogate generate --check --diff` shows all\n"]
    return "".join(lines)


def file_diffs(out: str, files: Mapping[str, bytes], limit: int | None = MAX_DIFF_LINES,
               entries: Mapping[str, os.DirEntry[str]] | None = None) -> list[FileDiff]:
    """Every file of OUT that differs from `files`, sorted by path, with its first line and diff.
    `entries`: `writer.tree_entries(out)` when the caller has it already."""
    root = Path(out)
    result: list[FileDiff] = []
    for status, path in writer.diff_tree(out, files, entries):
        old = _lines(_read(root / path)) if status != "added" else []
        new = _lines(files.get(path))
        line = first_difference(old, new) if status == "changed" else 1
        result.append(FileDiff(status, path, line, unified(path, out.rstrip("/"), old, new, limit)))
    return result

__all__ = ["file_diffs", "first_difference", "unified"]
