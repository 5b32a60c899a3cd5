"""A scratch copy of the repository in which one directory's kustomization is replaced, built
with kubectl kustomize: how topogate builds what Argo CD's repo-server and Flux's
kustomize-controller build, without writing a byte into the repository.

Both engines edit the kustomization of the directory they render (Flux writes its generated
kustomization there, Argo CD runs `kustomize edit` in its checkout) and build it. The copy is
a mirror of the repository made of symbolic links, except along the way to that directory,
whose own kustomization is the edited text and whose files that kustomization loads itself are
real copies: kustomize's default load restrictor (Argo CD's) resolves a loaded file's links and
refuses it outside the kustomization's directory, while a directory it names (a base) is loaded
from wherever its links lead, which is the repository itself. `.git` is never linked.

Everything the build can read was checked first (topogate.sources.kustomization.check_tree and
topogate.gitops.render): inside the repository, tracked, regular, under the size limits.
"""

from __future__ import annotations

import os
from collections.abc import Collection
from pathlib import Path

from topogate.core.position import Position
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, display
from topogate.safeio.saferead import InputError, read_bytes
from topogate.sources.kustomization import run_kustomize

# Flux's SecureBuild: files from anywhere inside the source's root, not only below the
# kustomization (kustypes.LoadRestrictionsNone).
FLUX_OPTIONS = ("--load-restrictor", "LoadRestrictionsNone")


def _below(child: str, parent: str) -> bool:
    return child == parent or child.startswith(parent.rstrip("/") + "/")


def mirror(repo: str, app_dir: str, kfile: str, text: str, copies: Collection[str], into: str) -> str:
    """Fill `into` with a mirror of `repo` (real paths both) in which `app_dir` holds `text` as
    its kustomization `kfile` and no other kustomization file, and the files of `copies` (real
    paths below app_dir) are copies; the mirror of app_dir, returned."""
    wanted = [app_dir, *copies]
    stack = [(repo, into)]
    while stack:
        real, scratch = stack.pop()
        os.makedirs(scratch, exist_ok=True)
        for name in sorted(os.listdir(real)):
            if name == ".git":
                continue
            src = os.path.join(real, name)
            dst = os.path.join(scratch, name)
            if real == app_dir and name in KUSTOMIZATION_FILES:
                continue
            if src in copies:
                shown = display(Path(src))
                with open(dst, "wb") as fh:
                    fh.write(read_bytes(src, shown))
                continue
            if any(_below(w, src) for w in wanted) and os.path.isdir(src) and not os.path.islink(src):
                stack.append((src, dst))  # on the way to the directory or to a copy
                continue
            os.symlink(src, dst)
    scratch_app = os.path.join(into, os.path.relpath(app_dir, repo))
    with open(os.path.join(scratch_app, kfile), "w", encoding="utf-8") as fh:
        fh.write(text)
    return scratch_app


class BuildFailed(Exception):
    """kubectl kustomize refused the edited kustomization: what the engine's own build says."""


def build(scratch_app: str, repo: str, into: str, options: tuple[str, ...] = ()) -> str:
    """kubectl kustomize of the mirror's directory; BuildFailed with kustomize's last line, the
    scratch paths in it named as the repository's."""
    proc = run_kustomize(Path(scratch_app), options=options)
    if proc.returncode != 0:
        last = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "kustomize build failed"
        raise BuildFailed(last.replace(into.rstrip("/") + "/", "").replace(into, ".").replace(
            repo.rstrip("/") + "/", ""))
    return proc.stdout


def refuse_above(ref: str, app_dir: str, repo: str, where: Position, fld: str) -> None:
    """A path the edited kustomization names must stay inside the repository as text: the mirror
    resolves `..` from its own copy of the directory, not from the repository's."""
    if ref.startswith("/"):
        return
    joined = os.path.normpath(os.path.join(app_dir, ref))
    if not _below(joined, repo):
        raise InputError(where, (
            f"{fld} entry '{ref}' climbs above the repository's root ({display(Path(repo))}); name it "
            "from inside the repository"))


__all__ = ["FLUX_OPTIONS", "BuildFailed", "build", "mirror", "refuse_above"]
