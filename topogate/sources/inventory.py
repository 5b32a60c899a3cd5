"""The inventory as the commands read it: the loader, handed the kustomize builder for bases.

A base that transforms its resources (patches, labels, components) is read the way kustomize
yields it. The inventory layer does not run kubectl; this module gives it the builder, which
checks every file the build reads as `check`'s own builds are checked (local, inside the
repository, tracked by git, never inside .git: topogate.sources.kustomization.check_tree) and
runs kubectl kustomize under the child limits.
"""

from __future__ import annotations

import os
from pathlib import Path

from topogate.inventory import loader
from topogate.inventory.bases import BaseBuildError
from topogate.inventory.checker import ReadBases
from topogate.inventory.model import Inventory
from topogate.safeio.repopaths import Roots
from topogate.safeio.saferead import InputError
from topogate.sources.kustomization import check_tree, kubectl, run_kustomize


def build_base(target: Path, roots: Roots) -> str:
    """`kubectl kustomize target`, once every file it reads passed check_tree (BaseBuilder)."""
    try:
        exe = kubectl()
    except InputError as e:
        raise BaseBuildError("kubectl", e.message) from None
    try:
        check_tree(target, roots)
    except InputError as e:
        raise BaseBuildError("refused", f"{e.pos}: {e.message}") from None
    proc = run_kustomize(target, exe)  # under the time, memory and network limits
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "build failed"
        raise BaseBuildError("failed", last)
    return proc.stdout


def load_inventory(path: str | os.PathLike[str], read_bases: ReadBases = True) -> Inventory:
    """topogate.inventory.loader.load_inventory with the kustomize builder for bases."""
    return loader.load_inventory(path, read_bases, build_base)


__all__ = ["build_base", "load_inventory"]
