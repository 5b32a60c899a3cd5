"""Base manifests read in one pass (inventory/basefiles.py `_Builder`) against the reference path
(the guard walk, then PyYAML's SafeConstructor): the same documents, or the same one problem
at the same place, for every YAML file in fixtures/ and for random documents written to hit
what the one pass hands over (aliases, merge keys, tags, timestamps, duplicate and deep keys).
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.inventory import basefiles
from topogate.inventory.basefiles import parse_base_text

YAML_FILES = sorted(p for p in FIXTURES.rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to itself and types compared too (True is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)
    return bool(a == b)


def _read(text: str, f: Path, one_pass: bool) -> Any:
    try:
        return parse_base_text(text, f, one_pass)
    except Exception as e:  # noqa: BLE001 - `!!int x` escapes both ways: compared as such
        return repr(e)


def _difference(text: str, f: Path) -> str | None:
    """How the one-pass read differs from the reference read, or None when they agree."""
    fast, ref = _read(text, f, True), _read(text, f, False)
    if isinstance(ref, str) or isinstance(fast, str):
        return None if fast == ref else f"one pass: {fast!r}, reference: {ref!r}"
    if fast[1] != ref[1]:
        return f"problems differ: {fast[1]} vs {ref[1]}"
    return None if _same(fast[0], ref[0]) else f"documents differ: {fast[0]!r} vs {ref[0]!r}"


def test_every_fixture_yaml_reads_the_same(tmp_path: Path) -> None:
    assert len(YAML_FILES) > 100
    for p in YAML_FILES:
        try:
            text = p.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        assert _difference(text, p) is None, p


CASES = {
    "plain": "a: 1\nb: [x, 'y', 2.5, true, null, ~, 0x1f, 1_000]\nc: {d: e}\n",
    "documents": "a: 1\n---\n- b\n---\n\n---\nnull\n",
    "duplicate": "a: 1\nb:\n  c: 1\n  c: 2\n",
    "duplicate after a tag": "a: !!binary aGk=\nb: 1\nb: 2\n",
    "alias": "a: &x [1, 2]\nb: *x\nb: 3\n",
    "merge": "base: &b {x: 1}\nm:\n  <<: *b\n  y: 2\n",
    "merge without an alias": "m:\n  <<: {x: 1}\n  y: 2\n",
    "quoted merge": "m:\n  '<<': 1\n  '<<': 2\n",
    "value key": "=: 1\n",
    "timestamp": "a: 2024-01-02\nb: 2024-01-02T03:04:05Z\n",
    "custom tag": "a: !thing 1\n",
    "set": "a: !!set {x, y}\n",
    "omap": "a: !!omap [x: 1, y: 2]\n",
    "complex key": "? [a, b]\n: 1\n",
    "int keys": "1: a\n0x1: b\ntrue: c\n",
    "bad int": "a: !!int x\n",
    "bad float tag": "a: !!float x\nb: 1\nb: 2\n",
    "deep": "a:\n" + "".join("  " * i + "- \n" for i in range(1, 120)),
    "deep flow": "a: " + "[" * 150 + "]" * 150 + "\n",
    "deep after dup": "a: 1\na: 2\nb: " + "[" * 150 + "]" * 150 + "\n",
    "dup after deep": "b: " + "[" * 150 + "]" * 150 + "\na: 1\na: 2\n",
    "star in a string": "a: '*.example.com'\na: 2\n",
    "syntax": "a: [1, 2\n",
    "nan": "a: .nan\nb: -.inf\n",
}


@pytest.mark.parametrize("name", list(CASES))
def test_named_cases_read_the_same(name: str) -> None:
    assert _difference(CASES[name], Path("base.yaml")) is None


def test_wide_documents_hand_over_to_the_reference_path() -> None:
    n = basefiles.MAX_EXPANDED_NODES // 2 + 10
    text = "a: [" + ", ".join(["1"] * n) + "]\nb: [" + ", ".join(["1"] * n) + "]\n"
    assert _difference(text, Path("b.yaml")) is None


_WORDS = st.sampled_from(["a", "b", "c", "<<", "=", "1", "0x10", "true", "null", "~", "2024-01-02",
                          "1.5", ".nan", "'a'", "!!str 1", "!!int 1", "!!float 1", "!!binary aGk=",
                          "!x y", "*a", "&a a", "&a [1]", "[]", "{}", "''", "yes"])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(1, 12))):
        indent = "  " * draw(st.integers(0, 3))
        form = draw(st.sampled_from(["{k}: {v}", "- {v}", "{k}:", "- {k}: {v}", "---"]))
        lines.append(indent + form.format(k=draw(_WORDS), v=draw(_WORDS)))
    return "\n".join(lines) + "\n"


@settings(max_examples=400, deadline=None)
@given(_texts())
def test_random_documents_read_the_same(text: str) -> None:
    assert _difference(text, Path("base.yaml")) is None


_PARTS = st.sampled_from(["a", "b", "..", "x.yaml", "..x", "c d", "é", "."])


@settings(max_examples=300, derandomize=True, database=None, deadline=None)
@given(parts=st.lists(_PARTS, max_size=6), up=st.integers(0, 3), absolute=st.booleans())
def test_shown_is_relpath(parts: list[str], up: int, absolute: bool) -> None:
    # basefiles.shown answers below the working directory without os.path.relpath's work: the
    # same text, for paths below it, beside it, above it, with `..` and relative ones
    cwd = Path.cwd()
    start = cwd.parents[min(up, len(cwd.parents) - 1)] if up else cwd
    f = Path(start, *parts) if absolute else Path(*parts)
    assert basefiles.shown(f) == os.path.relpath(f)


def test_shown_outside_the_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    inner = tmp_path / "repo"
    inner.mkdir()
    monkeypatch.chdir(inner)
    for f in (tmp_path / "repox" / "a.yaml", tmp_path / "repo" / "a.yaml", tmp_path / "repo",
              tmp_path / "repo" / ".." / "repo" / "b.yaml", Path("/")):
        assert basefiles.shown(f) == os.path.relpath(f)
