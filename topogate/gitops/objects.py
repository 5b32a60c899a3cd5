"""Objects as Argo CD or Flux apply them, and where a finding about one points.

A rendered object is a built object (topogate.sources.manifests) that remembers which engine
object rendered it (its `render`: an Argo CD Application or a Flux Kustomization) and which of
its fields that engine object changed (`vias`: a substitution, a Kustomization- or
Application-level patch, a namespace, a prefix, images, labels), each with the line of the
engine object that did it. A finding about such a field points at that line and names the
object's own source line too (`Cited`), so the reader sees both the base that was written and
the GitOps line that made it what is applied.
"""

from __future__ import annotations

from dataclasses import dataclass

from topogate.core.position import Position
from topogate.k8s.objects import K8sObject
from topogate.sources.positions import Deferred, Path_


@dataclass(frozen=True)
class RenderInfo:
    """One engine object that was rendered: how findings and reports name it."""

    engine: str  # "Flux" or "Argo CD"
    kind: str  # "Kustomization", "Application"
    namespace: str
    name: str
    pos: Position  # the engine object's own start
    path: str  # the directory it renders, as findings show it
    cluster: str | None  # the cluster it applies to, when known
    depends_on: tuple[str, ...] = ()  # Flux dependsOn, as namespace/name, in order

    @property
    def ref(self) -> str:
        return f"{self.engine} {self.kind} {self.namespace}/{self.name}" if self.namespace else \
            f"{self.engine} {self.kind} {self.name}"


@dataclass(frozen=True)
class Via:
    """A field of a rendered object an engine object changed: where, and how it says so."""

    path: Path_  # the field, in the rendered object
    pos: Position  # the engine object's line that changed it
    what: str  # "postBuild.substitute.TRAIN_ZONE", "spec.patches[0]", ...


def related(a: Path_, b: Path_) -> bool:
    """One path lies on the other (a field and anything inside it, or around it)."""
    n = min(len(a), len(b))
    return a[:n] == b[:n]


class Cited(Deferred):
    """A place in an object a GitOps engine changed, found only when read (as every position
    of a built object). For a field it changed (`at_change`), the engine object's line, noting
    the object's own line; for the object as a whole, the object's own line, noting what the
    engine object changed in it and where."""

    def __init__(self, render: RenderInfo, vias: tuple[Via, ...], source: Position, at_change: bool = True):
        super().__init__()
        object.__setattr__(self, "_args", (render, vias, source, at_change))

    def compute(self) -> Position:
        _, vias, source, at_change = object.__getattribute__(self, "_args")
        p = vias[0].pos if at_change else source
        return Position(p.file, p.line, p.column)

    def note(self) -> str:
        """What a finding at this position adds to its message."""
        render, vias, source, at_change = object.__getattribute__(self, "_args")
        shown = sorted(vias, key=_rank)
        changed = "; ".join(f"{v.what} ({_plain(v.pos)})" for v in shown[:3])
        more = f" and {len(shown) - 3} more" if len(shown) > 3 else ""
        after = f", applied after {', '.join(render.depends_on)}" if render.depends_on else ""
        if at_change:
            return (f"As {render.ref}{after} renders it: {changed}{more}; the object itself is written at "
                    f"{_plain(source)}.")
        return f"As {render.ref}{after} renders it, it changes: {changed}{more}."


def _plain(p: Position) -> Position:
    return Position(p.file, p.line, p.column)


# What a note names first: patches, then substitutions, then the rest (namespace, names, labels).
_ORDER = ("spec.patches", "spec.source.kustomize.patches", "spec.postBuild", "postBuild")


def _rank(v: Via) -> int:
    return next((i for i, prefix in enumerate(_ORDER) if v.what.startswith(prefix)), len(_ORDER))


@dataclass
class RenderedObject(K8sObject):
    """A built object as an engine object renders it (module doc)."""

    render: RenderInfo | None = None
    vias: tuple[Via, ...] = ()
    cluster: str | None = None  # the cluster the engine applies it to, when known

    def locate(self, path: Path_) -> Position:
        here = super().locate(path)
        if self.render is None:
            return here
        mine = tuple(v for v in self.vias if related(v.path, tuple(path)))
        return Cited(self.render, mine, here) if mine else here


def cited(o: RenderedObject) -> RenderedObject:
    """o with its own position noting what its engine object changed in it (a finding about
    the object as a whole, a job's placement, cites both lines too)."""
    if o.render is None or not o.vias or isinstance(o.pos, Cited):
        return o
    o.pos = Cited(o.render, o.vias, o.pos, at_change=False)
    return o


__all__ = ["Cited", "RenderInfo", "RenderedObject", "Via", "cited"]
