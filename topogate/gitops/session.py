"""One render of the GitOps engine objects among a check's inputs: what every render shares
(the repositories' sources, the tree checks done, the ConfigMaps and Secrets among the inputs,
the roots already read, the notes), the scratch build, and the built objects with their places
in the sources."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from topogate.core import redact
from topogate.core.position import Position
from topogate.gitops import flux, scratch
from topogate.gitops.engines import Finder, Target, ref
from topogate.gitops.notes import Note
from topogate.gitops.objects import RenderedObject, RenderInfo
from topogate.gitops.vias import option_vias
from topogate.inventory.model import Inventory
from topogate.k8s import kustomization as kmodel
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, Roots, display
from topogate.safeio.saferead import read_text
from topogate.sources.kustomization import CONFIG_LISTS, config_references, references
from topogate.sources.located import Built, Sources, TreePatches, parse_yaml
from topogate.sources.sourceindex import DeclarationRef, SourceIndex, SourcePosition


@dataclass
class Out:
    """What one render gives: its objects, and what they replace."""

    objects: list[RenderedObject]
    roots: set[str]  # real directories whose read objects these replace
    files: set[str]  # real files whose read objects these replace


class Session:
    """What the renders of one check share (module doc)."""

    def __init__(self, objects: Sequence[K8sObject], inv: Inventory | None, strict: bool,
                 also_inside: Sequence[str] = (), closed: bool = False):
        self.objects = list(objects)
        self.closed = closed
        self.also_inside = also_inside
        self.finder = Finder(self.objects, inv)
        self.strict = strict
        self.checked: dict[str, bool] = {}
        self.sources: dict[str, Sources] = {}
        self.values: dict[tuple[str, str, str], K8sObject] = {}
        self.index_values(self.objects)
        self.read_roots: dict[str, list[K8sObject]] = {}
        for o in self.objects:
            if o.built_from:
                self.read_roots.setdefault(os.path.realpath(o.built_from), []).append(o)
        self.renders: list[RenderInfo] = []

    def covered(self, dirs: Iterable[str]) -> set[str]:
        """The read roots among the kustomization directories a render builds: a root the reader
        built on its own because the one including it was not walked (the generated
        `argocd/clusters/<c>` below the `argocd/` root wraps `clusters/<c>`) is what the render
        applies, so its read copy is replaced, not kept as a second owner of every object."""
        return {x for x in dirs if x in self.read_roots}

    def index_values(self, objs: Iterable[K8sObject]) -> None:
        for o in objs:
            if o.kind in ("ConfigMap", "Secret") and o.api_version == "v1":
                self.values.setdefault((o.kind, o.namespace or "default", o.name), o)

    def note(self, kind: str, t: Target, message: str, pos: Position | None = None, severity: str = "") -> None:
        self.finder.notes.append(Note(kind, ref(t.obj), message, pos if pos is not None else t.obj.pos, severity))

    def sources_of(self, repo: str) -> Sources:
        if repo not in self.sources:
            self.sources[repo] = Sources(Roots.of([repo, *self.also_inside]), {})
        return self.sources[repo]

    # -- building ----------------------------------------------------------------------------

    def build(self, t: Target, d: str, kfile: str, kus: Mapping[str, Any], options: tuple[str, ...],
               copies: bool) -> str:
        """kubectl kustomize of d with `kus` as its kustomization, in a scratch mirror."""
        text = json.dumps(kus, sort_keys=True, ensure_ascii=False)
        shown = display(Path(d) / kfile)
        k = kmodel.read(text, shown)
        wanted: set[str] = set()
        refs = list(references(k))
        while refs:
            fld, r, where = refs.pop()
            scratch.refuse_above(r, d, t.repo, t.obj.pos, fld)
            real = os.path.realpath(os.path.join(d, r))
            if copies and os.path.isfile(real) and real.startswith(d.rstrip("/") + "/"):
                wanted.add(real)
                if fld in CONFIG_LISTS:
                    refs += list(config_references(read_text(real, display(Path(real))), display(Path(real))))
        with tempfile.TemporaryDirectory(prefix="topogate-gitops-") as tmp:
            app = scratch.mirror(t.repo, d, kfile, text, wanted, tmp)
            return scratch.build(app, t.repo, tmp, options)

    def built(self, t: Target, d: str, dirs: Sequence[str], output: str,
               strip: tuple[str, str]) -> list[tuple[str, RenderedObject]]:
        """Each object of a build's output with its text and its place in the sources."""
        sources = self.sources_of(t.repo)
        index = SourceIndex([Path(x) for x in dirs], sources)
        kfile = next((Path(d) / n for n in KUSTOMIZATION_FILES if (Path(d) / n).is_file()), None)
        fallback = Position(display(kfile) if kfile is not None else display(Path(d)), 1, 1)
        patches = TreePatches([Path(x) for x in dirs])
        shown = f"{display(Path(d))} ({t.info.ref})"
        prefix, suffix = strip
        out: list[tuple[str, RenderedObject]] = []
        for doc in flux.split_documents(output):
            for o in parse_yaml(doc, shown, guard=False):
                name = o.name
                if prefix and name.startswith(prefix):
                    name = name[len(prefix):]
                if suffix and name.endswith(suffix):
                    name = name[:len(name) - len(suffix)]
                key = (o.kind, name, o.namespace)
                dref = DeclarationRef(index, key, fallback)
                base = K8sObject(o.obj, SourcePosition(dref), display(Path(d)), locator=Built(dref, patches))
                out.append((doc, with_(base, render=t.info, cluster=t.info.cluster,
                                       vias=tuple(option_vias(o.obj, t, t.spec) if t.engine == "flux" else ()))))
                if o.kind == "Secret":
                    redact.register(flux.secret_values(o.obj).values())
        return out


def one_line(e: Exception) -> str:
    return " ".join(str(e).split())


def with_(o: K8sObject, **changes: Any) -> RenderedObject:
    """o as a RenderedObject (keeping what it has), with `changes`."""
    base = {f.name: getattr(o, f.name) for f in fields(K8sObject) if f.init}
    if isinstance(o, RenderedObject):
        base.update(render=o.render, vias=o.vias, cluster=o.cluster)
    base.update(changes)
    return RenderedObject(**base)


__all__ = ["Out", "Session", "one_line", "with_"]
