"""Generators: pure functions Inventory -> OutputFiles, one module per target.

`GENERATORS` is the registry: a generator joins the tree by being listed there. Each module
exposes `render(inv) -> list[OutputFile]`; a module that needs to know where the tree will live
(kustomize, for the relative path from an overlay to the user's base) sets
`NEEDS_OUT_DIR = True` and takes `render(inv, out_dir)`.
"""

from __future__ import annotations

from types import ModuleType

from topogate.core.position import Position
from topogate.generators import admission, argocd, base, cilium, flux, kueue, kustomize, monitoring
from topogate.generators.base import OutputFile
from topogate.inventory.model import Inventory

# Order does not matter for the output (files are sorted by path); it is the order errors surface.
GENERATORS: tuple[ModuleType, ...] = (cilium, kueue, admission, kustomize, argocd, flux, monitoring)


class PathConflictError(ValueError):
    """Two generators (or one, twice) produced the same path, or a path that is not relative."""


def _check_path(p: str) -> None:
    parts = p.split("/")
    if not p or p.startswith("/") or "\\" in p or any(x in ("", ".", "..") for x in parts):
        raise PathConflictError(f"generated path {p!r} is not a clean relative POSIX path")


# The generators of the outputs an inventory may leave out (`outputs:`), by that output's name.
OPTIONAL = {argocd: "argocd", flux: "flux", monitoring: "monitoring"}


def render_files(inv: Inventory, out_dir: str) -> list[OutputFile]:
    """Every OutputFile of every registered generator the inventory's `outputs` keep, sorted by
    path."""
    files: dict[str, OutputFile] = {}
    for gen in GENERATORS:
        if gen in OPTIONAL and OPTIONAL[gen] not in inv.outputs:
            continue
        made = gen.render(inv, out_dir) if getattr(gen, "NEEDS_OUT_DIR", False) else gen.render(inv)
        for f in made:
            _check_path(f.path)
            if f.path in files:
                raise PathConflictError(f"{f.path} is generated twice ({gen.__name__})")
            files[f.path] = f
    return [files[p] for p in sorted(files)]


def render_tree(inv: Inventory, out_dir: str) -> dict[str, bytes]:
    """The whole generated tree in memory: relative POSIX path -> bytes, in sorted path order.

    `out_dir` is where the tree will be written; only the overlays' relative path to each
    workload's base depends on it.
    """
    return render_tree_sources(inv, out_dir)[0]


def render_tree_sources(inv: Inventory, out_dir: str) -> tuple[dict[str, bytes], dict[str, Position]]:
    """render_tree, and for each file the inventory entry it is generated from: where a finding
    about a generated file belongs (the file is rewritten by the next `generate`)."""
    head = base.header(inv)
    files = render_files(inv, out_dir)
    return {f.path: base.serialise(inv, f, head) for f in files}, {f.path: f.source for f in files}

__all__ = ["render_files", "render_tree", "render_tree_sources"]
