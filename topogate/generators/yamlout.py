"""Block YAML for the generated tree, written directly: the same bytes as libyaml's dump, faster.

`yaml.dump_all` with CSafeDumper spends most of its time outside C: the Python representer
builds a node per value and asks the Python resolver about every scalar twice. The generated
documents are plain data (dicts with string keys, lists, strings, integers, booleans, null),
so this module writes them itself, in libyaml's block layout (indent 2, sequences inside a
mapping not indented, `{}`/`[]` for empty collections, `---` between documents).

Only what is certain is written here; everything else goes to libyaml:
- a string made of "quiet" characters (letters, digits and `_./:, ()=+@-`, no leading or
  trailing space) is written plain, or in single quotes when YAML would read the plain form
  as something else (`'23456'`, `'true'`, `'a: b'`); PyYAML's own resolver decides that;
- any other single-line scalar or key (a float, an empty string, a string with a quote, a tab
  or a non-ASCII letter) takes libyaml's form for it, asked once per distinct string;
- anything else (a multi-line or very long string, a key libyaml writes as a complex key,
  a type SafeDumper does not know, a document that is not a collection) sends the whole
  document list to libyaml, so the output is libyaml's in every case.

tests/generators/test_yamlout.py compares the two on every golden file and on random documents.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import yaml

_Base: type = getattr(yaml, "CSafeDumper", yaml.SafeDumper)  # libyaml: same bytes, faster


class Dumper(_Base):  # type: ignore[misc,valid-type]
    """Never anchors and aliases: a generator that reuses one dict in two places must still
    write plain YAML that every reader (and every human) takes as it is."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def libyaml_dump(docs: tuple[Any, ...] | list[Any]) -> str:
    """The reference: what the generated tree has always been written with."""
    return yaml.dump_all(
        list(docs), Dumper=Dumper, sort_keys=False, default_flow_style=False,
        explicit_start=len(docs) > 1, width=4096, allow_unicode=True,
    )


class _Unsupported(Exception):
    """A value this writer does not reproduce exactly: libyaml writes the whole dump."""


_QUIET = re.compile(r"(?:[A-Za-z0-9_/]|\.(?!\.\.))[A-Za-z0-9_./:, ()=+@-]*\Z")
_BREAKS = re.compile("[\n\r\x85\u2028\u2029]")
_RESOLVERS = yaml.resolver.Resolver.yaml_implicit_resolvers
_STR = "tag:yaml.org,2002:str"
_MAX_SCALAR = 1000  # far below the width (4096): no line of ours can wrap
_MAX_KEY = 128  # libyaml writes a longer key as a complex key (`? key`)
_MAX_INDENT = 1000

_values: dict[str, str] = {}
_keys: dict[str, str] = {}


def _resolves_to_str(s: str) -> bool:
    """Whether YAML reads the plain scalar `s` back as a string (PyYAML's resolver, as the
    dumper asks it)."""
    for tag, regexp in _RESOLVERS.get(s[0] if s else "", []) + _RESOLVERS.get(None, []):
        if regexp.match(s):
            return bool(tag == _STR)
    return True


def _quiet(s: str) -> str | None:
    """The plain or single-quoted form of a quiet string, else None."""
    if not _QUIET.match(s) or s[-1] == " ":
        return None
    if ": " in s or s[-1] == ":":
        return f"'{s}'"  # `: ` (or a final `:`) would start a mapping: quoted, as libyaml does
    return s if _resolves_to_str(s) else f"'{s}'"


def _libyaml_scalar(value: Any) -> str:
    """libyaml's form of one scalar as a block sequence item, when it is one line (and so
    the same as a mapping value's)."""
    if isinstance(value, str) and (_BREAKS.search(value) or len(value) > _MAX_SCALAR):
        raise _Unsupported
    text = libyaml_dump([[value]])
    if not text.startswith("- ") or text.count("\n") != 1 or len(text) > _MAX_SCALAR + 10:
        raise _Unsupported
    return text[2:-1]


def _value(v: Any) -> str:
    t = type(v)
    if t is str:
        form = _values.get(v)
        return form if form is not None else _remember(_values, v, _MAX_SCALAR, _libyaml_scalar)
    if t is int:
        return str(v)
    if t is bool:
        return "true" if v else "false"
    if v is None:
        return "null"
    if t is float:
        return _libyaml_scalar(v)
    raise _Unsupported


def _libyaml_key(k: Any) -> str:
    """libyaml's form of one mapping key, when it is a simple key on one line."""
    if isinstance(k, str) and (_BREAKS.search(k) or len(k) > _MAX_KEY):
        raise _Unsupported
    text = libyaml_dump([{k: None}])
    if not text.endswith(": null\n") or text.count("\n") != 1 or text.startswith("? "):
        raise _Unsupported
    return text[:-len(": null\n")]


def _key(k: Any) -> str:
    if type(k) is not str:
        return _libyaml_key(k)  # not cached: True, 1 and 1.0 are one dict key
    form = _keys.get(k)
    return form if form is not None else _remember(_keys, k, _MAX_KEY, _libyaml_key)


def _remember(cache: dict[str, str], s: str, longest: int, slow: Callable[[str], str]) -> str:
    """The written form of a string (quiet when it can be, else libyaml's), kept in `cache`
    (bounded: a hostile tree of distinct strings must not grow it without end)."""
    form = _quiet(s) if len(s) <= longest else None
    if form is None:
        form = slow(s)
    if len(cache) > 200_000:
        cache.clear()
    cache[s] = form
    return form


def _mapping(d: dict[Any, Any], indent: int, lead: str, out: list[str]) -> None:
    """A non-empty mapping at `indent`; its first line starts with `lead` (the pad, or a
    `- ` of the sequence holding it)."""
    if indent > _MAX_INDENT:
        raise _Unsupported
    pad = " " * indent
    for k, v in d.items():
        t = type(v)
        if t is dict:
            if v:
                out.append(f"{lead}{_key(k)}:\n")
                _mapping(v, indent + 2, " " * (indent + 2), out)
            else:
                out.append(f"{lead}{_key(k)}: {{}}\n")
        elif t is list:
            if v:
                out.append(f"{lead}{_key(k)}:\n")
                _sequence(v, indent, pad, out)  # libyaml does not indent a mapping's sequence
            else:
                out.append(f"{lead}{_key(k)}: []\n")
        else:
            out.append(f"{lead}{_key(k)}: {_value(v)}\n")
        lead = pad


def _sequence(items: list[Any], indent: int, lead: str, out: list[str]) -> None:
    """A non-empty sequence whose dashes are at `indent`; the first line starts with `lead`."""
    if indent > _MAX_INDENT:
        raise _Unsupported
    pad = " " * indent
    for v in items:
        t = type(v)
        if t is dict:
            if v:
                _mapping(v, indent + 2, f"{lead}- ", out)
            else:
                out.append(f"{lead}- {{}}\n")
        elif t is list:
            if v:
                _sequence(v, indent + 2, f"{lead}- ", out)
            else:
                out.append(f"{lead}- []\n")
        else:
            out.append(f"{lead}- {_value(v)}\n")
        lead = pad


def _direct(docs: tuple[Any, ...] | list[Any]) -> str:
    out: list[str] = []
    several = len(docs) > 1
    for d in docs:
        t = type(d)
        if t is not dict and t is not list:
            raise _Unsupported
        if not d:
            out.append(("--- " if several else "") + ("{}\n" if t is dict else "[]\n"))
            continue
        if several:
            out.append("---\n")
        if t is dict:
            _mapping(d, 0, "", out)
        else:
            _sequence(d, 0, "", out)
    return "".join(out)


def dump(docs: tuple[Any, ...] | list[Any]) -> str:
    """The documents as block YAML, byte for byte what `libyaml_dump` writes."""
    try:
        return _direct(docs)
    except (_Unsupported, RecursionError):
        return libyaml_dump(docs)
