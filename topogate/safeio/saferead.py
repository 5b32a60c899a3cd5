"""Reading files and YAML that come from pull requests: bounded, regular files only, guarded.

Every manifest, kustomization and kustomize input topogate reads goes through here:
- only regular files (a FIFO would block forever, /dev/zero never ends), opened without
  blocking and checked on the open descriptor, so a swap after the check changes nothing;
- at most TOPOGATE_MAX_FILE_MB (see topogate.safeio.limits), refused before reading past it;
- YAML is composed by libyaml and each document is checked before anything is constructed:
  aliases may not grow it by more than MAX_ALIAS_GROWTH values (a billion-laughs document of
  2 KB expands to billions), nesting past MAX_DEPTH levels is refused (later steps recurse), and
  a mapping may not repeat a key (kustomize and the inventory refuse that; PyYAML would keep
  the last value silently).
Problems are InputError: a position (file:line:column) and what to do.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.safeio import limits

_Base: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_CParser: Any = getattr(getattr(yaml, "cyaml", None), "CParser", None)


class _BadValue(yaml.constructor.ConstructorError):
    """A scalar whose resolved type cannot hold it (`0x_`, a 13th month): PyYAML raises a bare
    ValueError, which would escape as a traceback; this carries the scalar's place."""


# What a safe loader's resolver answers depends only on (kind, value, implicit): it has no path
# resolvers (asserted below) and its implicit resolvers are class-wide. One plain resolver
# answers for every Loader.
_RESOLVER = yaml.resolver.Resolver()


@functools.lru_cache(maxsize=1 << 14)
def _tag(kind: Any, value: Any, implicit: Any) -> str:
    return str(_RESOLVER.resolve(kind, value, implicit))


# lru_cache keeps every value it was asked about, short or long: emptied once the texts read
# since it was last emptied pass this size, so what it holds stays bounded by input just read.
_TAG_CACHE_TEXT = 64 << 20
_tag_cache_text = [0]


class TagMemoLoader(_Base):  # type: ignore[misc, valid-type]
    """libyaml's safe loader, with the same results for less Python work per node.

    The composer asks the (pure-Python) resolver for the tag of every scalar and collection:
    here that question goes to a C-level memo (functools.lru_cache) of the same resolver's
    answer, so a repeated key or label costs no Python frame at all.
    The path-resolver hooks it calls around every node are no-ops without path resolvers.
    Make one with `memo_loader`, which keeps the memo bounded."""

    resolve = staticmethod(_tag)

    # Path resolvers are the only use of these two hooks and a safe loader has none (checked
    # below): builtins taking the same arguments and doing nothing spare two Python calls a node.
    descend_resolver = staticmethod({}.get)  # type: ignore[var-annotated]
    ascend_resolver = staticmethod(tuple)


def memo_loader(text: str, cls: type[Any] = TagMemoLoader) -> Any:
    """A loader of `cls` for `text`, counting the text toward the memo's bound."""
    _tag_cache_text[0] += len(text)
    if _tag_cache_text[0] > _TAG_CACHE_TEXT:
        _tag.cache_clear()
        _tag_cache_text[0] = len(text)
    return cls(text)


class Loader(TagMemoLoader):
    """The memoised loader whose constructor reports a value its type cannot hold (`0x_`) as a
    marked error, for manifests."""

    def construct_object(self, node: Any, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (ValueError, OverflowError) as e:
            raise _BadValue(None, None, _bad_value(node, e), node.start_mark) from None


assert not _Base.yaml_path_resolvers  # else the two no-op hooks above would be wrong
# else _RESOLVER would not answer as the loader's own resolver does
assert _Base.yaml_implicit_resolvers is yaml.resolver.Resolver.yaml_implicit_resolvers


def _bad_value(node: Any, err: Exception) -> str:
    what = str(node.tag).rsplit(":", 1)[-1]
    shown = node.value if isinstance(node.value, str) else "the value"
    return (f"'{shown[:80]}' is read as {what} but is not a valid one ({err}); quote it if it "
            "is meant as text")

# What YAML 1.1 lets a stream hold; libyaml's "control characters are not allowed" names no line.
_NOT_PRINTABLE = re.compile("[^\t\n\r\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


_UNPRINTABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def one_line(text: str) -> str:
    """Text from the input, safe to print as part of one line: control characters, newlines
    included, are shown escaped (a key or file name must not start a new line, or a CI log
    command)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), text)


class InputError(Exception):
    """Input that cannot be read: reported with a position and exit code 2, on one line."""

    def __init__(self, pos: Position, message: str):
        pos = Position(one_line(pos.file), pos.line, pos.column)
        message = one_line(message)
        super().__init__(f"{pos}: {message}")
        self.pos = pos
        self.message = message

    def fresh(self) -> InputError:
        """A new exception saying what this one says, of its class (to raise one that is kept
        elsewhere without its traceback)."""
        return type(self)(self.pos, self.message)

    def lines(self) -> tuple[str, ...]:
        """What it says, a problem a line (each line safe as one line of a log)."""
        return (str(self),)


class InputErrors(InputError):
    """Several problems of one input, reported at once: the first is `pos` and `message`,
    str() gives every one, a line each."""

    def __init__(self, problems: Sequence[tuple[Position, str]]):
        first, *_ = problems
        super().__init__(*first)
        self.problems = tuple((Position(one_line(p.file), p.line, p.column), one_line(m))
                              for p, m in problems)
        self.args = ("\n".join(f"{p}: {m}" for p, m in self.problems),)

    def fresh(self) -> InputError:
        return InputErrors(self.problems)

    def lines(self) -> tuple[str, ...]:
        return tuple(f"{p}: {m}" for p, m in self.problems)


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)


def read_bytes(path: str | os.PathLike[str], display: str) -> bytes:
    """The bytes of a regular file no larger than the file limit. (A problem's place is made
    only when there is one: a tree's walk reads thousands of files.)"""
    try:
        cap = limits.max_file_bytes()
    except limits.LimitError as e:
        raise InputError(Position(display, 1, 1), f"not read: {e}") from None
    try:
        fd = os.open(path, _READ_FLAGS)
    except OSError as e:
        raise InputError(Position(display, 1, 1), f"cannot read: {e.strerror or e}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(Position(display, 1, 1), (
                f"is {_kind(st.st_mode)}, not a regular file; topogate reads only regular files "
                "(remove it, or the symlink that points to it)"))
        if st.st_size > cap:
            raise _too_large(Position(display, 1, 1), cap)
        chunks: list[bytes] = []
        got = 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
            if got > cap:  # grew while we read it
                raise _too_large(Position(display, 1, 1), cap)
        return b"".join(chunks)
    except OSError as e:
        raise InputError(Position(display, 1, 1), f"cannot read: {e.strerror or e}") from None
    finally:
        os.close(fd)


def _too_large(where: Position, cap: int) -> InputError:
    return InputError(where, (
        f"larger than {cap // limits.MiB} MB, the file limit; split it, or raise "
        "TOPOGATE_MAX_FILE_MB if it is really meant to be this large"))


def decode(data: bytes, display: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        col = e.start - (data.rfind(b"\n", 0, e.start) + 1) + 1
        raise InputError(Position(display, line, col), "not UTF-8 text; save the file as UTF-8") from None


def read_text(path: str | os.PathLike[str], display: str) -> str:
    return decode(read_bytes(path, display), display)


def _offset_position(text: str, offset: int, display: str) -> Position:
    line = text.count("\n", 0, offset) + 1
    return Position(display, line, offset - (text.rfind("\n", 0, offset) + 1) + 1)


def _mark_position(display: str, mark: Any) -> Position:
    return Position(display, mark.line + 1, mark.column + 1)


_Scalar, _Mapping, _Sequence = yaml.ScalarNode, yaml.MappingNode, yaml.SequenceNode


def _plainly_fine(root: Any) -> bool:
    """True when a document without aliases has no duplicate key and no nesting near the limit.

    The common case, answered with one cheap pass over the collections; anything else (False)
    goes to check_node, which finds the exact problem and place. Only for text without `*`:
    with no alias no node is shared, so nothing needs remembering."""
    if type(root) is _Scalar:
        return True
    stack: list[tuple[Any, int]] = [(root, 1)]
    pop, push = stack.pop, stack.append
    for_limit = limits.MAX_DEPTH - 1
    while stack:
        node, depth = pop()
        if depth >= for_limit:
            return False
        depth += 1
        if type(node) is _Mapping:
            keys: set[str] = set()
            for k, v in node.value:
                if type(k) is _Scalar:
                    kv = k.value
                    if kv in keys:
                        return False  # (`<<` twice included: check_node decides)
                    keys.add(kv)
                else:
                    push((k, depth))
                if type(v) is not _Scalar:
                    push((v, depth))
        elif type(node) is _Sequence:
            for item in node.value:
                if type(item) is not _Scalar:
                    push((item, depth))
        else:
            return False  # a node type of its own: let check_node look at it
    return True


def check_node(root: Any, display: str) -> None:
    """Refuse a composed document that is an alias bomb, nested too deeply, or repeats a key.

    One pass over the nodes as written (iterative: depth is what is being checked), then a
    count of values after alias expansion, memoised per node so a bomb costs what it weighs."""
    written = 0
    aliased = False
    seen: set[int] = set()
    stack: list[tuple[Any, int]] = [(root, 1)]
    while stack:
        node, depth = stack.pop()
        if id(node) in seen:
            aliased = True
            continue  # an alias: its node was (or will be) checked where it is anchored
        seen.add(id(node))
        written += 1
        if depth > limits.MAX_DEPTH:
            raise InputError(_mark_position(display, node.start_mark), (
                f"nested more than {limits.MAX_DEPTH} levels deep; no Kubernetes object needs "
                "that: flatten it"))
        if isinstance(node, yaml.MappingNode):
            first: dict[str, Any] = {}
            for k, v in node.value:
                if isinstance(k, yaml.ScalarNode) and k.value != "<<":
                    if k.value in first:
                        f = first[k.value]
                        raise InputError(_mark_position(display, k.start_mark), (
                            f"duplicate key '{k.value}' (first at line {f.line + 1}, column "
                            f"{f.column + 1}); kubectl and kustomize refuse it: remove one"))
                    first[k.value] = k.start_mark
                stack.append((k, depth + 1))
                stack.append((v, depth + 1))
        elif isinstance(node, yaml.SequenceNode):
            stack.extend((item, depth + 1) for item in node.value)
    cycle = _cycle(root) if aliased else None
    if cycle is not None:
        raise InputError(_mark_position(display, cycle.start_mark), (
            "this anchor is aliased from inside itself (a recursive alias); Kubernetes objects "
            "are trees: remove the alias"))
    if aliased and _expanded(root, written + limits.MAX_ALIAS_GROWTH) > written + limits.MAX_ALIAS_GROWTH:
        raise InputError(_mark_position(display, root.start_mark), (
            f"aliases expand this document by more than {limits.MAX_ALIAS_GROWTH} values "
            "(an alias bomb?); refusing to expand it: write the values out"))


def _children(node: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [x for kv in node.value for x in kv]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _cycle(root: Any) -> Any | None:
    """A node reached again from inside itself (libyaml composes an alias within its own
    anchor into a cycle, which would make the object infinite), or None."""
    state: dict[int, bool] = {}  # id -> True while on the current path, False once done
    stack: list[tuple[Any, Iterator[Any]]] = [(root, iter(_children(root)))]
    state[id(root)] = True
    while stack:
        node, todo = stack[-1]
        child = next(todo, None)
        if child is None:
            state[id(node)] = False
            stack.pop()
        elif state.get(id(child)) is True:
            return child
        elif id(child) not in state:
            state[id(child)] = True
            stack.append((child, iter(_children(child))))
    return None


def _expanded(root: Any, stop: int) -> int:
    """Values after alias expansion, counted bottom-up once per node; stops early past `stop`."""
    size: dict[int, int] = {}
    order: list[Any] = []
    stack = [root]
    while stack:  # post-order without recursion
        node = stack.pop()
        if id(node) in size:
            continue
        size[id(node)] = -1
        order.append(node)
        if isinstance(node, yaml.MappingNode):
            stack.extend(x for kv in node.value for x in kv if id(x) not in size)
        elif isinstance(node, yaml.SequenceNode):
            stack.extend(x for x in node.value if id(x) not in size)
    for node in reversed(order):  # children come after their parent in `order`
        n = 1
        if isinstance(node, yaml.MappingNode):
            n += sum(size[id(k)] + size[id(v)] for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            n += sum(size[id(x)] for x in node.value)
        size[id(node)] = min(n, stop + 1)
    return size[id(root)]


class _Unusual(Exception):
    """A node _construct leaves to PyYAML's constructor (a tag, key or shape it does not do)."""


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# Scalar tags built by calling PyYAML's own function for them directly (no aliases: no memo).
_SCALARS = ("tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
            "tag:yaml.org,2002:float")


def _construct(loader: Any, root: Any, strings: dict[str, str] | None = None) -> Any:
    """What loader.construct_document(root) returns, for a document without aliases.

    `strings` holds one copy of each string met (shared by the documents of one stream): the
    keys and most values of a build's manifests repeat thousands of times, and `check` keeps
    every object to the end.

    PyYAML's constructor costs a few Python calls and a generator per node; Kubernetes
    manifests hold only strings, numbers, booleans, nulls, maps and lists, which are built
    here in one call a node. Anything else (merge keys, `=` keys, timestamps, binary, sets,
    custom tags, non-scalar keys, a value its type cannot hold) is left to PyYAML for the
    whole document, so the result, and any error, are PyYAML's."""
    try:
        return _build(root, loader, {tag: loader.yaml_constructors[tag] for tag in _SCALARS},
                      {} if strings is None else strings)
    except (_Unusual, ValueError, OverflowError, RecursionError):
        return loader.construct_document(root)


def _build(node: Any, loader: Any, scalar: dict[str, Any], strings: dict[str, str]) -> Any:
    # A module function, not a closure: a recursive closure is a reference cycle, and check
    # runs with the cyclic collector off, so each document would keep its loader alive.
    t = type(node)
    tag = node.tag
    if t is _Scalar:
        if tag == _STR:
            v = node.value
            return strings.setdefault(v, v)
        f = scalar.get(tag)
        if f is None:
            raise _Unusual
        return f(loader, node)
    if t is _Mapping and tag == _MAP:
        out: dict[Any, Any] = {}
        for k, v in node.value:
            if type(k) is not _Scalar or (k.tag != _STR and k.tag not in scalar):
                raise _Unusual  # merge `<<`, `=`, a mapping or list as a key...
            out[_build(k, loader, scalar, strings)] = _build(v, loader, scalar, strings)
        return out
    if t is _Sequence and tag == _SEQ:
        return [_build(item, loader, scalar, strings) for item in node.value]
    raise _Unusual


def documents(text: str, display: str, construct: bool = True,
              guard: bool = True) -> Iterator[tuple[int, Any, Any]]:
    """(index, composed node, constructed value or None) for every non-empty document, each
    checked before it is constructed. Syntax problems are InputError with the parser's position."""
    loader = memo_loader(text, Loader)
    plain = "*" not in text  # no alias anywhere: no node is shared, cheaper paths are exact
    strings: dict[str, str] = {}
    doc = -1
    try:
        with _as_input_error(text, display):
            while loader.check_node():
                node = loader.get_node()
                doc += 1
                if node is None:
                    continue
                if guard and not (plain and _plainly_fine(node)):  # off only for kustomize's output
                    check_node(node, display)
                if not construct:
                    yield doc, node, None
                else:
                    yield doc, node, _construct(loader, node, strings) if plain else loader.construct_document(node)
    finally:
        loader.dispose()


@contextlib.contextmanager
def _as_input_error(text: str, display: str) -> Iterator[None]:
    """What libyaml and PyYAML raise while reading `text`, as InputError at its place (the one
    translation `documents` and `nodes` share)."""
    try:
        yield
    except _BadValue as e:
        where = _mark_position(display, e.problem_mark) if e.problem_mark else Position(display, 1, 1)
        raise InputError(where, str(e.problem)) from None
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = _mark_position(display, mark) if mark else Position(display, 1, 1)
        raise InputError(where, f"YAML syntax error: {e.problem or e}") from None
    except yaml.reader.ReaderError:
        bad = _NOT_PRINTABLE.search(text)
        where = _offset_position(text, bad.start(), display) if bad else Position(display, 1, 1)
        what = f"U+{ord(bad.group()):04X}" if bad else "a character"
        raise InputError(where, f"{what} is not allowed in YAML; remove it or quote it escaped") from None
    except yaml.YAMLError as e:
        raise InputError(Position(display, 1, 1), f"YAML error: {e}") from None
    except RecursionError:
        raise InputError(Position(display, 1, 1), (
            "nested too deeply to read; no Kubernetes object needs that: flatten it")) from None


if _CParser is not None:
    class _Composer(_CParser):  # type: ignore[misc]
        """libyaml's parser and composer alone, with TagMemoLoader's resolver (the same nodes):
        what `nodes` needs, without a constructor set up for each file."""

        resolve = staticmethod(_tag)
        descend_resolver = staticmethod({}.get)  # type: ignore[var-annotated]
        ascend_resolver = staticmethod(tuple)
else:  # pragma: no cover - PyYAML without libyaml
    _Composer = TagMemoLoader  # type: ignore[misc, assignment]


def nodes(text: str, display: str) -> list[Any]:
    """The composed node of every non-empty document, each checked (`check_node`): what
    `documents(text, display, construct=False)` yields, as a list, for less work a file."""
    composer = memo_loader(text, _Composer)
    plain = "*" not in text
    out: list[Any] = []
    try:
        with _as_input_error(text, display):
            while composer.check_node():
                node = composer.get_node()
                if node is None:
                    continue
                if not (plain and _plainly_fine(node)):
                    check_node(node, display)
                out.append(node)
    finally:
        composer.dispose()
    return out


def load_all(path: str | os.PathLike[str], display: str) -> list[Any]:
    """Every document of a YAML file, read and checked as above (None for empty documents is
    dropped)."""
    return [value for _, _, value in documents(read_text(path, display), display)]


# The mark of a file `topogate generate` wrote (topogate.generators.base.header).
GENERATED_MARKER = b"generated by topogate from "
_HEAD = 4096  # the header is on the first line; JSON files carry it in their first field


def is_generated(path: str | os.PathLike[str]) -> bool:
    """Whether a regular file (never a symlink) carries the generated-by-topogate header."""
    try:
        # O_NONBLOCK: a FIFO planted in OUT must not hang the run; it is not ours anyway.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return False
    with os.fdopen(fd, "rb") as fh:
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return False
            head = fh.read(_HEAD)
        except OSError:
            return False
    first = head.split(b"\n", 1)[0]
    if first.startswith(b"# ") and GENERATED_MARKER in first:
        return True
    # JSON has no comments: the generator puts the header text in a field near the top.
    return os.fspath(path).endswith(".json") and GENERATED_MARKER in head


def is_regular(p: Path) -> bool:
    try:
        return stat.S_ISREG(p.stat().st_mode)
    except OSError:
        return False

__all__ = ["InputError", "InputErrors", "Loader", "check_node", "decode", "documents", "is_generated",
           "is_regular", "load_all", "memo_loader", "nodes", "one_line", "read_bytes", "read_text"]
