"""Flux's post-build variable substitution (github.com/fluxcd/pkg/envsubst v1.8, the one
kustomize-controller runs over each built object), as a parser and an evaluator.

The syntax is bash's `${...}` parameter expansion, with Flux's own edges, all of which
`tests/oracles/test_flux_oracle.py` holds against the Go package:

- `${var}`; `${var:-word}`, `${var:=word}`, `${var=word}`, `${var:?word}`, `${var:+word}` all
  mean "the value, or word when the value is empty" (no assignment, no error, no alternative:
  each is the same default); `${var-word}` is a syntax error, not a default;
- `${#var}` (length in bytes), `${var:offset}` and `${var:offset:length}`, `${var^}`, `${var^^}`,
  `${var,}`, `${var,,}`, `${var/a/b}`, `${var//a/b}`, `${var/#a/b}`, `${var/%a/b}`, and the
  trims `${var#p}`, `${var##p}`, `${var%p}`, `${var%%p}` with a glob `p` in which `/` is no
  separator;
- `$$` writes one `$` and keeps what follows from being read as a variable; a `$` not before
  `{` is text; inside a replacement's words `\\/` and `\\\\` escape;
- a word may hold another `${...}`, evaluated whether or not it is used;
- strict mode (kustomize-controller's default since v1.9): a variable that is not set is an
  error where it is read without a default operator; without strict mode it is empty.

Only text is parsed here; which variables exist is the caller's (topogate.gitops.flux).
Variable names in a reference are any Unicode letters, digits and `_`; the names a Flux
Kustomization defines must match VAR_NAME.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from topogate.gitops.envglob import BadPattern, glob_match
from topogate.safeio import limits

# kustomize-controller refuses a defined variable whose name does not match this
# (fluxcd/pkg/kustomize varsubRegex; [:alpha:] and [:digit:] are ASCII there).
VAR_NAME = re.compile(r"^[_A-Za-z][_A-Za-z0-9]*\Z")

# The operators that supply their own value for an unset variable (no strict-mode error).
DEFAULT_OPS = frozenset({"-", "+", "=", "?", ":-", ":+", ":=", ":?"})


class SubstError(Exception):
    """The text cannot be substituted as Flux would: its message says why, in Flux's words
    where Flux has them ("bad substitution", "variable not set (strict mode)")."""


class TooMuch(SubstError):
    """Past what topogate evaluates from a pull request (nesting, output size, a trim's work):
    the text is not substituted here, and the render says so instead of guessing."""


# `${...}` nested deeper than this, a result longer than the file limit, or a trim over a value
# longer than TRIM_MAX (its cost grows with the square of the length) is TooMuch.
MAX_NESTING = 64
TRIM_MAX = 4096


class Unset(SubstError):
    """Strict mode read a variable that is not set."""

    def __init__(self, name: str):
        super().__init__(f'variable not set (strict mode): "{name}"')
        self.name = name


@dataclass
class Text:
    value: str


@dataclass
class Func:
    param: str
    op: str = ""  # "" for ${var}
    args: list[Node] = field(default_factory=list)


Node = Text | Func | list  # a list: a sequence of nodes


# Scanner modes and escape classes.
_IDENT, _LBRACK, _RBRACK, _ESCAPE = 1, 2, 4, 8
_DOLLAR, _BACKSLASH = 1, 2
_EOF, _ILLEGAL, _TOKEN_IDENT, _TOKEN_LBRACK, _TOKEN_RBRACK = range(5)
_END = ""  # what reading past the end gives


Accept = Callable[[str, int], bool]


def _any(r: str, i: int) -> bool:
    return True


def _ident_char(r: str, i: int) -> bool:
    # Go's unicode.IsLetter / IsDigit: Unicode letters and decimal digits
    return r == "_" or r.isalpha() or (r.isdecimal())


class _Scanner:
    """A cursor over the text, read one character at a time; the token read last is
    text[start:pos]. Escapes delete their first character from the text itself, so the token
    keeps the second."""

    def __init__(self, text: str):
        self.buf = text
        self.pos = 0
        self.start = 0
        self.width = 0
        self.mode = 0
        self.escapes = 0
        self.accept: Accept = _any

    def read(self) -> str:
        if self.pos >= len(self.buf):
            self.width = 0
            return _END
        r = self.buf[self.pos]
        self.width = 1
        self.pos += 1
        return r

    def unread(self) -> None:
        self.pos -= self.width

    def peek(self) -> str:
        r = self.read()
        self.unread()
        return r

    def drop_last(self) -> None:
        """Delete the character just read from the text, leaving the cursor where it was."""
        self.buf = self.buf[:self.pos - 1] + self.buf[self.pos:]

    def token(self) -> str:
        return self.buf[self.start:self.pos]

    def scan(self) -> int:
        self.start = self.pos
        r = self.read()
        if r == _END:
            return _EOF
        if self._lbrack(r):
            return _TOKEN_LBRACK
        if self.mode & _RBRACK and r == "}":
            return _TOKEN_RBRACK
        if self._ident(r):
            return _TOKEN_IDENT
        return _ILLEGAL

    def _lbrack(self, r: str) -> bool:
        if not self.mode & _LBRACK or r != "$":
            return False
        if self.read() == "{":
            return True
        self.unread()
        return False

    def _escaped(self, r: str) -> bool:
        if not self.mode & _ESCAPE:
            return False
        if r == "$" and self.escapes & _DOLLAR and self.peek() == "$":
            return True
        return r == "\\" and bool(self.escapes & _BACKSLASH) and self.peek() in ("/", "\\")

    def _ident(self, r: str) -> bool:
        if not self.mode & _IDENT:
            return False
        if self._escaped(r):
            self.drop_last()
        elif not self.accept(r, self.pos - self.start):
            return False
        while True:
            r = self.read()
            if r == _END:
                self.unread()
                return True
            if self._lbrack(r):
                self.unread()
                self.pos -= 1  # back before the `$` as well
                return True
            if self._escaped(r):
                self.drop_last()
                continue
            if not self.accept(r, self.pos - self.start):
                self.unread()
                return True


class _Parser:
    def __init__(self, text: str):
        self.s = _Scanner(text)
        self.depth = 0

    def any(self) -> Node:
        """Text and expansions up to the end."""
        out: list[Node] = []
        while True:
            s = self.s
            s.accept, s.mode, s.escapes = _any, _IDENT | _LBRACK | _ESCAPE, _DOLLAR
            tok = s.scan()
            if tok == _EOF:
                return out
            if tok == _TOKEN_IDENT:
                out.append(Text(s.token()))
            elif tok == _TOKEN_LBRACK:
                out.append(self.func())
            else:
                raise SubstError("bad substitution")

    def func(self) -> Func:
        self.depth += 1
        if self.depth > MAX_NESTING:
            raise TooMuch(f"`${{...}}` nested more than {MAX_NESTING} deep")
        try:
            return self._func()
        finally:
            self.depth -= 1

    def _func(self) -> Func:
        s = self.s
        s.escapes = _DOLLAR | _BACKSLASH
        if s.peek() == "#":
            return self.length()
        s.accept, s.mode = _ident_char, _IDENT
        if s.scan() != _TOKEN_IDENT:
            raise SubstError("unable to parse variable name")
        name = s.token()
        nxt = s.peek()
        if nxt == ":":
            s.read()
            after = s.peek()
            s.unread()
            return self.default(name) if after in ("=", "-", "?", "+") else self.substr(name)
        if nxt == "=":
            return self.default(name)
        if nxt in (",", "^"):
            return self.casing(name)
        if nxt == "/":
            return self.replace(name)
        if nxt == "#":
            return self.remove(name, "#")
        if nxt == "%":
            return self.remove(name, "%")
        s.accept, s.mode = _ident_char, _RBRACK
        if s.scan() != _TOKEN_RBRACK:
            raise SubstError("missing closing brace")
        return Func(name)

    def _op(self, accept: Accept) -> str:
        s = self.s
        s.accept, s.mode = accept, _IDENT
        if s.scan() != _TOKEN_IDENT:
            raise SubstError("bad substitution")
        return s.token()

    def param(self, accept: Accept, mode: int) -> Node:
        s = self.s
        s.accept, s.mode = accept, mode | _LBRACK
        tok = s.scan()
        if tok == _TOKEN_LBRACK:
            return self.func()
        if tok in (_TOKEN_IDENT, _TOKEN_RBRACK):
            return Text(s.token())
        raise SubstError("unable to parse substitution within function")

    def close(self) -> None:
        self.s.mode = _RBRACK
        if self.s.scan() != _TOKEN_RBRACK:
            raise SubstError("bad substitution")

    def length(self) -> Func:
        op = self._op(lambda r, i: r == "#" and i == 1)
        self.s.accept, self.s.mode = _ident_char, _IDENT
        if self.s.scan() != _TOKEN_IDENT:
            raise SubstError("bad substitution")
        node = Func(self.s.token(), op)
        self.close()
        return node

    def default(self, name: str) -> Func:
        s = self.s
        if s.peek() == "=":
            accept: Accept = lambda r, i: i == 1 and r == "="  # noqa: E731
        else:
            accept = lambda r, i: (i == 1 and r == ":") or (i == 2 and r in "=-?+")  # noqa: E731
        s.accept, s.mode = accept, _IDENT
        if s.scan() != _TOKEN_IDENT:
            raise SubstError("unable to parse default function")
        node = Func(name, s.token())
        while True:
            if s.peek() == "}":
                self.close()
                return node
            node.args.append(self.param(lambda r, i: r != "}", _IDENT))

    def substr(self, name: str) -> Func:
        node = Func(name, self._op(lambda r, i: i == 1 and r == ":"))
        node.args.append(self.param(lambda r, i: r not in (":", "}"), _IDENT))
        s = self.s
        s.accept, s.mode = (lambda r, i: r == ":"), _IDENT | _RBRACK
        tok = s.scan()
        if tok == _TOKEN_RBRACK:
            return node
        if tok != _TOKEN_IDENT:
            raise SubstError("bad substitution")
        node.args.append(self.param(lambda r, i: r != "}", _IDENT))
        self.close()
        return node

    def remove(self, name: str, char: str) -> Func:
        node = Func(name, self._op(lambda r, i: r == char and i < 3))
        node.args.append(self.param(lambda r, i: r != "}", _IDENT))
        self.close()
        return node

    def replace(self, name: str) -> Func:
        node = Func(name, self._op(lambda r, i: (i == 1 and r == "/") or (i == 2 and r in "/#%")))
        node.args.append(self.param(lambda r, i: r != "/", _IDENT | _ESCAPE))
        self._op(lambda r, i: r == "/")  # the delimiter
        if self.s.peek() == "}":
            self.close()
            return node
        node.args.append(self.param(lambda r, i: r != "}", _IDENT | _ESCAPE))
        self.close()
        return node

    def casing(self, name: str) -> Func:
        node = Func(name, self._op(lambda r, i: r in (",", "^") and i < 3))
        self.close()
        return node


def parse(text: str) -> list[Node]:
    """The text as text nodes and expansions; SubstError when Flux could not parse it."""
    node = _Parser(text).any()
    assert isinstance(node, list)
    return node


Lookup = Callable[[str], "tuple[str, bool]"]


def evaluate(nodes: list[Node] | Node, lookup: Lookup, budget: int | None = None) -> str:
    """The text with every expansion made; `lookup(name)` is (value, set). TooMuch when the
    result, or a word of it, would pass `budget` characters (default: the file size limit)."""
    left = [limits.max_file_bytes() if budget is None else budget]
    return _eval(nodes, lookup, left)


def _eval(nodes: list[Node] | Node, lookup: Lookup, left: list[int]) -> str:
    if isinstance(nodes, Text):
        out = nodes.value
    elif isinstance(nodes, Func):
        out = _func(nodes, lookup, left)
    else:
        out = "".join(_eval(n, lookup, left) for n in nodes)
    left[0] -= len(out)
    if left[0] < 0:
        raise TooMuch("the substituted text is over the file size limit")
    return out


def _func(node: Func, lookup: Lookup, left: list[int]) -> str:
    args = [_eval(a, lookup, left) for a in node.args]  # every word, used or not
    value, present = lookup(node.param)
    if not present and node.op not in DEFAULT_OPS:
        raise Unset(node.param)
    return _FUNCS.get((node.op, bool(args)), _FUNCS.get((node.op, None), _default))(value, args)


def _default(s: str, args: list[str]) -> str:
    return "".join(args) if not s and args else s


def _first(f: Callable[[str], str]) -> Callable[[str, list[str]], str]:
    return lambda s, args: f(s[0]) + s[1:] if s else s


def _substr(s: str, args: list[str]) -> str:
    b = s.encode("utf-8", "surrogateescape")
    pos = _atoi(args[0])
    if pos is None:
        return s
    if pos < 0:
        pos = max(0, len(b) + pos)
    if len(args) == 1:
        return _text(b[pos:]) if pos < len(b) else ""
    length = _atoi(args[1])
    if length is None:
        return s
    if length < 0:
        end = len(b) + length
        return "" if end < pos else _text(b[pos:end])
    if pos + length >= len(b):
        return _text(b[pos:]) if pos < len(b) else ""
    return _text(b[pos:pos + length])


def _text(b: bytes) -> str:
    return b.decode("utf-8", "surrogateescape")


_ATOI = re.compile(r"[+-]?[0-9]+\Z")


def _atoi(s: str) -> int | None:
    """Go's strconv.Atoi: an optional sign and decimal digits, nothing else, within int64."""
    if not _ATOI.match(s):
        return None
    v = int(s)
    return v if -(1 << 63) <= v < (1 << 63) else None


def _replace(count: int) -> Callable[[str, list[str]], str]:
    def f(s: str, args: list[str]) -> str:
        if not args:
            return s
        new = args[1] if len(args) > 1 else ""
        return s.replace(args[0], new, count) if count > 0 else s.replace(args[0], new)
    return f


def _replace_prefix(s: str, args: list[str]) -> str:
    if len(args) == 2 and s.startswith(args[0]):
        return s.replace(args[0], args[1], 1)
    return s


def _replace_suffix(s: str, args: list[str]) -> str:
    if len(args) == 2 and s.endswith(args[0]):
        return s[:len(s) - len(args[0])] + args[1]
    return s


def _trim(longest: bool, suffix: bool) -> Callable[[str, list[str]], str]:
    def f(s: str, args: list[str]) -> str:
        if not args:
            return s
        if len(s) > TRIM_MAX:
            raise TooMuch(f"a trim over a value of {len(s)} characters (topogate evaluates up to {TRIM_MAX})")
        if suffix:
            return _trim_prefix(s[::-1], args[0][::-1], longest)[::-1]
        return _trim_prefix(s, args[0], longest)
    return f


def _trim_prefix(s: str, pattern: str, longest: bool) -> str:
    shortest = ""
    for i in range(len(s)):
        head = s[:len(s) - i]
        try:
            hit = glob_match(pattern, head)
        except BadPattern:
            return s
        if hit:
            if longest:
                return s[len(head):]
            shortest = head
    return s[len(shortest):] if shortest else s


_FUNCS: Mapping[tuple[str, bool | None], Callable[[str, list[str]], str]] = {
    (",", None): _first(str.lower), (",,", None): lambda s, a: s.lower(),
    ("^", None): _first(str.upper), ("^^", None): lambda s, a: s.upper(),
    ("#", False): lambda s, a: str(len(s.encode("utf-8", "surrogateescape"))),
    ("#", True): _trim(False, False), ("##", None): _trim(True, False),
    ("%", None): _trim(False, True), ("%%", None): _trim(True, True),
    (":", None): lambda s, a: _substr(s, a) if a else s,
    ("/#", None): _replace_prefix, ("/%", None): _replace_suffix,
    ("/", None): _replace(1), ("//", None): _replace(0),
}


def references(nodes: list[Node] | Node) -> list[Func]:
    """Every expansion in the nodes, outermost first (those inside words too)."""
    out: list[Func] = []
    stack: list[Node] = [nodes]
    while stack:
        n = stack.pop()
        if isinstance(n, Func):
            out.append(n)
            stack.extend(reversed(n.args))
        elif isinstance(n, list):
            stack.extend(reversed(n))
    return out


def substitute(text: str, values: Mapping[str, str], strict: bool) -> str:
    """`text` as Flux substitutes it with `values` (SubstError, Unset when Flux fails)."""
    def lookup(name: str) -> tuple[str, bool]:
        if strict:
            return (values[name], True) if name in values else ("", False)
        return values.get(name, ""), True

    return evaluate(parse(text), lookup)


__all__ = ["DEFAULT_OPS", "VAR_NAME", "SubstError", "Text", "TooMuch", "Unset", "evaluate",
           "parse", "references", "substitute"]
