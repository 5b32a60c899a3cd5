"""The direct YAML writer (generators/yamlout.py) against libyaml's dump it replaces.

Every generated file of every example inventory, random documents over an alphabet chosen
to hit YAML's corner cases (indicators, quotes, numbers in strings, booleans, breaks, unicode,
long strings and keys), and the corner cases by name: the bytes must be libyaml's in all.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.generators import render_files, yamlout
from topogate.sources.inventory import load_inventory

INVENTORIES = sorted(p for p in FIXTURES.rglob("inventory.yaml") if "bad" not in p.parts)


def _direct(docs: Any) -> str | None:
    """The direct writer's own output, None where it hands over to libyaml."""
    try:
        return yamlout._direct(docs)
    except yamlout._Unsupported:
        return None


@pytest.mark.parametrize("inv", INVENTORIES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_every_generated_file_is_libyamls_bytes(inv: Path, tmp_path: Path) -> None:
    model = load_inventory(str(inv))  # every fixture inventory outside bad/ loads: if one stops, say so
    direct = 0
    for f in render_files(model, str(tmp_path / "out")):
        if f.text is not None:
            continue
        assert yamlout.dump(f.docs) == yamlout.libyaml_dump(f.docs), f.path
        if _direct(f.docs) is not None:
            direct += 1
    assert direct > 0, "the direct writer wrote none of the files: the comparison proved nothing"


CORNERS = [
    "", " ", "a ", " a", "a  b", "a: b", "a:", ":a", "a:b", "1:20", "-", "-a", "- a", "a -b",
    ".", "..", "...", "...x", "../x", ".5", ".inf", ".NaN", "~", "null", "Null", "NULL", "true",
    "True", "yes", "No", "on", "OFF", "y", "n", "=", "<<", "0", "007", "0x1F", "0o7", "1_000",
    "1e3", "1.0", "-1", "+1", "2001-12-14", "2001-12-14t21:59:43.10-05:00", "a #b", "a#b", "#a",
    "@a", "a@b", "`a", "'a", "a'b", "\"a", "a\"b", "a\tb", "\ta", "a\nb", "a\n", "\n", "a\rb",
    "a\x85b", "a\u2028b", "é", "日本", "a\u00a0b", "\ufeffa", "a\x00b", "a\x7fb", "%a", "!a", "&a",
    "*a", "|", ">", "?", "? a", "a?", "[a]", "a[b]", "{a}", "a,b", ",a", "a, b", "(a)", "a=b",
    "/spec/x", "k8s:io.kubernetes.pod.namespace", "x" * 1500, "a " * 700, "k" * 128, "k" * 129,
]


def _docs() -> list[Any]:
    return [
        {"plain": CORNERS, "keys": {c: c for c in CORNERS if c}},
        [[1, -2, 0, 10**30], [], {}, [[]], [{}], [{"a": [{"b": []}]}]],
        {"f": [1.5, -0.0, 1e20, float("inf"), float("nan"), 3.0], "b": [True, False, None]},
        {"deep": [[[[{"x": {"y": [["z"]]}}]]]]},
    ]


@pytest.mark.parametrize("n", [0, 1, 2, 4])
def test_corner_cases_are_libyamls_bytes(n: int) -> None:
    docs = _docs()[:n]
    assert yamlout.dump(docs) == yamlout.libyaml_dump(docs)
    for d in _docs()[:n]:
        assert yamlout.dump([d]) == yamlout.libyaml_dump([d])


def test_each_corner_string_as_value_and_key() -> None:
    for c in CORNERS:
        for doc in ({"k": c}, [c], {c: 1}, {c: {c: [c]}}):
            assert yamlout.dump([doc]) == yamlout.libyaml_dump([doc]), repr(c)


def test_the_common_shapes_are_written_directly() -> None:
    # Else the speed-up is gone without a test failing on bytes.
    doc = {"apiVersion": "v1", "metadata": {"name": "job-0", "labels": {"k8s:a.b/c": "x"}},
           "spec": {"ports": [{"port": "23456", "protocol": "TCP"}], "n": 3, "on": True,
                    "description": "topogate: a job, its pods and nothing else"}}
    assert _direct([doc, doc]) == yamlout.libyaml_dump([doc, doc])


def test_other_types_are_libyamls_business() -> None:
    # A set or bytes libyaml writes with a tag, a tuple or an object it refuses: the same here.
    class Str(str):
        pass

    for odd in ({"a": (1, 2)}, {"a": {1, 2}}, {"a": b"x"}, {"a": Str("x")}, {(1, 2): 1}, "x", 3):
        try:
            want: object = yamlout.libyaml_dump([odd])
        except Exception as e:  # noqa: BLE001 - the exception is what is compared
            want = type(e)
        try:
            got: object = yamlout.dump([odd])
        except Exception as e:  # noqa: BLE001
            got = type(e)
        assert got == want, odd


# Mostly characters the direct writer takes, some it hands over: both paths get exercised.
_ALPHABET = st.sampled_from(list(" -:.#'\"?,[]{}@&*!|>%`=~<+_/()\t\\0123456789aeflnorsuxyTNé"))
_TEXT = st.one_of(st.text(_ALPHABET, max_size=12), st.text(_ALPHABET, max_size=12),
                  st.sampled_from(CORNERS[:-4]))
_QUIET_KEY = st.text(st.sampled_from(list("abkz019_./:- ()'")), max_size=10)
_KEY = st.one_of(_QUIET_KEY, _QUIET_KEY, _QUIET_KEY, _TEXT)
_SCALAR = st.one_of(_TEXT, st.integers(), st.booleans(), st.none(),
                    st.floats(allow_nan=False, width=32))
_VALUES = st.recursive(
    _SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=4),
                            st.dictionaries(_KEY, inner, max_size=4)),
    max_leaves=24,
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.lists(_VALUES, max_size=4), st.dictionaries(_KEY, _VALUES)), max_size=3))
def test_random_documents_are_libyamls_bytes(docs: list[Any]) -> None:
    assert yamlout.dump(docs) == yamlout.libyaml_dump(docs)
