"""Kubernetes objects with where each part of them is written: a plain file's (``IN_FILE``, its
documents parsed by ``parse_yaml`` with their composed nodes kept for positions) or a kustomize
build's (``Built``: each object traced back to the source that declares it, and to the patch
that changed a field), the source files one collect reads (``Sources``) and the patches of the
trees it built (``TreePatches``)."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, MANIFEST_SUFFIXES, Roots, display
from topogate.safeio.saferead import InputError, Loader, documents, is_regular, read_text
from topogate.sources.overlay_blame import blame, changed_paths, patches_of
from topogate.sources.positions import (
    Deferred,
    LazyPosition,
    Path_,
)
from topogate.sources.sourceindex import DeclarationRef, NestedPosition

_Loader = Loader
ManifestError = InputError  # the name the rest of topogate catches


class InFile:
    """Positions inside an object read from a file: looked up in the file's YAML when first asked."""

    def locate(self, o: K8sObject, path: Path_) -> Position:
        if o.doc < 0 or not o.src_file:
            return o.pos
        return LazyPosition(o.src_file, o.doc, (*o.prefix, *path), o.pos.file, o.pos)


IN_FILE = InFile()


class Built:
    """Positions inside a built object: in the source that declares it, or, for the parts an
    overlay's patch changed from the base, at that patch (overlay_blame); worked out on the
    first position question, never for a clean run."""

    def __init__(self, source: DeclarationRef, patches: TreePatches | None):
        self.source = source
        self.patches = patches
        self._blamed: tuple[dict[str, Any], tuple[tuple[Path_, Position], ...]] | None = None

    def locate(self, o: K8sObject, path: Path_) -> Position:
        nested = NestedPosition(self.source, path, o.pos)
        return _PatchedPosition(self, o, tuple(path), nested) if self.patches is not None else nested

    def blamed(self, o: K8sObject) -> tuple[tuple[Path_, Position], ...]:
        """(path inside the object, patch position) for the parts an overlay's patch changed."""
        if self._blamed is None or self._blamed[0] is not o.obj:
            found: tuple[tuple[Path_, Position], ...] = ()
            src = self.source.found()
            if src is not None and self.patches is not None and src.obj != o.obj:
                patches = self.patches.get()
                if patches:
                    found = tuple(blame(patches, o.kind, (o.name, src.name), changed_paths(src.obj, o.obj), display))
            self._blamed = (o.obj, found)
        return self._blamed[1]


def parse_yaml(text: str, file: str, src_file: str = "", guard: bool = True) -> Iterator[K8sObject]:
    """Objects of one YAML stream; nodes are dropped as soon as each object is built.

    `guard=False` skips the alias/depth/duplicate-key checks, for kustomize's own output: it
    writes no aliases or duplicates, and its inputs were checked before it ran."""
    for doc, node, obj in documents(text, file, guard=guard):
        m = node.start_mark
        pos = Position(file, m.line + 1, m.column + 1)
        if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
            items = node_value(node, "items")
            for i, item in enumerate(obj["items"]):
                inode = items.value[i] if isinstance(items, yaml.SequenceNode) else None
                ipos = Position(file, inode.start_mark.line + 1, inode.start_mark.column + 1) if inode else pos
                if isinstance(item, dict):
                    yield K8sObject(item, ipos, "", src_file, doc, ("items", i), IN_FILE)
        elif isinstance(obj, dict) and "kind" in obj:
            yield K8sObject(obj, pos, "", src_file, doc, locator=IN_FILE)


def node_value(node: Any, key: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                return v
    return None


@dataclass
class Sources:
    """Source files of one collect: read only inside the roots, only regular files, each
    parsed at most once however many trees ask about it."""

    roots: Roots
    files: dict[str, list[K8sObject]]
    # real path of every file a walk below listed, worked out from its directory's
    real: dict[Path, str] = field(default_factory=dict)

    def usable(self, f: Path) -> bool:
        real = self.real.get(f)
        if real is None:
            real = self.roots.realpath(f)
        return is_regular(f) and self.roots.holds(real) and self.roots.untracked(real) is None

    def text(self, f: Path) -> str | None:
        try:
            return read_text(f, display(f)) if self.usable(f) else None
        except InputError:
            return None

    def objects(self, f: Path) -> list[K8sObject]:
        key = str(f)
        if key not in self.files:
            self.files[key] = []
            try:
                if self.usable(f):
                    shown = display(f)
                    self.files[key] = list(parse_yaml(read_text(f, shown), shown, str(f)))
            except InputError:
                pass  # not a manifest the build could have used: no positions from it
        return self.files[key]

    def yaml_files(self, d: Path, walked: set[str] | None = None) -> list[Path]:
        """YAML files under d, as os.walk lists them (real paths of the directories listed go
        to `walked`): symlinked directories are not followed
        (as Path.rglob), symlinked files are, but `usable` reads them only inside the roots.

        One scandir a directory; a file's real path is its directory's plus its name unless
        it is a symlink (resolving every file again costs a stat per path component)."""
        found: list[Path] = []
        stack = [(str(d), os.path.realpath(d))]
        while stack:
            top, top_real = stack.pop()
            try:
                with os.scandir(top) as it:
                    entries = list(it)
            except OSError:
                continue  # as os.walk: a directory that cannot be listed is skipped
            if walked is not None:
                walked.add(top_real)
            for e in entries:
                try:
                    is_dir = e.is_dir()
                except OSError:
                    is_dir = False
                try:
                    is_link = e.is_symlink()
                except OSError:
                    is_link = False
                if is_dir:
                    if not is_link:
                        stack.append((e.path, os.path.join(top_real, e.name)))
                    continue
                f = Path(e.path)
                if f.suffix in MANIFEST_SUFFIXES and f.name not in KUSTOMIZATION_FILES:
                    found.append(f)
                    if not is_link:
                        self.real[f] = os.path.join(top_real, e.name)
        return sorted(found)


class _PatchedPosition(Deferred):
    """A field of a built object: at the overlay patch that changed it, else in its source;
    worked out only when read (a clean run never reads it)."""

    def __init__(self, built: Built, obj: K8sObject, path: Path_, nested: NestedPosition):
        super().__init__()
        object.__setattr__(self, "_args", (built, obj, path, nested))

    def compute(self) -> Position:
        built, obj, path, nested = object.__getattribute__(self, "_args")
        for changed, pos in built.blamed(obj):
            n = min(len(changed), len(path))
            if changed[:n] == path[:n]:
                return Position(pos.file, pos.line, pos.column)
        return nested.resolve()


class TreePatches:
    """The patches of one kustomization tree, read on first use (a finding's position)."""

    def __init__(self, dirs: Sequence[Path]):
        self.dirs = list(dirs)
        self._patches: list[Any] | None = None

    def get(self) -> list[Any]:
        if self._patches is None:
            self._patches = patches_of(self.dirs)
        return self._patches


__all__ = ["IN_FILE", "Built", "Sources", "TreePatches", "parse_yaml"]
