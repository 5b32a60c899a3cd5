"""Reading the workloads' base manifests: libyaml, with the guards of the inventory reader.

A base is Kubernetes YAML that kustomize will read too, so it is typed as PyYAML's safe loader
types it (YAML 1.1, as kustomize's Go parser mostly does). Before a document is constructed,
one walk over its composed nodes refuses what would hurt later: duplicate keys (kustomize
rejects them), alias bombs (they would expand in every later step) and nesting deeper than any
Kubernetes object (every later step recurses).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path, PurePath
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.inventory.printable import message, unprintable
from topogate.inventory.yamlpos import MAX_EXPANDED_NODES
from topogate.safeio.saferead import memo_loader

# A pod template inside a JobSet inside a runtime is about 20 levels deep.
MAX_BASE_DEPTH = 100


def shown(f: Path) -> str:
    """A base file as findings show it: relative to the working directory when below it."""
    text = str(f)
    # os.path.relpath's answer without its two abspaths and component lists (asked three times
    # a base): a Path's text is normalized but for `..`, and getcwd() is normalized, so below it
    # the answer is the rest of the text
    if isinstance(f, PurePath) and text.startswith("/") and "/.." not in text:
        cwd = os.getcwd()
        if cwd != "/" and text.startswith(cwd + "/"):
            return text[len(cwd) + 1:]
    try:
        return os.path.relpath(f)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(f)


def mark_at(f: Path, mark: Any) -> Position:
    return Position(shown(f), mark.line + 1, mark.column + 1)


def line_of(text: str, f: Path, needle: str) -> Position:
    """The first place `needle` is written in text (a kustomization entry, say)."""
    for i, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return Position(shown(f), i, line.index(needle) + 1)
    return Position(shown(f), 1, 1)


class _Refused(Exception):
    def __init__(self, mark: Any, message: str):
        super().__init__(message)
        self.mark = mark
        self.message = message


_ACTIVE = -1  # memo value of a node whose walk has not finished: meeting it again is a cycle


def _walk(node: Any, depth: int, memo: dict[int, int], escapes: bool = False,
          cap: float = MAX_EXPANDED_NODES) -> int:
    """Expanded size of node; raises _Refused on a duplicate key, nesting, an alias bomb or an
    alias inside its own anchor (libyaml composes that into a cycle no later step survives), and
    with `escapes` (the text holds a backslash) a character kustomize refuses."""
    key = id(node)
    if memo.get(key) == _ACTIVE:
        raise _Refused(node.start_mark, (
            "an alias refers to a node that contains it (a recursive alias); Kubernetes objects "
            "are trees: remove the alias"))
    if key in memo:
        return memo[key]
    if depth > MAX_BASE_DEPTH:
        raise _Refused(node.start_mark, "a base manifest is nested too deeply")
    memo[key] = _ACTIVE
    n = 1
    value = node.value
    if escapes and isinstance(node, yaml.ScalarNode):
        c = unprintable(value)
        if c:
            raise _Refused(node.start_mark, f"in a base manifest, {message(c)}")
    if isinstance(node, yaml.MappingNode):
        seen: set[Any] = set()
        for k, v in value:
            kv = k.value
            if isinstance(kv, str) and kv != "<<":
                if kv in seen:
                    raise _Refused(k.start_mark, (
                        f"duplicate key '{kv}' in a base manifest; kustomize rejects it: remove one"))
                seen.add(kv)
            n += _walk(k, depth + 1, memo, escapes, cap) + _walk(v, depth + 1, memo, escapes, cap)
            if n > cap:
                break
    elif isinstance(node, yaml.SequenceNode):
        for item in value:
            n += _walk(item, depth + 1, memo, escapes, cap)
            if n > cap:
                break
    memo[key] = n
    return n


class _Slow(Exception):
    """Something `_build` leaves to the walk and PyYAML's constructor (the reference path)."""


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_PLAIN_SCALARS = {"tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                  "tag:yaml.org,2002:null"}


class _Builder:
    """`_walk`'s checks and PyYAML's SafeConstructor in one pass, for the plain documents that
    bases are: no alias (the text has no `*`), only maps, sequences, strings, numbers, booleans
    and nulls, keys that are scalars and no merge keys. Anything else raises _Slow before a
    value is returned, and the document goes the reference way (walk, then construct), so the
    result and the first problem reported are the same either way: without aliases the walk
    visits the nodes in this order and counts each once."""

    def __init__(self, loader: Any):
        self.loader = loader
        self.count = 0

    def scalar(self, node: Any, depth: int) -> Any:
        if depth > MAX_BASE_DEPTH:
            raise _Refused(node.start_mark, "a base manifest is nested too deeply")
        tag = node.tag
        if tag == _STR:
            # One copy of each string over every base: the inventory keeps each base's
            # documents, and their keys and most values are the same in every one.
            return sys.intern(node.value)
        if tag not in _PLAIN_SCALARS:
            raise _Slow
        try:
            return self.loader.yaml_constructors[tag](self.loader, node)
        except Exception:  # noqa: BLE001 - the reference path says what is wrong
            raise _Slow from None

    def build(self, node: Any, depth: int) -> Any:
        self.count += 1
        if self.count > MAX_EXPANDED_NODES:
            raise _Slow
        cls = type(node)
        if cls is yaml.ScalarNode:
            return self.scalar(node, depth)
        if depth > MAX_BASE_DEPTH:
            raise _Refused(node.start_mark, "a base manifest is nested too deeply")
        if cls is yaml.MappingNode:
            if node.tag != _MAP:
                raise _Slow
            seen: set[Any] = set()
            out: dict[Any, Any] = {}
            for k, v in node.value:
                if type(k) is not yaml.ScalarNode or k.tag not in _KEY_TAGS:
                    raise _Slow
                kv = k.value
                if kv == "<<":
                    raise _Slow
                if kv in seen:
                    raise _Refused(k.start_mark, (
                        f"duplicate key '{kv}' in a base manifest; kustomize rejects it: remove one"))
                seen.add(kv)
                self.count += 1
                key = self.scalar(k, depth + 1)
                out[key] = self.build(v, depth + 1)
            return out
        if cls is yaml.SequenceNode:
            if node.tag != _SEQ:
                raise _Slow
            return [self.build(item, depth + 1) for item in node.value]
        raise _Slow


_KEY_TAGS = {_STR} | _PLAIN_SCALARS


def _document(loader: Any, node: Any, plain: bool, escapes: bool, aliased: bool = True) -> Any:
    """One document: built in one pass when it is plain, else walked and constructed.

    Without an alias (no `*` in the text) nothing expands: however many values it holds (a
    ConfigMap of 110,000 keys, which kubectl builds), it is no alias bomb; the walk then
    checks all of it, uncapped (the file limit bounds it)."""
    if plain:
        try:
            return _Builder(loader).build(node, 0)
        except _Slow:
            pass
    if not aliased:
        _walk(node, 0, {}, escapes, float("inf"))
    elif _walk(node, 0, {}, escapes) > MAX_EXPANDED_NODES:
        raise _Bomb(node)
    return loader.construct_document(node)


class _Bomb(Exception):
    def __init__(self, node: Any):
        super().__init__("alias bomb")
        self.node = node


def parse_base_text(text: str, f: Path, one_pass: bool = True,
                    ) -> tuple[list[Any], list[tuple[Position, str]]]:
    """Documents of a base manifest, or no documents and the one problem that stopped reading.

    `one_pass=False` takes the reference path for every document (tests compare the two)."""
    loader = memo_loader(text)
    out: list[Any] = []
    # No alias can be written without `*`, and no escaped control character without `\`:
    # without either, one pass builds the document; with them, the walk checks them first.
    escapes = "\\" in text
    plain = one_pass and "*" not in text and not escapes
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is None:
                continue
            try:
                out.append(_document(loader, node, plain, escapes, "*" in text))
            except _Bomb:
                return [], [(mark_at(f, node.start_mark), (
                    f"aliases expand to more than {MAX_EXPANDED_NODES} values (an alias bomb?); "
                    "refusing to expand this base manifest"))]
    except _Refused as e:
        return [], [(mark_at(f, e.mark), e.message)]
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = mark_at(f, mark) if mark else Position(shown(f), 1, 1)
        return [], [(where, f"YAML syntax error in a base manifest: {e.problem or e}")]
    except yaml.reader.ReaderError as e:
        return [], [(_char_at(text, f, e.character), (
            f"YAML syntax error in a base manifest: unacceptable character "
            f"{_char_name(e.character)}: {e.reason}; remove it"))]
    except yaml.YAMLError as e:  # pragma: no cover - every libyaml error we know is marked
        return [], [(Position(shown(f), 1, 1), f"YAML error in a base manifest: {' '.join(str(e).split())}")]
    except RecursionError:  # pragma: no cover - the walk refuses depth first
        return [], [(Position(shown(f), 1, 1), "a base manifest is nested too deeply")]
    finally:
        loader.dispose()
    return out, []


def _char_name(c: Any) -> str:
    return f"#x{c:04x}" if isinstance(c, int) else repr(c)


def _char_at(text: str, f: Path, c: Any) -> Position:
    """Where the reader's unacceptable character first is (libyaml gives a byte offset)."""
    i = text.find(chr(c)) if isinstance(c, int) and 0 <= c < 0x110000 else -1
    if i < 0:
        return Position(shown(f), 1, 1)
    line = text.count("\n", 0, i) + 1
    return Position(shown(f), line, i - (text.rfind("\n", 0, i) + 1) + 1)
