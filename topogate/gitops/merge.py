"""The rendered objects in place of what was read from the same directories, each object an
engine applies to a cluster kept once (topogate.gitops.render's module doc)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from topogate.gitops.engines import Target, group_of
from topogate.gitops.objects import RenderedObject
from topogate.gitops.session import Out
from topogate.gitops.values import mapping
from topogate.k8s.objects import K8sObject


def _plain(obj: Mapping[str, Any]) -> str:
    """An object's content without Argo CD's own annotations (sync waves): what two engines
    applying it must agree on."""
    md = mapping(obj.get("metadata"))
    ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else None
    if ann:
        kept = {k: v for k, v in ann.items() if not str(k).startswith("argocd.argoproj.io/")}
        md = {**md, "annotations": kept} if kept else {k: v for k, v in md.items() if k != "annotations"}
        obj = {**obj, "metadata": md}
    return json.dumps(obj, sort_keys=True, default=str)


def _identity(o: K8sObject) -> tuple[str, str, str, str]:
    return group_of(o) if "/" in o.api_version else "", o.kind, o.namespace, o.name


def merge(read: Sequence[K8sObject], outs: Sequence[tuple[Target, Out]]) -> list[K8sObject]:
    """The read objects, each render's objects in place of those they replace (at the first of
    them, else at the end), later agreeing copies left out (_dedupe)."""
    real: dict[str, str] = {}

    def replaced(o: K8sObject, roots: set[str], files: set[str]) -> bool:
        where = o.built_from or o.src_file
        if not where:
            return False
        if where not in real:
            real[where] = os.path.realpath(where)
        return real[where] in (roots if o.built_from else files)

    roots = {r for _, out in outs for r in out.roots}
    files = {f for _, out in outs for f in out.files}
    slot: dict[int, list[int]] = {}
    for i, (_, out) in enumerate(outs):
        at = next((j for j, o in enumerate(read) if replaced(o, out.roots, out.files)), len(read))
        slot.setdefault(at, []).append(i)
    result: list[K8sObject] = []
    for j, o in enumerate(read):
        for i in slot.get(j, ()):
            result.extend(outs[i][1].objects)
        if not replaced(o, roots, files):
            result.append(o)
    for i in slot.get(len(read), ()):
        result.extend(outs[i][1].objects)
    return _dedupe(result)


def _dedupe(objs: Sequence[K8sObject]) -> list[K8sObject]:
    """Later copies of an object that agree with an earlier one in the same cluster (module doc)."""
    by_id: dict[tuple[str, str, str, str], list[K8sObject]] = {}
    drop: set[int] = set()
    for o in objs:
        if not o.kind or not o.name:
            continue
        same = by_id.setdefault(_identity(o), [])
        c = o.cluster if isinstance(o, RenderedObject) else None
        for earlier in same:
            ec = earlier.cluster if isinstance(earlier, RenderedObject) else None
            if (c is None or ec is None or c == ec) and _plain(earlier.obj) == _plain(o.obj):
                if isinstance(o, RenderedObject) and not isinstance(earlier, RenderedObject):
                    drop.add(id(earlier))  # the read copy goes: the rendered one says who applies it
                    same.remove(earlier)
                    same.append(o)
                else:
                    drop.add(id(o))
                break
        else:
            same.append(o)
    return [o for o in objs if id(o) not in drop]


__all__ = ["merge"]
