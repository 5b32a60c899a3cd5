"""The quick schema verdict (inventory/quickschema.py) against jsonschema itself.

The loader skips jsonschema when the quick check says True, so True must never be said of an
inventory jsonschema faults, and False (which is trusted inside `not`) never of one it passes.
Compared on every fixture inventory, good and bad, and on random mutations of the multi
example: a value replaced by one of the wrong type or shape, a key added or removed.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path
from typing import Any

import jsonschema
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.inventory.quickschema import compile_schema
from topogate.inventory.schema import inventory_schema
from topogate.inventory.yamlpos import YamlReadError, read_yaml

QUICK = compile_schema(inventory_schema())
FULL = jsonschema.Draft202012Validator(inventory_schema())


def _data(path: Path) -> Any:
    return read_yaml(path.read_text(encoding="utf-8"), str(path)).data


def _judged(data: Any) -> tuple[bool | None, str | None]:
    """(the quick check's verdict, how it contradicts jsonschema or None when it does not)."""
    verdict = QUICK(data)
    errors = list(FULL.iter_errors(data))
    if verdict is True and errors:
        return verdict, f"quick check passed what jsonschema faults: {errors[0].message}"
    if verdict is False and not errors:
        return verdict, "quick check faulted what jsonschema passes"
    return verdict, None


def _inventories() -> list[Path]:
    found = []
    for p in sorted(FIXTURES.rglob("*.yaml")):
        try:
            text = p.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if "kind: Inventory" in text:
            found.append(p)
    return found


INVENTORIES = _inventories()


def test_fixture_inventories_get_the_same_verdict() -> None:
    verdicts = []
    for p in INVENTORIES:
        try:
            data = _data(p)
        except YamlReadError:
            continue
        verdict, contradiction = _judged(data)
        assert contradiction is None, f"{p}: {contradiction}"
        verdicts.append(verdict)
    # the good ones are passed without jsonschema, the bad ones fall through to it
    assert verdicts.count(True) >= 5 and verdicts.count(False) >= 5, verdicts


MULTI = _data(FIXTURES / "multi" / "inventory.yaml")


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


PATHS = _paths(MULTI)[1:]
ODD = [None, True, False, 0, -1, 1, 65535, 65536, 1.0, 1.5, -0.5, math.nan, math.inf, "", "x",
       "X", "-a", "a-", "kustomization", "Deny", "pin", "follow", "aws", "PyTorchJob", "a" * 64,
       "a" * 63, "..", "a/../b", "ok.example.com/key", "a b", [], ["x"], ["Deny", "Deny"], {},
       {"name": "x"}, {"a": 1}, "1.16", "NoSchedule", "TCP", 23456]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(PATHS), st.sampled_from(["set", "del", "add"]),
                          st.sampled_from(ODD)), min_size=1, max_size=3))
def test_mutated_inventories_get_the_same_verdict(edits: list[tuple[Any, str, Any]]) -> None:
    data = copy.deepcopy(MULTI)
    for path, how, odd in edits:
        parent: Any = data
        try:
            for step in path[:-1]:
                parent = parent[step]
            last = path[-1]
            if how == "set":
                parent[last] = copy.deepcopy(odd)
            elif how == "del":
                del parent[last]
            elif isinstance(parent[last], dict):
                parent[last]["extra" if not isinstance(odd, str) or not odd else odd] = odd
            elif isinstance(parent[last], list):
                parent[last].append(copy.deepcopy(odd))
        except (KeyError, IndexError, TypeError):
            continue
    assert _judged(data)[1] is None


def test_odd_values_at_every_place() -> None:
    # two odd values per place, taking turns through the list (every value at every place
    # is 10,000 jsonschema runs: too slow for the suite, and the random test mixes them)
    for i, path in enumerate(PATHS):
        for value in (ODD[i % len(ODD)], ODD[(i * 7 + 3) % len(ODD)]):
            data = copy.deepcopy(MULTI)
            parent: Any = data
            for step in path[:-1]:
                parent = parent[step]
            parent[path[-1]] = copy.deepcopy(value)
            contradiction = _judged(data)[1]
            assert contradiction is None, (path, value, contradiction)


def test_values_json_has_no_type_for_are_jsonschemas_business() -> None:
    import datetime

    data = copy.deepcopy(MULTI)
    data["metadata"]["name"] = datetime.date(2024, 1, 1)
    assert QUICK(data) is None
    data = copy.deepcopy(MULTI)
    data["metadata"] = {(1, 2): "x", **data["metadata"]}
    assert QUICK(data) is None
