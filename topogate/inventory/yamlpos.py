"""Safe YAML reading that remembers where every value came from.

The inventory is read with libyaml's C parser through PyYAML's composer (a node graph with
marks, no object construction: safe by construction) and turned into plain Python values here.
Doing the conversion ourselves lets us report duplicate keys, refuse alias bombs before anything
is expanded, and keep a 1-based position for every path.

Scalars are typed by YAML 1.2's core schema (`yes` and `on` stay text, `0o17` is an integer):
the inventory has always been read that way. Only a document that libyaml refuses is parsed a
second time, with PyYAML's pure-Python parser, whose messages name the problem in words.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from topogate.core.position import Position

# An inventory has hundreds of values, a large one tens of thousands; a billion-laughs
# document expands to billions. Anything past this is refused before it is expanded.
MAX_EXPANDED_NODES = 200_000
# An inventory is a few levels deep; every later step (schema validation, the checks) recurses,
# so depth is refused here, once, with a position, rather than as a crash somewhere later.
MAX_DEPTH = 64
TOO_DEEP = "the document is nested too deeply to read; an inventory is a few levels deep"

YPath = tuple[str | int, ...]


@dataclass(frozen=True)
class YamlProblem:
    pos: Position
    message: str


@dataclass
class Located:
    """Plain data plus positions: `values[path]` is (line, column) where the value at path

    starts, `keys[path]` where its key starts (for mapping entries); both 1-based in `file`."""

    data: Any
    file: str = "<unknown>"
    values: dict[YPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[YPath, tuple[int, int]] = field(default_factory=dict)
    # Problems that do not stop reading (duplicate keys): reported with everything else.
    problems: list[YamlProblem] = field(default_factory=list)

    def at(self, path: YPath) -> Position:
        """The position of path, or of its nearest ancestor that has one."""
        p = tuple(path)
        while p not in self.values and p:
            p = p[:-1]
        mark = self.values.get(p)
        return Position(self.file, *mark) if mark else Position("<unknown>", 1, 1)

    def key_at(self, path: YPath) -> Position:
        mark = self.keys.get(tuple(path))
        return Position(self.file, *mark) if mark else self.at(path)


class YamlReadError(Exception):
    def __init__(self, problems: list[YamlProblem]):
        super().__init__("; ".join(p.message for p in problems))
        self.problems = problems


def _mark(node: Node) -> tuple[int, int]:
    m = node.start_mark
    return m.line + 1, m.column + 1


def _pos(file: str, node: Node) -> Position:
    return Position(file, *_mark(node))


# Plain scalars are left untyped by the composer ("?") and typed here, by the YAML 1.2 core
# schema: one regular expression per scalar at most, chosen by its first character.
_PLAIN = "?"
_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_INT = re.compile(r"[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+")
_FLOAT = re.compile(r"""[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
                       |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
                       |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
                       |[-+]?\.(?:inf|Inf|INF)
                       |\.(?:nan|NaN|NAN)""", re.X)
_NULLS = frozenset(("", "~", "null", "Null", "NULL"))
_BOOLS = frozenset(("true", "True", "TRUE", "false", "False", "FALSE"))


def _plain_tag(v: str) -> str:
    if v in _NULLS:
        return ":null"
    c = v[0]
    if c in "tTfF" and v in _BOOLS:
        return ":bool"
    if c in "-+0123456789.":
        if _FLOAT.fullmatch(v):
            return ":float"
        if c != "." and _INT.fullmatch(v):
            return ":int"
    return ":str"


try:
    from yaml.cyaml import CParser as _Parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - PyYAML built without libyaml: same nodes, slower
    from yaml.composer import Composer
    from yaml.parser import Parser
    from yaml.reader import Reader
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser, Composer):  # type: ignore[no-redef]
        def __init__(self, stream: str):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
            Composer.__init__(self)


class _Composer(_Parser):  # type: ignore[misc,valid-type]
    """libyaml's parser and composer, with tag resolution deferred to `_scalar`."""

    # the composer's hooks for path-based resolvers, which we do not use
    def descend_resolver(self, parent: Any, index: Any) -> None:
        pass

    def ascend_resolver(self) -> None:
        pass

    def resolve(self, kind: type, value: Any, implicit: tuple[bool, bool]) -> str:
        if kind is ScalarNode:
            return _PLAIN if implicit[0] else _STR
        return _SEQ if kind is SequenceNode else _MAP


def _scalar(node: ScalarNode) -> Any:
    v = node.value
    tag = _plain_tag(v) if node.tag == _PLAIN else str(node.tag or "")
    if tag.endswith(":str"):
        return v
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
    return v  # timestamps and custom tags stay text: the schema decides


def _is_merge(node: Node) -> bool:
    tag = node.tag
    return (tag == _PLAIN and node.value == "<<") or str(tag or "").endswith(":merge")


class _TooDeep(Exception):
    def __init__(self, node: Node):
        self.node = node


class _Converter:
    def __init__(self, file: str, text: str = ""):
        self.file = file
        self.text = text
        self._lines: list[str] | None = None
        self.out = Located(None, file)
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

    def convert(self, node: Node, path: YPath, within: str = "map", key_col: int = 0) -> Any:
        if len(path) > MAX_DEPTH:
            raise _TooDeep(node)
        values = self.out.values
        if path not in values:
            m = node.start_mark
            if node.tag == _PLAIN and not node.value:
                values[path] = self.empty_at(m.line, m.column, within, key_col)
            else:
                values[path] = (m.line + 1, m.column + 1)
        if isinstance(node, ScalarNode):
            return _scalar(node)
        if isinstance(node, SequenceNode):
            mode = "flow" if node.flow_style else "seq"
            return [self.convert(item, path + (i,), mode) for i, item in enumerate(node.value)]
        if isinstance(node, MappingNode):
            return self.mapping(node, path)
        return None

    def empty_at(self, line: int, col: int, within: str, key_col: int) -> tuple[int, int]:
        """Where an empty value (`key:` or `-` and nothing) is reported, as the inventory always
        has: in a block mapping at the next token (after the colon if a comment follows it), in
        a block sequence after the dash, in flow style after the colon. libyaml marks these
        differently; an empty value is rare, so its position is worked out from the text."""
        if self._lines is None:
            self._lines = self.text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        lines = self._lines
        # ruamel's rule, kept: a commented `key:` is placed after its colon unless the mapping
        # ends there (the next token is left of the key), where it is at that token
        commented = (within == "map" and line < len(lines)
                     and lines[line][col:].lstrip(" ").startswith("#"))
        start = (line + 1, col + 1)
        if within != "map":
            after = ":" if within == "flow" else "-"
            ln, c = line, col
            while ln >= 0:
                text = lines[ln] if ln < len(lines) else ""
                c = min(c, len(text))
                while c > 0 and text[c - 1] in " \t":
                    c -= 1
                if c > 0:
                    return (ln + 1, c + 1) if text[c - 1] == after else start
                ln -= 1
                c = len(lines[ln]) if ln >= 0 else 0
            return start
        nxt = (len(lines), 1)
        while line < len(lines):
            text = lines[line]
            while col < len(text) and text[col] == " ":
                col += 1
            if col < len(text) and text[col] != "#":
                nxt = (line + 1, col + 1)
                break
            if line == len(lines) - 1:
                nxt = (line + 1, len(text) + 1)
                break
            line, col = line + 1, 0
        if commented and nxt[1] - 1 >= key_col:
            return start
        return nxt

    def mapping(self, node: MappingNode, path: YPath) -> dict[str, Any]:
        result: dict[str, Any] = {}
        first: dict[str, tuple[int, int]] = {}
        merges: list[Node] = []
        for knode, vnode in node.value:
            if _is_merge(knode):
                merges.append(vnode)
                continue
            if not isinstance(knode, ScalarNode):
                self.problems.append(YamlProblem(
                    _pos(self.file, knode), "a mapping key must be a plain scalar"))
                continue
            key = str(knode.value)
            kpos = _mark(knode)
            if key in first:
                f = first[key]
                self.problems.append(YamlProblem(
                    Position(self.file, *kpos), f"duplicate key '{key}' (first defined at line "
                                                f"{f[0]}, column {f[1]}); remove one of them"))
                continue
            first[key] = kpos
            self.out.keys[path + (key,)] = kpos
            result[key] = self.convert(vnode, path + (key,), "flow" if node.flow_style else "map",
                                       knode.start_mark.column)
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


def _syntax_problem(text: str, file: str, fast_error: yaml.YAMLError) -> YamlProblem:
    """The problem of a document libyaml refused, in the words of PyYAML's pure-Python parser
    (libyaml's own messages are terser: "did not find expected ..."); libyaml's if that parser
    happens to accept the document."""
    err: yaml.YAMLError = fast_error
    try:
        for _ in yaml.compose_all(text, Loader=yaml.SafeLoader):
            pass
    except yaml.YAMLError as e:
        err = e.with_traceback(None)  # a local: with its traceback, a cycle through this frame
    except RecursionError:
        return YamlProblem(Position(file, 1, 1), TOO_DEEP)
    if isinstance(err, yaml.MarkedYAMLError):
        mark = err.problem_mark or err.context_mark
        line = mark.line + 1 if mark else 1
        col = mark.column + 1 if mark else 1
        what = err.problem or "invalid YAML"
        if err.context and err.context_mark:
            cm = err.context_mark
            what += f" ({err.context} started at line {cm.line + 1}, column {cm.column + 1})"
        return YamlProblem(Position(file, line, col), f"YAML syntax error: {what}")
    if isinstance(err, yaml.reader.ReaderError):
        # A control character or invalid encoding: the reader knows the offset, not the line.
        before = text[:max(err.position, 0)]
        line = before.count("\n") + 1
        col = len(before) - (before.rfind("\n") + 1) + 1
        char = f"#x{err.character:04x}" if isinstance(err.character, int) else repr(err.character)
        return YamlProblem(Position(file, line, col), (
            f"YAML syntax error: unacceptable character {char}: {err.reason}; remove it"))
    return YamlProblem(Position(file, 1, 1), f"YAML error: {' '.join(str(err).split())}")


def read_yaml(text: str, file: str) -> Located:
    """Parse one YAML document into plain data with positions; raise YamlReadError on any problem."""
    docs: list[Node] = []
    parser = _Composer(text)
    try:
        while parser.check_node():
            node = parser.get_node()
            if node is not None:
                docs.append(node)
    except yaml.YAMLError as e:
        raise YamlReadError([_syntax_problem(text, file, e)]) from None
    finally:
        parser.dispose()
    if len(docs) != 1:
        raise YamlReadError([YamlProblem(
            Position(file, 1, 1),
            f"expected exactly one YAML document, found {len(docs)}; keep one Inventory per file")])
    conv = _Converter(file, text)
    root = docs[0]
    memo: dict[int, int] = {}
    try:
        too_big = conv.size(root, memo) > MAX_EXPANDED_NODES
    except RecursionError:  # libyaml allows 1,000 levels, Python fewer frames
        raise YamlReadError([YamlProblem(_pos(file, root), TOO_DEEP)]) from None
    if too_big:
        raise YamlReadError([YamlProblem(
            _pos(file, root),
            f"aliases expand to more than {MAX_EXPANDED_NODES} values (an alias bomb?); "
            "refusing to expand: write the values out or use fewer nested aliases")])
    try:
        conv.out.data = conv.convert(root, ())
    except _TooDeep as e:
        raise YamlReadError([YamlProblem(_pos(file, e.node), TOO_DEEP)]) from None
    conv.out.problems = conv.problems
    return conv.out

__all__ = ["MAX_DEPTH", "MAX_EXPANDED_NODES", "Located", "YPath", "YamlReadError", "read_yaml"]
