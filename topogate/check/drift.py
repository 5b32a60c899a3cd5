"""`check --rendered OUT`: the difference between a committed generated tree and what `generate`
would write (TG002), refusing anything in OUT that could hang or flood the comparison."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path

from topogate.check.errors import CheckInputError
from topogate.generators import render_tree
from topogate.inventory.model import Inventory
from topogate.policies.context import Drift
from topogate.safeio import limits
from topogate.safeio.saferead import one_line
from topogate.sources.deferred import tree_digests
from topogate.tree import writer
from topogate.tree.treediff import file_diffs


def drift(inv: Inventory, out: str) -> tuple[Drift, ...]:
    return _drift(inv, out)[0]


def rendered_drift(inv: Inventory, out: str) -> tuple[tuple[Drift, ...], dict[str, str]]:
    """The drift, and the digest (sources.deferred.digest) of every file generate writes, by
    its real path under OUT: a file of OUT read with that digest is the generator's own."""
    drifted, files = _drift(inv, out)
    return drifted, tree_digests(out, files)


def _drift(inv: Inventory, out: str) -> tuple[tuple[Drift, ...], dict[str, bytes]]:
    """The drift, and the files it was worked out from (what generate writes)."""
    files = render_tree(inv, os.path.realpath(out))
    # One walk of OUT: its entries' lstat serves the refusal below and the comparison.
    entries = writer.tree_entries(out)
    refuse_special_files(out, files, entries)
    return tuple(
        Drift(d.status, d.path, str(Path(out) / d.path), d.line, d.diff)
        for d in file_diffs(out, files, entries=entries)), files


def refuse_special_files(out: str, files: Iterable[str],
                          entries: Mapping[str, os.DirEntry[str]] | None = None) -> None:
    """The comparison reads OUT's copy of every file generate writes: a FIFO there would block
    it forever, a symlink to /dev/zero never end it. Refused before anything is read.
    `entries` (writer.tree_entries of OUT) saves an lstat per file; a path not among them (below
    a symlinked or unlistable directory) is looked up itself."""
    try:
        cap = limits.current().max_file_bytes
    except limits.LimitError as e:
        raise CheckInputError(str(e)) from None
    known = entries if entries is not None else {}
    for rel in files:
        entry = known.get(rel)
        try:
            st = entry.stat(follow_symlinks=False) if entry is not None else os.lstat(os.path.join(out, rel))
        except OSError:
            continue  # missing (added) or unreadable: the comparison reports it
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            p = Path(out) / rel
            what = ("a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                    if not stat.S_ISREG(st.st_mode) else f"larger than {cap // limits.MiB} MB")
            raise CheckInputError(one_line(
                f"{p}: is {what}, where generate writes a regular file; --rendered OUT must be a "
                "tree topogate generated: remove it and run topogate generate"))


__all__ = ["drift", "refuse_special_files", "rendered_drift"]
