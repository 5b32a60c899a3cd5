"""The state the inventory's semantic checks share: positions, the problems found so far, and the
paths the schema already complained about. The checks are functions taking the checker
(clusters.py, workloads.py, bases.py, kueue.py, doors.py)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from topogate.inventory.problems import Problem
from topogate.inventory.yamlpos import Located, YPath
from topogate.safeio.repopaths import Roots, repo_root

if TYPE_CHECKING:
    from topogate.inventory.bases import BaseBuilder


# Whether to read the workloads' bases: all or none, or per workload (cluster, base as written).
ReadBases = bool | Callable[[str, str], bool]


class Checker:
    def __init__(self, loc: Located, file: str, inv_dir: Path, read_bases: ReadBases = True,
                 build: BaseBuilder | None = None):
        self.read_bases = read_bases
        self.build = build  # builds a base's kustomization (inventory.bases.BaseBuilder)
        self.loc = loc
        self.file = file
        self.inv_dir = inv_dir
        # the inventory's repository, as every input's (safeio.repopaths.repo_root): the nearest
        # directory above holding .git; outside any (an Argo CD plugin's copy, a `git archive`
        # export), the working directory when the inventory is below it
        self.repo = repo_root(inv_dir)
        self.problems: list[Problem] = []
        self.bad_paths: set[YPath] = set()  # paths the schema already complained about
        self.cluster_index: dict[str, int] = {}
        self._real: dict[str, Path] = {}  # resolved directory entries, for resolve_under
        self.base_roots: Roots | None = None  # where bases may read (inventory.bases)

    def reads_base(self, cluster: str, base: str) -> bool:
        rb = self.read_bases
        return rb if isinstance(rb, bool) else rb(cluster, base)

    def resolve_under(self, real_dir: Path, rel: str) -> Path:
        """`(real_dir / rel).resolve()` for a `real_dir` that is already resolved.

        Two thousand bases under one `bases/` directory: resolving each path from the root
        looked up every ancestor again. Here an entry of a resolved directory that is not a
        symlink is its own real path, so only entries that are links are resolved (fully, by
        pathlib), and each entry is looked at once. A path with an empty, `.` or `..` part,
        or a NUL, goes to pathlib whole."""
        parts = rel.split("/")
        if "\0" in rel or any(p in ("", ".", "..") for p in parts):
            return (real_dir / rel).resolve()
        cur = real_dir
        for part in parts:
            entry = cur / part
            key = str(entry)
            real = self._real.get(key)
            if real is None:
                real = entry.resolve() if os.path.islink(entry) else entry
                self._real[key] = real
            cur = real
        return cur

    def err(self, path: YPath, msg: str, key: bool = False) -> None:
        self.problems.append(Problem(self.loc.key_at(path) if key else self.loc.at(path), msg))

    def has_problem_under(self, prefix: YPath) -> bool:
        return any(p[:len(prefix)] == prefix for p in self.bad_paths)

    def unique(self, items: list[tuple[YPath, str]], what: str, scope: str = "") -> None:
        seen: dict[str, YPath] = {}
        for path, name in items:
            if name in seen:
                first = self.loc.at(seen[name])
                self.err(path, (f"duplicate {what} '{name}'{scope} (first at line {first.line}); "
                                "names must be unique"))
            else:
                seen[name] = path


__all__ = ["Checker", "ReadBases"]
