"""Which overlay changed a built object, so findings about what it changed point at the patch.

`check` builds a kustomization tree once and traces each object back to the file that declares
it, usually an untouched base. When an overlay's patch changed the part of the object a finding
is about (the pod template's affinity, a spread constraint), pointing at the base sends the user
to a file that is fine: the finding belongs on the patch that made it so.

Only explicit patches are blamed (`patches`, `patchesStrategicMerge`, `patchesJson6902`), never
transformers such as `namespace:` or `commonLabels:`, and only for the paths whose built value
differs from the base's. A JSON patch is blamed at the operation that touches the path; a
strategic-merge patch at the path inside it; an inline patch at its entry in kustomization.yaml.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.k8s import kustomization as kmodel
from topogate.safeio.repopaths import kustomization_file
from topogate.safeio.saferead import InputError, documents, load_all, read_text
from topogate.sources.positions import node_position

PathT = tuple[str | int, ...]
_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Patch:
    kind: str
    name: str  # "" when the target names no object (then it matches by kind only)
    kfile: Path  # the kustomization that applies it
    entry: PathT  # the entry inside kfile, e.g. ("patches", 0)
    file: Path | None  # the patch file, None when inline
    ops: tuple[tuple[int, PathT], ...] = ()  # JSON patch: (op index, path) of each operation


def changed_paths(base: Any, built: Any, at: PathT = ()) -> list[PathT]:
    """Paths whose value differs between the base object and the built one (deepest first found)."""
    if isinstance(base, dict) and isinstance(built, dict):
        out: list[PathT] = []
        for k in sorted(set(base) | set(built), key=str):
            if base.get(k) != built.get(k):
                out += changed_paths(base.get(k), built.get(k), (*at, str(k)))
        return out
    if isinstance(base, list) and isinstance(built, list) and len(base) == len(built):
        return [p for i, (a, b) in enumerate(zip(base, built, strict=True)) if a != b
                for p in changed_paths(a, b, (*at, i))]
    return [at] if base != built else []


def _pointer(p: str) -> PathT:
    parts = [s.replace("~1", "/").replace("~0", "~") for s in p.split("/")[1:]]
    return tuple(int(s) if s.isdigit() else s for s in parts)


def _load(f: Path) -> list[Any]:
    # Patch files come from the pull request: read like every other input (regular files,
    # size cap, alias and nesting guards).
    try:
        return [d for d in load_all(f, str(f)) if d is not None]
    except InputError:
        return []


def _patch(d: Path, kfile: Path, entry: PathT, item: Any, target: Any) -> Patch | None:
    docs: list[Any]
    file: Path | None = None
    if isinstance(item, str):
        file = d / item
        docs = _load(file)
    elif isinstance(item, dict) and isinstance(item.get("path"), str):
        file = d / item["path"]
        docs = _load(file)
    elif isinstance(item, dict) and isinstance(item.get("patch"), str):
        try:
            docs = [x for x in yaml.load_all(item["patch"], Loader=_Loader) if x is not None]
        except yaml.YAMLError:
            docs = []
    else:
        return None
    first = docs[0] if docs else None
    ops: tuple[tuple[int, PathT], ...] = ()
    if isinstance(first, list):  # a JSON patch
        ops = tuple((i, _pointer(op["path"])) for i, op in enumerate(first)
                    if isinstance(op, dict) and isinstance(op.get("path"), str))
    tgt = target if isinstance(target, dict) else {}
    if not tgt and isinstance(first, dict):  # a strategic-merge patch names its object
        md = first.get("metadata")
        tgt = {"kind": first.get("kind"), "name": md.get("name") if isinstance(md, dict) else ""}
    kind, name = str(tgt.get("kind") or ""), str(tgt.get("name") or "")
    if not kind:
        return None
    return Patch(kind, name, kfile, entry, file, ops)


def patches_of(dirs: list[Path]) -> list[Patch]:
    """Every explicit patch of the kustomizations in dirs, in the order given (outermost first)."""
    out: list[Patch] = []
    for d in dirs:
        kfile = kustomization_file(d)
        if kfile is None:
            continue
        try:
            k = kmodel.read(read_text(kfile, str(kfile)), str(kfile))
        except InputError:
            continue  # the tree's check refused it before any build: nothing is blamed on it
        for key in ("patches", "patchesStrategicMerge", "patchesJson6902"):
            items = k.value(key)
            for i, item in enumerate(items if isinstance(items, list) else []):
                target = item.get("target") if isinstance(item, dict) else None
                p = _patch(d, kfile, (key, i), item, target)
                if p is not None:
                    out.append(p)
    return out


def blame(patches: list[Patch], kind: str, names: tuple[str, ...], changed: list[PathT], display: Any
          ) -> tuple[tuple[PathT, Position], ...]:
    """(changed path, position of the patch that changed it) for one built object.

    `display(path) -> str` names a file as findings show it."""
    out: list[tuple[PathT, Position]] = []
    mine = [p for p in patches if p.kind == kind and (not p.name or p.name in names)]
    for c in changed:
        for p in mine:  # outermost overlay first: it applied last
            pos = _where(p, c, display)
            if pos is not None:
                out.append((c, pos))
                break
    return tuple(out)


def _where(p: Patch, changed: PathT, display: Any) -> Position | None:
    if p.ops:
        hit = next((i for i, path in p.ops if _related(path, changed)), None)
        if hit is None:
            return None
        # An inline JSON patch is one block scalar: its entry is as precise as YAML lets us be.
        return _locate(p.file, (hit,), display) if p.file is not None else _locate(p.kfile, p.entry, display)
    if p.file is not None:
        return _locate(p.file, changed, display)
    return _locate(p.kfile, p.entry, display)


def _related(a: PathT, b: PathT) -> bool:
    n = min(len(a), len(b))
    return a[:n] == b[:n]


def _locate(f: Path, path: PathT, display: Any) -> Position:
    """The nearest existing node on `path` in the first document of f."""
    try:
        node = next((n for _, n, _ in documents(read_text(f, str(f)), str(f), construct=False)), None)
    except InputError:
        node = None
    shown = display(f)
    return Position(shown, 1, 1) if node is None else node_position(node, path, shown)


__all__ = ["Patch", "blame", "changed_paths", "patches_of"]
