"""Safe YAML reading that remembers where every value came from.

The inventory is small and hand-written, so it is read with ruamel.yaml's composer (a node
graph with marks, no object construction: safe by construction) and turned into plain Python
values here. Doing the conversion ourselves lets us report duplicate keys, refuse alias bombs
before anything is expanded, and keep a 1-based position for every path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from topogate.inventory.model import Position

# An inventory has hundreds of values, a large one tens of thousands; a billion-laughs
# document expands to billions. Anything past this is refused before it is expanded.
MAX_EXPANDED_NODES = 200_000

YPath = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlProblem:
    pos: Position
    message: str


@dataclass
class Located:
    """Plain data plus positions: `values[path]` is where the value at path starts,

    `keys[path]` where its key starts (for mappings entries)."""

    data: Any
    values: dict[YPath, Position] = field(default_factory=dict)
    keys: dict[YPath, Position] = field(default_factory=dict)
    # Problems that do not stop reading (duplicate keys): reported with everything else.
    problems: list[YamlProblem] = field(default_factory=list)

    def at(self, path: YPath) -> Position:
        """The position of path, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        return self.values.get(p, Position("<unknown>", 1, 1))

    def key_at(self, path: YPath) -> Position:
        return self.keys.get(tuple(path)) or self.at(path)


class YamlReadError(Exception):
    def __init__(self, problems: list[YamlProblem]):
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


def _pos(file: str, node: Node) -> Position:
    m = node.start_mark
    return Position(file, m.line + 1, m.column + 1)


def _scalar(node: ScalarNode) -> Any:
    tag, v = str(node.tag or ""), node.value
    if tag.endswith(":null"):
        return None
    if tag.endswith(":bool"):
        return v.lower() in ("true", "yes", "on")
    if tag.endswith(":int"):
        s = v.replace("_", "")
        try:
            return int(s, 10)
        except ValueError:
            try:
                return int(s, 0)
            except ValueError:
                return v
    if tag.endswith(":float"):
        low = v.lower()
        if low in (".inf", "+.inf"):
            return math.inf
        if low == "-.inf":
            return -math.inf
        if low == ".nan":
            return math.nan
        try:
            return float(v.replace("_", ""))
        except ValueError:
            return v
    return v  # str, timestamps and custom tags stay text: the schema decides


class _Converter:
    def __init__(self, file: str):
        self.file = file
        self.out = Located(None)
        self.problems: list[YamlProblem] = []

    def size(self, node: Node, memo: dict[int, int]) -> int:
        key = id(node)
        if key in memo:
            return memo[key]
        memo[key] = 1  # a cycle counts once; the composer cannot build one, but be safe
        n = 1
        if isinstance(node, MappingNode):
            for k, v in node.value:
                n += self.size(k, memo) + self.size(v, memo)
                if n > MAX_EXPANDED_NODES:
                    break
        elif isinstance(node, SequenceNode):
            for item in node.value:
                n += self.size(item, memo)
                if n > MAX_EXPANDED_NODES:
                    break
        memo[key] = n
        return n

    def convert(self, node: Node, path: YPath) -> Any:
        self.out.values.setdefault(path, _pos(self.file, node))
        if isinstance(node, ScalarNode):
            return _scalar(node)
        if isinstance(node, SequenceNode):
            return [self.convert(item, path + (i,)) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            result: dict[str, Any] = {}
            first: dict[str, Position] = {}
            merges: list[Node] = []
            for knode, vnode in node.value:
                if str(knode.tag or "").endswith(":merge"):
                    merges.append(vnode)
                    continue
                if not isinstance(knode, ScalarNode):
                    self.problems.append(YamlProblem(
                        _pos(self.file, knode), "a mapping key must be a plain scalar"))
                    continue
                key = str(knode.value)
                kpos = _pos(self.file, knode)
                if key in first:
                    f = first[key]
                    self.problems.append(YamlProblem(
                        kpos, f"duplicate key '{key}' (first defined at line {f.line}, column "
                              f"{f.column}); remove one of them"))
                    continue
                first[key] = kpos
                self.out.keys[path + (key,)] = kpos
                result[key] = self.convert(vnode, path + (key,))
            # `<<` merges: explicit keys win, as in YAML 1.1's merge-key spec.
            for m in merges:
                sources = m.value if isinstance(m, SequenceNode) else [m]
                for src in sources:
                    if not isinstance(src, MappingNode):
                        self.problems.append(YamlProblem(
                            _pos(self.file, src), "a '<<' merge needs a mapping or a list of mappings"))
                        continue
                    merged = self.convert(src, path)
                    for k, v in merged.items():
                        result.setdefault(k, v)
            return result
        return None


def read_yaml(text: str, file: str) -> Located:
    """Parse one YAML document into plain data with positions; raise YamlReadError on any problem."""
    yaml = YAML(typ="rt")
    try:
        docs = list(yaml.compose_all(text))
    except MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        what = e.problem or "invalid YAML"
        if e.context and e.context_mark:
            cm = e.context_mark
            what += f" ({e.context} started at line {cm.line + 1}, column {cm.column + 1})"
        raise YamlReadError([YamlProblem(Position(file, line, col), f"YAML syntax error: {what}")]) from None
    except RecursionError:
        raise YamlReadError([YamlProblem(Position(file, 1, 1), (
            "the document is nested too deeply to read; an inventory is a few levels deep"))]) from None
    except YAMLError as e:  # pragma: no cover - unmarked parser errors are rare
        raise YamlReadError([YamlProblem(Position(file, 1, 1), f"YAML error: {e}")]) from None
    docs = [d for d in docs if d is not None]
    if len(docs) != 1:
        raise YamlReadError([YamlProblem(
            Position(file, 1, 1),
            f"expected exactly one YAML document, found {len(docs)}; keep one Inventory per file")])
    conv = _Converter(file)
    root = docs[0]
    memo: dict[int, int] = {}
    if conv.size(root, memo) > MAX_EXPANDED_NODES:
        raise YamlReadError([YamlProblem(
            _pos(file, root),
            f"aliases expand to more than {MAX_EXPANDED_NODES} values (an alias bomb?); "
            "refusing to expand: write the values out or use fewer nested aliases")])
    try:
        conv.out.data = conv.convert(root, ())
    except RecursionError:
        raise YamlReadError([YamlProblem(_pos(file, root), (
            "the document is nested too deeply to read; an inventory is a few levels deep"))]) from None
    conv.out.problems = conv.problems
    return conv.out
