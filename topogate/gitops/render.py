"""The objects Argo CD and Flux apply, in place of the objects read from the directories they
render: every engine object among the inputs whose source is this repository is rendered as its
engine renders it (topogate.gitops.flux, topogate.gitops.argocd), engine objects a render
produces are rendered in turn, and what cannot be read is said (topogate.gitops.notes).

The rendered objects replace the objects read from the same directory (a kustomization root
among the PATHs that an Application or a Flux Kustomization renders, a plain file a directory
source or a generated Flux kustomization lists). The same object applied twice to one cluster
(two engines pointing at one directory: the generated tree has an Argo CD Application and a
Flux Kustomization for each cluster, for whichever the user runs) is kept once when both copies
agree apart from Argo CD's own annotations; copies that differ stay, and TG007 reports them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from topogate.gitops import argocd, flux, scratch
from topogate.gitops.argorender import render_argo
from topogate.gitops.engines import Target, is_application, is_engine, is_flux_kustomization
from topogate.gitops.fluxrender import render_flux
from topogate.gitops.merge import merge
from topogate.gitops.notes import FAILS, NOT_RENDERED, Note
from topogate.gitops.objects import RenderedObject, RenderInfo, cited
from topogate.gitops.session import Out, Session
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.safeio import subproc
from topogate.sources.kustomization import NotLocal

# Engine objects rendered by renders, rendered in turn, this many levels deep at most.
MAX_DEPTH = 8


@dataclass(frozen=True)
class Rendered:
    """The objects to check, what the render says about them, and the renders made."""

    objects: tuple[K8sObject, ...]
    notes: tuple[Note, ...] = ()
    renders: tuple[RenderInfo, ...] = ()


def render(objects: Sequence[K8sObject], inv: Inventory | None, strict: bool = True,
           also_inside: Sequence[str] = (), closed: bool = False) -> Rendered:
    """The module doc. `strict`: kustomize-controller's StrictPostBuildSubstitutions (on by
    default since v1.9): a variable without a value or a default fails the Kustomization.
    `also_inside`: paths whose repositories may be read besides each engine object's own (the
    PATHs and the inventory, as for the check's own reads). `closed`: the inputs hold every
    ConfigMap and Secret the cluster has (a `substituteFrom` not among them is absent, as Flux
    finds it: tests hold the render to Flux's own so); otherwise such a one is unknown."""
    if not any(is_engine(o) for o in objects):
        return Rendered(tuple(objects))
    s = Session(objects, inv, strict, tuple(p for p in also_inside if p != "-"), closed)
    outs: list[tuple[Target, Out]] = []
    done: set[tuple[str, str, str, str | None]] = set()
    engines = [o for o in s.objects if is_engine(o)]
    for _ in range(MAX_DEPTH):
        targets = []
        for t in (t for o in engines for t in _targets(s, o)):
            if t.key not in done:
                done.add(t.key)
                targets.append(t)
        engines = []
        for t, out in zip(targets, _render_all(s, targets), strict=True):
            if out is None:
                continue
            s.renders.append(t.info)
            outs.append((t, out))
            s.finder.add_sources(out.objects)
            s.index_values(out.objects)
            engines += [o for o in out.objects if is_engine(o)]
        if not engines:
            break
    merged = [cited(o) if isinstance(o, RenderedObject) else o for o in merge(s.objects, outs)]
    return Rendered(tuple(merged), tuple(sorted(set(s.finder.notes))), tuple(s.renders))


def _render_all(s: Session, targets: Sequence[Target]) -> list[Out | None]:
    """Each target's render, in the targets' order, at most one per CPU at a time: each is a
    kubectl kustomize child, and the Python around it is small. What the renders share (the
    tree checks done, the sources read, the notes) takes concurrent additions of the same facts."""
    workers = min(len(targets), os.cpu_count() or 1)
    if workers <= 1:
        return [_render(s, t) for t in targets]
    subproc.install_handlers()  # from the main thread, before any worker starts a child
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="gitops") as pool:
        return list(pool.map(lambda t: _render(s, t), targets))


def _targets(s: Session, o: K8sObject) -> Iterable[Target]:
    if is_flux_kustomization(o):
        return s.finder.flux(o)
    if is_application(o):
        return s.finder.argo(o)
    return ()


def _render(s: Session, t: Target) -> Out | None:
    """One target's objects; None, and a note, where the render cannot be done or fails."""
    try:
        return render_flux(s, t) if t.engine == "flux" else render_argo(s, t)
    except NotLocal as e:
        s.note(NOT_RENDERED, t, (
            f"{t.info.ref} renders {t.info.path}, which needs what topogate never fetches ({e.message}): "
            "not rendered, nothing it applies is checked (a job it deploys may be split or blocked with "
            "no finding)"), e.pos)
    except flux.FluxError as e:
        s.note(FAILS, t, f"kustomize-controller fails on {t.info.ref}: {e}; it applies nothing of it",
               t.locate(e.at[1:]) if e.at[:1] == ("spec",) else t.obj.pos)
    except argocd.ArgoError as e:
        s.note(FAILS, t, f"Argo CD's repo-server fails on {t.info.ref}: {e}; it applies nothing of it",
               t.locate(e.at) if e.at else t.obj.pos)
    except scratch.BuildFailed as e:
        s.note(FAILS, t, (
            f"the build of {t.info.path} as {t.info.ref} edits it fails: {e}; "
            f"{'Flux' if t.engine == 'flux' else 'Argo CD'} applies nothing of it"), t.obj.pos)
    return None


__all__ = ["MAX_DEPTH", "Rendered", "render"]
