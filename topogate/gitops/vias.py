"""Which fields of a rendered object its engine object changed, and at which of its lines: a
substitution (the line that set the variable), the engine's kustomize options (Flux's spec,
an Application source's `kustomize`): namespace, name prefix and suffix, patches (the fields
they write, where their target is the object), images, replicas, labels and annotations."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from topogate.core.position import Position
from topogate.gitops import argocd, envsubst
from topogate.gitops.engines import Target
from topogate.gitops.objects import Via
from topogate.gitops.values import mapping
from topogate.safeio.saferead import InputError, documents
from topogate.sources.overlay_blame import changed_paths
from topogate.sources.positions import Path_


def _get(obj: Any, path: Path_) -> Any:
    for p in path:
        if isinstance(obj, dict) and p in obj:
            obj = obj[p]
        elif isinstance(obj, list) and isinstance(p, int) and 0 <= p < len(obj):
            obj = obj[p]
        else:
            return None
    return obj


def substitution_vias(before: Mapping[str, Any], after: Mapping[str, Any], known: Mapping[str, Via],
                       fallback: Position) -> list[Via]:
    """Per changed field: the line that set the variable it read (a default in the object itself
    is the postBuild that ran the substitution)."""
    out: list[Via] = []
    for path in changed_paths(before, after):
        old = _get(before, path)
        names: list[str] = []
        if isinstance(old, str):
            try:
                names = [r.param for r in envsubst.references(envsubst.parse(old))]
            except envsubst.SubstError:
                names = []
        src = next((known[n] for n in names if n in known), None)
        if src is not None:
            out.append(Via(path, src.pos, src.what))
        else:
            out.append(Via(path, fallback, "spec.postBuild (a default written in the object)"))
    return out


def option_vias(obj: Mapping[str, Any], t: Target, opts: Mapping[str, Any]) -> list[Via]:
    """Fields of a rendered object the engine object's own kustomize options changed (Flux's
    spec, an Application source's `kustomize`), each with the option's line."""
    flux_side = t.engine == "flux"
    at: Callable[[Path_], Position] = (lambda p: t.locate(p)) if flux_side else (
        lambda p: t.locate(("kustomize", *p)))
    name = "spec" if flux_side else "spec.source.kustomize"
    md = mapping(obj.get("metadata"))
    out: list[Via] = []
    ns_key = "targetNamespace" if flux_side else "namespace"
    if opts.get(ns_key) and md.get("namespace") == opts.get(ns_key):
        out.append(Via(("metadata", "namespace"), at((ns_key,)), f"{name}.{ns_key}"))
    for key in ("namePrefix", "nameSuffix"):
        if opts.get(key):
            out.append(Via(("metadata", "name"), at((key,)), f"{name}.{key}"))
    for i, p in enumerate(opts.get("patches") or []):
        if isinstance(p, dict):
            for path in _patch_paths(p, obj):
                out.append(Via(path, at(("patches", i)), f"{name}.patches[{i}]"))
    images = opts.get("images") or []
    for path, image in _images(obj):
        img_name = argocd.split_image(image)[0]
        for i, im in enumerate(images):
            if isinstance(im, dict):
                want = {str(im.get("newName") or im.get("name") or "")}
            else:
                key, _, value = str(im).partition("=") if "=" in str(im) else ("", "", str(im))
                want = {argocd.split_image(value)[0], key} - {""}
            if img_name in want:
                out.append(Via(path, at(("images", i)), f"{name}.images[{i}]"))
    if not flux_side:
        for i, r in enumerate(opts.get("replicas") or []):
            if isinstance(r, dict) and r.get("name") == md.get("name"):
                out.append(Via(("spec", "replicas"), at(("replicas", i)), f"{name}.replicas[{i}]"))
        for key, field in (("commonLabels", "labels"), ("commonAnnotations", "annotations")):
            for k in (opts.get(key) or {}):
                out += [Via(p, at((key, k)), f"{name}.{key}.{k}") for p in _label_paths(obj, field, str(k))]
    return out


def _images(obj: Any, at: Path_ = ()) -> Iterable[tuple[Path_, str]]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in ("containers", "initContainers") and isinstance(v, list):
                for i, c in enumerate(v):
                    if isinstance(c, dict) and isinstance(c.get("image"), str):
                        yield (*at, k, i, "image"), c["image"]
            yield from _images(v, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _images(v, (*at, i))


def _label_paths(obj: Any, field: str, key: str, at: Path_ = ()) -> Iterable[Path_]:
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k in (field, "matchLabels", "selector") and isinstance(v, dict) and key in v:
                yield (*at, k, key)
            yield from _label_paths(v, field, key, (*at, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _label_paths(v, field, key, (*at, i))


def _patch_paths(p: Mapping[str, Any], obj: Mapping[str, Any]) -> list[Path_]:
    """The fields an inline patch writes in obj, when its target is obj (a JSON patch: its
    operations' paths; a strategic merge patch: its fields, lists as a whole)."""
    try:  # a pull request's text: read with the checks every file gets
        docs = [x for _, _, x in documents(str(p.get("patch") or ""), "patch") if x is not None]
    except InputError:
        return []
    if not docs:
        return []
    body = docs[0]
    target = p.get("target") if isinstance(p.get("target"), dict) else None
    if target is None and isinstance(body, dict):
        md = mapping(body.get("metadata"))
        target = {"kind": body.get("kind"), "name": md.get("name")}
    if not _selects(target or {}, obj):
        return []
    if isinstance(body, list):
        out: list[Path_] = []
        for op in body:
            if isinstance(op, dict) and isinstance(op.get("path"), str):
                out.append(tuple(int(s) if s.isdigit() else s.replace("~1", "/").replace("~0", "~")
                                 for s in op["path"].split("/")[1:]))
        return out
    if isinstance(body, dict):
        return [q for q in _leaves(body) if q[:1] not in (("apiVersion",), ("kind",))
                and q[:2] not in (("metadata", "name"), ("metadata", "namespace"))]
    return []


def _leaves(v: Any, at: Path_ = ()) -> list[Path_]:
    if isinstance(v, dict) and v:
        return [q for k, x in v.items() if k != "$patch" for q in _leaves(x, (*at, str(k)))]
    return [at]


def _selects(target: Mapping[str, Any], obj: Mapping[str, Any]) -> bool:
    """kustomize's Selector against an object: group, version and kind exact, name and
    namespace as anchored regular expressions (label and annotation selectors: taken to match)."""
    api = str(obj.get("apiVersion") or "")
    group, _, version = api.rpartition("/")
    md = mapping(obj.get("metadata"))
    for key, have in (("group", group), ("version", version), ("kind", str(obj.get("kind") or ""))):
        if target.get(key) and target[key] != have:
            return False
    for key in ("name", "namespace"):
        want = target.get(key)
        if want:
            try:
                if not re.fullmatch(str(want), str(md.get(key) or "")):
                    return False
            except re.error:
                return False
    return True


__all__ = ["option_vias", "substitution_vias"]
