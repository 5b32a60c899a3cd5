"""The fast paths of saferead.documents give exactly what PyYAML and the full guard give.

`documents` skips work in the common case (a cheap guard pass, a one-call-a-node constructor,
a memoised resolver) and hands anything unusual to the slow, exact path. This compares it with
that slow path written out plainly (CSafeLoader, check_node on every document, PyYAML's own
constructor) on hand-picked edge cases, every YAML fixture of the repository and mutated
manifests: the same values (types included), the same errors at the same places.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from fuzz_support import mutant
from hypothesis import HealthCheck, given, settings

from topogate.safeio import saferead
from topogate.safeio.saferead import InputError, check_node, documents

ROOT = Path(__file__).resolve().parents[2]


def _reference(text: str, display: str) -> list[tuple[int, Any]]:
    """documents() as it was before the fast paths: compose, check every node, construct."""
    loader = yaml.CSafeLoader(text)
    out: list[tuple[int, Any]] = []
    doc = -1
    try:
        while loader.check_node():
            node = loader.get_node()
            doc += 1
            if node is None:
                continue
            check_node(node, display)
            out.append((doc, loader.construct_document(node)))
    finally:
        loader.dispose()
    return out


def _typed(value: Any) -> Any:
    """A value with the type of every part spelled out (1 == 1.0 == True otherwise)."""
    if isinstance(value, dict):
        return ("dict", [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [_typed(v) for v in value])
    if isinstance(value, float) and value != value:
        return ("float", "nan")
    return (type(value).__name__, value)


def _fast(text: str) -> tuple[str, Any]:
    try:
        return "ok", [(i, _typed(v)) for i, _, v in documents(text, "f.yaml")]
    except InputError as e:
        return "error", str(e)


def _slow(text: str) -> tuple[str, Any] | None:
    """The reference outcome; None where PyYAML itself crashes (checked separately)."""
    try:
        return "ok", [(i, _typed(v)) for i, v in _reference(text, "f.yaml")]
    except InputError as e:
        return "error", str(e)
    except yaml.YAMLError:
        try:  # the reference's own wording of parser errors is documents()'s
            list(documents(text, "f.yaml"))
        except InputError as e:
            return "error", str(e)
        raise
    except (ValueError, OverflowError):
        return None


def _difference(text: str) -> str | None:
    """How documents() differs from the reference on this text, or None when they agree."""
    want = _slow(text)
    got = _fast(text)
    if want is None:  # PyYAML raised a bare ValueError: now an error with a place
        ok = got[0] == "error" and "quote it if it is meant as text" in got[1]
        return None if ok else f"expected a one-line error for a value PyYAML cannot build, got {got}"
    return None if got == want else f"documents() gave {got}, the reference {want}"


EDGES = [
    "a: 1\nb: [1, 2.5, true, null, ~, x, 0x1F, 0o17, 1_000, 1:30, .inf, -.nan, 2020-01-01]\n",
    "a: 2001-12-14t21:59:43.10-05:00\nb: !!binary aGVsbG8=\nc: !!set {x, y}\nd: !!omap [a: 1]\n",
    "base: &b {x: 1, y: 2}\nuse: {<<: *b, y: 3}\n",
    "a: &x [1, 2]\nb: *x\nc: *x\n",
    "= : 1\n",
    "<<: {a: 1}\n<<: {b: 2}\n",
    "? [1, 2]\n: x\n",
    "? {a: 1}\n: x\n",
    "1: a\n1.0: b\ntrue: c\n",
    "a: 1\na: 2\n",
    "a: {b: 1, b: 2}\nc: {d: 1, d: 2}\n",
    "a: !!int x\n",
    "a: !!str 1\nb: !!float 1\nc: !!null ''\n",
    "a: !custom x\n",
    "a: 0x_\n",
    "a: 2024-13-45\n",
    "- 1\n- [2, [3, [4]]]\n---\n---\nx\n--- !!map\na: b\n",
    "&a x\n",
    "text with * star: 1\n",
    "a: '*'\nb: 1\nb: 2\n",
    "[" * 99 + "]" * 99,
    "[" * 100 + "]" * 100,
    "[" * 101 + "]" * 101,
    "- " * 98 + "x\n",
    "- " * 99 + "x\n",
    "- " * 100 + "x\n",
    "{a: [" * 49 + "1" + "]}" * 49,
    "{a: [" * 50 + "1" + "]}" * 50,
    "a: [" + ", ".join(f"&a{i} [*a{i - 1}, *a{i - 1}]" if i else "&a0 [x]" for i in range(20)) + "]\n",
    "a: [" + ", ".join(f"&a{i} [*a{i - 1}, *a{i - 1}]" if i else "&a0 [x]" for i in range(16)) + "]\n",
]


@pytest.mark.parametrize("text", EDGES, ids=range(len(EDGES)))
def test_edge_cases(text: str) -> None:
    assert _difference(text) is None


def _fixture_yaml() -> list[Path]:
    return sorted(p for p in (ROOT / "fixtures").rglob("*") if p.suffix in (".yaml", ".yml") and p.is_file())


def test_every_fixture_reads_the_same() -> None:
    files = _fixture_yaml()
    assert len(files) > 100
    for f in files:
        text = f.read_text(encoding="utf-8", errors="surrogatepass")
        diff = _difference(text)
        assert diff is None, f"{f}: {diff}"


@settings(max_examples=60, derandomize=True, deadline=None, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(text=mutant("manifest"))
def test_mutated_manifests_read_the_same(text: str) -> None:
    assert _difference(text) is None


def test_resolver_memo_is_bounded_and_exact(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"k{i}: {v}\n" for i, v in enumerate(["1", "1.5", "yes", "null", "x"] * 30_000)]
    for t in texts[:200]:
        assert _fast(t) == _slow(t)
    monkeypatch.setattr(saferead, "_TAG_CACHE_TEXT", 1 << 20)
    big = "".join(f"k{i}: v{i}\n" for i in range(120_000))  # 1.6 MB of distinct values
    list(documents(big, "big.yaml"))
    list(documents("a: b\n", "small.yaml"))  # past the size: the memo is emptied first
    assert saferead._tag.cache_info().currsize <= 3  # the mapping, `a` and `b`


# Values spanning every first character the implicit resolvers key on, and none.
_VALUES = ["", "~", "null", "Null", "NULL", "nul", "y", "Y", "yes", "no", "n", "on", "Off", "true",
           "True", "tRue", "false", "1", "-1", "+1", "0x1F", "0o17", "0b11", "1_000", "1:30",
           "1.5", "-.inf", ".NaN", ".nan", ".", "2020-01-01", "2001-12-14t21:59:43.10-05:00",
           "<<", "<", "=", "==", "!", "&", "*", "x", "job-1", "k8s:app", "0.0.0.0/0", "-", "+",
           "é", "1e3", "1.0e+3", "6.8523015e+5", "685.230_15e+03", "190:20:30.15", "0755"]


@pytest.mark.parametrize("value", _VALUES)
def test_memoised_resolver_answers_as_pyyaml(value: str) -> None:
    # The C-level memo in front of the resolver must give PyYAML's own resolver's tag for
    # every kind and implicit flag the composer passes, asked twice (miss, then hit).
    plain = yaml.resolver.Resolver()
    for _ in range(2):
        for implicit in ((True, False), (False, True), (False, False), (True, True)):
            want = plain.resolve(yaml.ScalarNode, value, implicit)
            assert saferead.Loader.resolve(yaml.ScalarNode, value, implicit) == want
        for kind in (yaml.SequenceNode, yaml.MappingNode):
            for flag in (True, False):
                assert saferead.Loader.resolve(kind, None, flag) == plain.resolve(kind, None, flag)


def _shape(node: Any) -> Any:
    """A composed node written out: kind, tag, value, style and place of every node."""
    where = (node.start_mark.index, node.end_mark.index)
    if isinstance(node, yaml.ScalarNode):
        return ("scalar", node.tag, node.value, node.style, where)
    if isinstance(node, yaml.MappingNode):
        return ("map", node.tag, node.flow_style, where, [(_shape(k), _shape(v)) for k, v in node.value])
    return ("seq", node.tag, node.flow_style, where, [_shape(x) for x in node.value])


def _composed_reference(text: str) -> tuple[str, Any]:
    """The nodes of PyYAML's own safe loader, each checked, or the error documents() gives."""
    loader = yaml.CSafeLoader(text)
    out: list[Any] = []
    try:
        while loader.check_node():
            node = loader.get_node()
            if node is not None:
                check_node(node, "f.yaml")
                out.append(_shape(node))
    except InputError as e:
        return "error", str(e)
    except yaml.YAMLError:
        try:
            list(documents(text, "f.yaml", construct=False))
        except InputError as e:
            return "error", str(e)
        raise
    finally:
        loader.dispose()
    return "ok", out


def _composed(text: str) -> tuple[str, Any]:
    try:
        return "ok", [_shape(n) for n in saferead.nodes(text, "f.yaml")]
    except InputError as e:
        return "error", str(e)


def test_nodes_compose_as_the_safe_loader() -> None:
    # `nodes` (the safety walk's reader: libyaml's composer without a constructor) gives the
    # nodes, tags and places of PyYAML's safe loader and the guard's errors, on the edge cases
    # above (aliases, bombs, depth, duplicate keys, tags) and every fixture of the repository.
    texts = [*EDGES, "a: b\n\x07", "a: [b\n", "", "---\n...\n"]
    texts += [f.read_text(encoding="utf-8", errors="surrogatepass") for f in _fixture_yaml()]
    outcomes = {"ok": 0, "error": 0}
    for text in texts:
        got = _composed(text)
        assert got == _composed_reference(text), text[:200]
        outcomes[got[0]] += 1
    assert outcomes["ok"] > 100 and outcomes["error"] > 5
    # no constructor is set up for each file read (the point of `nodes`)
    assert not issubclass(saferead._Composer, yaml.constructor.BaseConstructor)
