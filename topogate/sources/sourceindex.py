"""Where a built object was written: found when asked, reading only the files that can hold it.

`kubectl kustomize` output says nothing about origins, so a built object is traced back to the
source file that declares it by (kind, name, namespace). Parsing every source file of a tree
up front to answer that cost as much as the check itself on a large tree, for positions that a
clean result never shows. Instead a kustomization root gets a SourceIndex that, on its first
question, reads the texts of its files once and notes which names each mentions after a
`name:` key; a question then parses only the files mentioning that name. If none of them
declares the object (a name prefix, a generator, a name written in an unusual way), every file
is parsed once, as before, so the answer is always the one a full index gives.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from topogate.core.position import Position
from topogate.sources.positions import Deferred, resolve_position

if TYPE_CHECKING:
    from topogate.k8s.objects import K8sObject
    from topogate.sources.located import Sources

Key = tuple[str, str, str]  # kind, name, namespace ("" when not set)

_NAME = re.compile(r"""name["']?[ \t]*:[ \t]*["']?([^\s"',{}\[\]#]+)""")


class SourceIndex:
    """The sources of one kustomization root: its files, then those of the dirs it references."""

    def __init__(self, dirs: Sequence[Path], sources: Sources):
        self.dirs = tuple(dirs)  # the root first, then the directories its tree references
        self.sources = sources  # reads only inside the repository, parses each file once
        self._files: list[Path] | None = None
        self._by_name: dict[str, list[int]] | None = None
        self._parsed: dict[int, dict[Key, K8sObject]] = {}
        self._full: dict[Key, K8sObject] | None = None

    def files(self) -> list[Path]:
        if self._files is None:
            seen: set[Path] = set()
            walked: set[str] = set()
            files: list[Path] = []
            for d in self.dirs:
                # A referenced directory inside the root was listed by the root's walk already:
                # again it would find the same files under other names, which lookups, taking
                # the first file that declares an object, never reach.
                if str(d) in walked:
                    continue
                for f in self.sources.yaml_files(d, walked):
                    if f not in seen:
                        seen.add(f)
                        files.append(f)
            self._files = files
        return self._files

    def _names(self) -> dict[str, list[int]]:
        if self._by_name is None:
            by_name: dict[str, list[int]] = {}
            for i, f in enumerate(self.files()):
                text = self.sources.text(f)
                if text is None:
                    continue
                for name in set(_NAME.findall(text)):
                    by_name.setdefault(name, []).append(i)
            self._by_name = by_name
        return self._by_name

    def _objects(self, i: int) -> dict[Key, K8sObject]:
        """The objects of file i by key, first declaration wins (as the full index had it)."""
        if i not in self._parsed:
            found: dict[Key, K8sObject] = {}
            for o in self.sources.objects(self.files()[i]):
                found.setdefault((o.kind, o.name, o.namespace), o)
            self._parsed[i] = found
        return self._parsed[i]

    def _full_index(self) -> dict[Key, K8sObject]:
        if self._full is None:
            full: dict[Key, K8sObject] = {}
            for i in range(len(self.files())):
                for k, o in self._objects(i).items():
                    full.setdefault(k, o)
            self._full = full
        return self._full

    def find(self, key: Key) -> K8sObject | None:
        kind, name, _ = key
        if self._full is None:
            candidates = self._names().get(name, [])
            for want in (key, (kind, name, "")):
                for i in candidates:
                    o = self._objects(i).get(want)
                    if o is not None:
                        return o
        full = self._full_index()
        return full.get(key) or full.get((kind, name, ""))


class DeclarationRef:
    """The source declaration of one built object, looked up once, on first use."""

    def __init__(self, index: SourceIndex, key: Key, fallback: Position):
        self.index = index
        self.key = key
        self.fallback = fallback
        self._done = False
        self._found: K8sObject | None = None

    def found(self) -> K8sObject | None:
        if not self._done:
            self._found = self.index.find(self.key)
            self._done = True
        return self._found

    def position(self) -> Position:
        o = self.found()
        if o is None:
            return self.fallback
        p = o.pos
        return Position(p.file, p.line, p.column)


class SourcePosition(Deferred):
    """Where a built object starts in its source, found only when someone reads it."""

    def __init__(self, ref: DeclarationRef):
        super().__init__()
        object.__setattr__(self, "_ref", ref)

    def compute(self) -> Position:
        ref: DeclarationRef = object.__getattribute__(self, "_ref")
        return ref.position()


class NestedPosition(Deferred):
    """A field inside a built object, in its source document (nearest ancestor the source
    has); the object's own position (`shown`, which names the file as findings show it) when
    it has no source."""

    def __init__(self, ref: DeclarationRef, path: tuple[str | int, ...], shown: Position):
        super().__init__()
        object.__setattr__(self, "_args", (ref, path, shown))

    def compute(self) -> Position:
        ref, path, shown = object.__getattribute__(self, "_args")
        found = ref.found()
        if found is None or found.doc < 0 or not found.src_file:
            return Position(shown.file, shown.line, shown.column)
        return resolve_position(found.src_file, found.doc, (*found.prefix, *path), shown.file, shown)


__all__ = ["DeclarationRef", "NestedPosition", "SourceIndex", "SourcePosition"]
