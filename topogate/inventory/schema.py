"""The inventory's JSON Schema (the same file editors use), and its errors said in the inventory's
words: one problem per unknown key, missing field or wrong value, at that value's position."""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources
from typing import Any

from topogate.core.position import Position
from topogate.inventory.problems import Problem
from topogate.inventory.quickschema import Check, compile_schema
from topogate.inventory.yamlpos import Located, YPath


@lru_cache(maxsize=1)
def inventory_schema() -> dict[str, Any]:
    text = resources.files("topogate.schemas").joinpath("inventory.schema.json").read_text()
    schema: dict[str, Any] = json.loads(text)
    return schema


@lru_cache(maxsize=1)
def _quick() -> Check:
    return compile_schema(inventory_schema())


def describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 200 else f"of {value.bit_length()} bits"
        return f"integer {text}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string '{value if len(value) <= 60 else value[:57] + '...'}'"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


_TYPE_WORDS = {"integer": "an integer", "number": "a number", "string": "a string",
               "object": "a mapping", "array": "a list", "boolean": "true or false"}


def _named_key(loc: Located, err: Any, path: YPath) -> Position | None:
    """A propertyNames error is about one key of the mapping at path: its place is that key's
    (where an editor puts it too), not the mapping's."""
    key = err.instance
    if "propertyNames" in err.schema_path and isinstance(key, str) and path + (key,) in loc.keys:
        return loc.key_at(path + (key,))
    return None


def schema_problems(loc: Located, bad_paths: set[YPath]) -> list[Problem]:
    if _quick()(loc.data) is True:
        return []  # certain to pass: jsonschema would say nothing (quickschema.py)
    import jsonschema  # lazy: slow to import; only an inventory with a problem to word needs it

    validator = jsonschema.Draft202012Validator(inventory_schema())
    out: list[Problem] = []
    for err in validator.iter_errors(loc.data):
        path: YPath = tuple(err.absolute_path)
        bad_paths.add(path)
        here = _named_key(loc, err, path) or loc.at(path)
        where = "/".join(str(p) for p in path) or "the document"
        v = err.validator
        if v == "additionalProperties":
            allowed = sorted(err.schema.get("properties", {}))
            for key in sorted(set(err.instance) - set(allowed)):
                out.append(Problem(loc.key_at(path + (key,)),
                                   f"unknown key '{key}' in {where}; allowed keys: {', '.join(allowed)}"))
        elif v == "required":
            missing = [k for k in err.validator_value if k not in err.instance]
            # A mapping that is a key's value is reported at that key, where the editor's schema
            # check (yaml-language-server) reports it: one place in the editor and in CI.
            at_key = loc.key_at(path) if path and isinstance(path[-1], str) else here
            for key in missing:
                out.append(Problem(at_key, f"missing required field '{key}' in {where}"))
        elif v == "type":
            want = err.validator_value
            words = " or ".join(str(_TYPE_WORDS.get(t, t)) for t in (want if isinstance(want, list) else [want]))
            out.append(Problem(here, f"{where} must be {words}, not {describe(err.instance)}"))
        elif v == "pattern" and err.validator_value == inventory_schema()["$defs"]["dnsLabel"]["pattern"]:
            out.append(Problem(here, (
                f"{where}: {describe(err.instance)} is not a DNS-1123 label (lowercase letters, "
                "digits and '-', 1-63 characters, starting and ending with a letter or digit); it "
                "becomes a path in the generated tree")))
        elif v in ("enum", "const"):
            allowed_vals = err.validator_value if v == "enum" else [err.validator_value]
            out.append(Problem(here, (
                f"{where}: {describe(err.instance)} is not allowed; use one of: "
                + ", ".join(str(a) for a in allowed_vals))))
        elif v in ("not", "pattern") and err.schema.get("description"):
            out.append(Problem(here, (
                f"{where}: {describe(err.instance)} is not allowed: {err.schema['description']}")))
        elif v == "minItems":
            out.append(Problem(here, f"{where} must list at least {err.validator_value} item(s)"))
        elif v in ("minimum", "maximum") and isinstance(err.instance, float) and err.instance != err.instance:
            out.append(Problem(here, f"{where} must be a number, not NaN"))
        elif v in ("minimum", "maximum"):
            word = "at least" if v == "minimum" else "at most"
            out.append(Problem(here, f"{where} must be {word} {err.validator_value}, not {err.instance}"))
        else:
            out.append(Problem(here, f"{where}: {err.message}"))
    return out
