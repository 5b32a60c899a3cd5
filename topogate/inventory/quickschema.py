"""A quick answer to "does this inventory pass its JSON Schema?", so a clean one skips jsonschema.

Importing jsonschema (with attrs, referencing and rpds) and walking the inventory with it was a
third of a small `generate`'s start-up and a tenth of its reading. Most inventories pass, and
then all jsonschema adds is that word. This module compiles the schema once into small checks
that answer True (passes), False (fails) or None (not sure), each keyword exactly as jsonschema
4's Draft 2020-12 validator decides it. Only True is acted on: the loader then knows there is
no schema problem to report. False and None run jsonschema as before, which finds the problems
and words them, so every message and position comes from the same place as always.

Known keywords only: a schema using any other (`format`, `oneOf`, `if`...) compiles to "not
sure", as does a value of a type JSON does not have. tests/inventory/test_quickschema.py compares the
verdict with jsonschema's on every fixture inventory and on random mutations of them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

Verdict = bool | None
Check = Callable[[Any], Verdict]

_ANNOTATIONS = {"description", "default", "title", "$schema", "$id", "$defs", "$comment",
                "examples", "deprecated", "readOnly", "writeOnly"}
_JSON_TYPES = (dict, list, str, int, float, bool, type(None))


def _combine(verdicts: Iterable[Verdict]) -> Verdict:
    """False as soon as one verdict is False for sure, else None if one is unsure, else True."""
    unsure = False
    for v in verdicts:
        if v is False:
            return False
        if v is None:
            unsure = True
    return None if unsure else True


def _all(checks: list[Check], value: Any) -> Verdict:
    """Every check passes for the value."""
    return _combine(c(value) for c in checks)


def _each(check: Check, values: Any) -> Verdict:
    """`check` passes for every value (same answer as `_all`, one check many values)."""
    return _combine(check(x) for x in values)


def _is_type(name: str, v: Any) -> Verdict:
    t = type(v)
    if name == "object":
        return t is dict
    if name == "array":
        return t is list
    if name == "string":
        return t is str
    if name == "boolean":
        return t is bool
    if name == "null":
        return v is None
    if name == "integer":
        return t is int or (t is float and v.is_integer())
    if name == "number":
        return t is int or t is float
    return None


def _equal_to_one_of(allowed: list[Any], v: Any) -> Verdict:
    # jsonschema's `equal`: a string equals only an equal string; other values it compares
    # with care for bool-versus-int, which is left to it.
    if type(v) is str:
        return v in [a for a in allowed if type(a) is str]
    if all(type(a) is str for a in allowed):
        return False
    return None


class _Compiler:
    def __init__(self, root: dict[str, Any]):
        self.root = root
        self.refs: dict[str, Check] = {}

    def ref(self, ref: str) -> Check:
        if ref not in self.refs:
            if not ref.startswith("#/$defs/") or "/" in ref[len("#/$defs/"):]:
                return lambda v: None
            target = self.root.get("$defs", {}).get(ref[len("#/$defs/"):])
            if not isinstance(target, dict):
                return lambda v: None
            slot: list[Check] = []
            self.refs[ref] = lambda v: slot[0](v)  # a reference may lead back to itself
            slot.append(self.compile(target))
        return self.refs[ref]

    def compile(self, schema: Any) -> Check:  # noqa: C901 - one branch per keyword
        if schema is True:
            return lambda v: True
        if schema is False:
            return lambda v: False
        if not isinstance(schema, dict) or set(schema) - _ANNOTATIONS - set(_KEYWORDS):
            return lambda v: None
        checks: list[Check] = []
        for key, arg in schema.items():
            if key in _KEYWORDS:
                checks.append(_KEYWORDS[key](self, arg, schema))
        return lambda v: _all(checks, v)


def _type(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    names = arg if isinstance(arg, list) else [arg]

    def check(v: Any) -> Verdict:
        verdicts = [_is_type(str(n), v) for n in names]
        return True if True in verdicts else (None if None in verdicts else False)
    return check


def _properties(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    subs = {k: c.compile(s) for k, s in arg.items()}

    def check(v: Any) -> Verdict:
        if type(v) is not dict:
            return True
        unsure = False
        for k, sub in subs.items():
            if k in v:
                r = sub(v[k])
                if r is False:
                    return False
                if r is None:
                    unsure = True
        return None if unsure else True
    return check


def _additional(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    if "patternProperties" in schema:
        return lambda v: None
    known = set(schema.get("properties", {}))
    sub = c.compile(arg)

    def check(v: Any) -> Verdict:
        if type(v) is not dict:
            return True
        return _each(sub, [x for k, x in v.items() if k not in known])
    return check


def _required(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: type(v) is not dict or all(k in v for k in arg)


def _items(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    if "prefixItems" in schema or not isinstance(arg, dict | bool):
        return lambda v: None
    sub = c.compile(arg)
    return lambda v: True if type(v) is not list else _each(sub, v)


def _pattern(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    regex = re.compile(arg)  # jsonschema calls re.search(pattern, instance): the same search
    return lambda v: type(v) is not str or regex.search(v) is not None


def _min_length(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: type(v) is not str or len(v) >= arg


def _max_length(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: type(v) is not str or len(v) <= arg


def _min_items(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: type(v) is not list or len(v) >= arg


def _min_properties(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: type(v) is not dict or len(v) >= arg


def _enum(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: _equal_to_one_of(list(arg), v)


def _const(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: _equal_to_one_of([arg], v)


def _number(v: Any) -> bool:
    return type(v) is int or type(v) is float


def _minimum(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: not _number(v) or not v < arg  # not `>=`: NaN passes, as in jsonschema


def _maximum(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return lambda v: not _number(v) or not v > arg


def _all_of(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    subs = [c.compile(s) for s in arg]
    return lambda v: _all(subs, v)


def _not(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    sub = c.compile(arg)

    def check(v: Any) -> Verdict:
        inner = sub(v)
        return None if inner is None else not inner
    return check


def _ref(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    return c.ref(str(arg))


def _property_names(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    sub = c.compile(arg)
    return lambda v: True if type(v) is not dict else _each(sub, v)


def _unique(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    def check(v: Any) -> Verdict:
        if arg is not True or type(v) is not list:
            return None if arg is not True and arg is not False else True
        if all(type(x) is str for x in v):
            return len(set(v)) == len(v)
        return None
    return check


_KEYWORDS: dict[str, Callable[[_Compiler, Any, dict[str, Any]], Check]] = {
    "type": _type, "properties": _properties, "additionalProperties": _additional,
    "required": _required, "items": _items, "pattern": _pattern, "minLength": _min_length,
    "maxLength": _max_length, "minItems": _min_items, "minProperties": _min_properties,
    "enum": _enum, "const": _const, "minimum": _minimum, "maximum": _maximum, "allOf": _all_of,
    "not": _not, "$ref": _ref, "propertyNames": _property_names, "uniqueItems": _unique,
}


def _plain(value: Any, depth: int = 0) -> bool:
    """Only JSON's types (the YAML reader makes no others; anything else is jsonschema's)."""
    if depth > 200 or not isinstance(value, _JSON_TYPES):
        return False
    if type(value) is dict:
        return all(_plain(k, depth + 1) and _plain(v, depth + 1) for k, v in value.items())
    if type(value) is list:
        return all(_plain(x, depth + 1) for x in value)
    return type(value) in _JSON_TYPES


def compile_schema(schema: dict[str, Any]) -> Check:
    """A check answering True only when jsonschema would find no error in the value."""
    check = _Compiler(schema).compile(schema)
    return lambda v: check(v) if _plain(v) else None
