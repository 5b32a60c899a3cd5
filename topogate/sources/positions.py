"""Positions inside YAML files, worked out only when someone asks (a finding, a report).

Keeping every composed node alive to answer the few position questions findings ask would
double the memory of a large check; re-composing one file on demand costs milliseconds. Here
live the deferred Position, the per-file composed-node cache, and the walk from a node to the
nearest existing node on a path, which manifests, the source index and overlay blame share.
"""

from __future__ import annotations

import functools
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.safeio.saferead import InputError, documents, read_text

Path_ = tuple[str | int, ...]


class Deferred(Position):
    """A Position computed on first read of file, line or column."""

    def __init__(self) -> None:
        object.__setattr__(self, "_resolved", None)

    def compute(self) -> Position:
        raise NotImplementedError

    def resolve(self) -> Position:
        done: Position | None = object.__getattribute__(self, "_resolved")
        if done is None:
            done = self.compute()
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
        return f"{type(self).__name__}({self.resolve()})"


class LazyPosition(Deferred):
    """A position inside an object, found by re-reading its file only when someone asks.

    Keeping every composed node alive to answer the few position questions findings ask would
    double the memory of a large check; re-composing one file on demand costs milliseconds.
    Behaves as a Position (it is one); falls back to the object's start if the path is gone.
    """

    def __init__(self, src_file: str, doc: int, path: Path_, display: str, fallback: Position):
        super().__init__()
        object.__setattr__(self, "_args", (src_file, doc, path, display, fallback))

    def compute(self) -> Position:
        return resolve_position(*object.__getattribute__(self, "_args"))


# Text with no file to re-read (standard input), by the name its objects use as src_file.
IN_MEMORY: dict[str, str] = {}


@functools.lru_cache(maxsize=32)
def composed(src_file: str) -> dict[int, Any]:
    text = IN_MEMORY[src_file] if src_file in IN_MEMORY else read_text(src_file, src_file)
    return {i: node for i, node, _ in documents(text, src_file, construct=False)}


def resolve_position(src_file: str, doc: int, path: Path_, display: str, fallback: Position) -> Position:
    try:
        node = composed(src_file)[doc]
    except (KeyError, InputError):
        return Position(fallback.file, fallback.line, fallback.column)
    return node_position(node, path, display)


def node_position(node: Any, path: Path_, display: str) -> Position:
    """Where the nearest existing node on `path` below `node` starts (1-based)."""
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


def remember_text(name: str, text: str) -> None:
    """Text with no file to re-read (standard input), under the name its objects use."""
    IN_MEMORY[name] = text
    composed.cache_clear()


__all__ = ["Deferred", "LazyPosition", "Path_", "composed", "node_position", "remember_text",
           "resolve_position"]
