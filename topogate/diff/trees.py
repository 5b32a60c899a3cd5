"""The two trees a diff compares: the head (the work tree as it is) and the base (the same
inventory and PATHs in a git worktree of GITREF), each read the way `check` reads a tree.

Reading is `check`'s: PATHs collected by topogate.sources.manifests (kustomization directories
built with the real `kubectl kustomize`), the inventory loaded by topogate.sources.inventory
(its bases built the same way); without PATHs the inventory's own generated tree is rendered
into a scratch directory and read from there, as `check INVENTORY` does. The base is the merge base of GITREF and HEAD (as
`check --changed-since` compares), its worktree made with git through topogate.safeio.gitrun (offline, no hooks, no filters of ours) in a
scratch directory, detached, and removed again whatever happens; nothing of the user's work
tree, index or branches changes.

Positions in the base tree are shown as the same repository paths the head's are, so a row
reads `policies.yaml:12` on both sides, not a scratch path.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from topogate.check.gitdiff import GitUnknown, toplevel
from topogate.generators import render_tree
from topogate.gitops import render as gitops_render
from topogate.inventory.loader import InventoryError
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.safeio import gitrun
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import ManifestError, collect
from topogate.tree import writer

GENERATED = "(generated)"


class DiffError(Exception):
    """Bad input or an unusable GITREF: one line saying what to do (exit 2)."""


@dataclass(frozen=True)
class Tree:
    """One side of the diff, read."""

    side: str  # "base" | "head"
    inventory: Inventory
    inventory_path: str
    objects: tuple[K8sObject, ...]
    shown: Callable[[str], str]  # a file name as a report shows it
    notes: tuple[str, ...] = ()  # what was skipped while reading


def _renamer(root: str | None, replacement: str) -> Callable[[str], str]:
    if root is None:
        return lambda f: f
    prefixes = tuple(dict.fromkeys((os.path.realpath(root), os.path.abspath(root), os.path.relpath(root))))

    def shown(f: str) -> str:
        for p in prefixes:
            if f == p or f.startswith(p + os.sep):
                rest = f[len(p):].lstrip(os.sep)
                return os.path.join(replacement, rest) if replacement else rest
        return f
    return shown


def _read(side: str, inventory_path: str, paths: Sequence[str], scratch: str,
          shown: Callable[[str], str]) -> Tree:
    try:
        inv = load_inventory(inventory_path)
    except InventoryError as err:
        first = err.problems[0] if err.problems else "unreadable"
        more = f" (and {len(err.problems) - 1} more)" if len(err.problems) > 1 else ""
        raise DiffError(f"{side}: {first}{more}; `topogate check` lists every problem") from None
    targets = list(paths)
    rename = shown
    if not targets:
        out = os.path.join(scratch, f"{side}-rendered")
        writer.write_tree(out, render_tree(inv, os.path.realpath(out)))
        targets = [out]
        generated = _renamer(out, GENERATED)
        rename = lambda f: generated(f) if generated(f) != f else shown(f)  # noqa: E731
    skipped: list[ManifestError] = []
    try:
        objects = collect(targets, also_inside=[inventory_path], skipped=skipped)
        # What Argo CD and Flux apply, as check reads it (topogate.gitops): PATHs that hold the
        # Applications of an app of apps are the workloads those render, on both sides.
        rendered = gitops_render.render(objects, inv, also_inside=[*targets, inventory_path]) if paths else None
    except ManifestError as err:
        raise DiffError(f"{side}: {err}") from None
    notes = tuple(f"{side}: {rename(e.pos.file)}: {e.message}" for e in skipped)
    if rendered is not None:
        objects = list(rendered.objects)
        notes += tuple(f"{side}: {rename(n.pos.file)}:{n.pos.line}:{n.pos.column}: {n.object}: {n.message}"
                       for n in rendered.notes)
    return Tree(side, inv, inventory_path, tuple(objects), rename, notes)


def _in_repo(path: str, top: str, what: str) -> str:
    real = os.path.realpath(path)
    if real != top and not real.startswith(top + os.sep):
        raise DiffError(f"{what} {path} is outside the git work tree {top}: the base tree is read "
                        "from a worktree of GITREF, which holds only the repository's files")
    return os.path.relpath(real, top)


def _commit(top: str, ref: str) -> str:
    """The merge base of `ref` and HEAD, as `check --changed-since` compares: what the branch
    changed, not what others merged into `ref` since."""
    if not ref or ref.startswith("-") or any(c in ref for c in "\0\n"):
        raise DiffError(f"--base '{ref}' is not a git ref")
    code, out, _err = gitrun.git(top, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    if code != 0:
        raise DiffError(f"--base '{ref}' is not a commit here; fetch it first (git fetch origin main), "
                        "or name a commit, branch or tag")
    code, base, _err = gitrun.git(top, "merge-base", "--end-of-options", out.strip(), "HEAD")
    if code != 0:
        raise DiffError(f"--base '{ref}': no merge base with HEAD (a shallow clone: fetch the history, "
                        "actions/checkout: fetch-depth: 0)")
    return base.strip()


@contextlib.contextmanager
def _worktree(top: str, commit: str, where: str) -> Iterator[None]:
    code, _out, err = gitrun.git(top, "worktree", "add", "--detach", "--quiet", where, commit)
    if code != 0:
        raise DiffError(f"--base: git worktree add failed ({gitrun.last_line(err)})")
    try:
        yield
    finally:
        # Removed whatever happened; prune is for the case remove itself failed half-way.
        gitrun.git(top, "worktree", "remove", "--force", where)
        gitrun.git(top, "worktree", "prune")


@contextlib.contextmanager
def both_trees(inventory_path: str, paths: Sequence[str], base: str) -> Iterator[tuple[Tree, Tree]]:
    """(base, head), alive while the context is: positions are looked up lazily from the files."""
    if "-" in paths:
        raise DiffError("standard input has no base version: give PATHs of the repository")
    if not Path(inventory_path).is_file():
        raise DiffError(f"{inventory_path}: no such file (the inventory)")
    try:
        top = toplevel(os.path.dirname(os.path.abspath(inventory_path)))
    except (GitUnknown, gitrun.GitFailed) as e:
        raise DiffError(f"--base needs a git work tree: {e}") from None
    rel_inventory = _in_repo(inventory_path, top, "the inventory")
    rel_paths = [_in_repo(p, top, "PATH") for p in paths]
    commit = _commit(top, base)
    with tempfile.TemporaryDirectory(prefix="topogate-diff-") as scratch:
        head = _read("head", inventory_path, paths, scratch, lambda f: f)
        wt = os.path.join(scratch, "base")
        with _worktree(top, commit, wt):
            shown_top = os.path.relpath(top)
            rename = _renamer(wt, "" if shown_top == "." else shown_top)
            inv_base = os.path.join(wt, rel_inventory)
            if not os.path.isfile(inv_base):
                raise DiffError(f"--base {base}: the inventory {rel_inventory} does not exist there")
            missing = [r for r in rel_paths if not os.path.lexists(os.path.join(wt, r))]
            base_paths = [os.path.join(wt, r) for r in rel_paths if r not in missing]
            if rel_paths and not base_paths:
                raise DiffError(f"--base {base}: none of the PATHs exists there ({', '.join(missing)})")
            got = _read("base", inv_base, base_paths, scratch, rename)
            notes = tuple(f"base: {m} does not exist at {base}: read as empty" for m in missing)
            yield Tree("base", got.inventory, got.inventory_path, got.objects, got.shown,
                       (*got.notes, *notes)), head


def read_tree(side: str, inventory_path: str, paths: Sequence[str], scratch: str) -> Tree:
    """One tree of PATHs as they are (no git), its files shown as read."""
    return _read(side, inventory_path, paths, scratch, lambda f: f)


def same_trees(inventory_path: str, base_paths: Sequence[str], head_paths: Sequence[str],
               scratch: str) -> tuple[Tree, Tree]:
    """Two trees of one inventory from two sets of PATHs (no git): what tests and a comparison
    of two directories use."""
    return (read_tree("base", inventory_path, base_paths, scratch),
            read_tree("head", inventory_path, head_paths, scratch))


__all__ = ["DiffError", "GENERATED", "Tree", "both_trees", "read_tree", "same_trees"]
