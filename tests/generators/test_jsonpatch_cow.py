"""PatchBuilder copies the user's document on write: the same ops and the same result as a builder
that copies all of it first, and the user's document untouched, over random documents and ops."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.generators.jsonpatch import _MISSING, PatchBuilder, Path, _get, _nest, pointer


class _CopyFirst:
    """The builder as it was before copy-on-write: a deep copy of the document up front, and
    a copy of every value an op adds."""

    def __init__(self, doc: dict[str, Any]):
        self.doc = copy.deepcopy(doc)
        self.ops: list[dict[str, Any]] = []

    def get(self, path: Path) -> Any:
        v = _get(self.doc, path)
        return None if v is _MISSING else v

    def _add(self, path: Path, value: Any) -> None:
        i = len(path)
        while i > 0 and not isinstance(_get(self.doc, path[: i - 1]), (dict, list)):
            i -= 1
        if i == 0:
            raise ValueError(f"no parent of {pointer(path)} exists in the document")
        at, value = path[:i], _nest(path[i:], value)
        parent = _get(self.doc, at[:-1])
        last = at[-1]
        if isinstance(parent, list):
            if last == "-":
                parent.append(copy.deepcopy(value))
            elif isinstance(last, int):
                parent.insert(last, copy.deepcopy(value))
            else:
                raise ValueError(f"{pointer(at)} indexes a list with a key")
        else:
            parent[last] = copy.deepcopy(value)
        self.ops.append({"op": "add", "path": pointer(at), "value": value})

    def replace(self, path: Path, value: Any) -> None:
        parent = _get(self.doc, path[:-1])
        if (isinstance(parent, list) and isinstance(path[-1], int)) or isinstance(parent, dict):
            parent[path[-1]] = copy.deepcopy(value)
        else:
            raise ValueError(f"nothing to replace at {pointer(path)}")
        self.ops.append({"op": "replace", "path": pointer(path), "value": value})

    def merge_map(self, path: Path, entries: dict[str, Any]) -> None:
        cur = self.get(path)
        if not isinstance(cur, dict):
            self._add(path, dict(entries))
            return
        for k, v in entries.items():
            if cur.get(k) != v:
                self._add(path + (k,), v)

    def extend_list(self, path: Path, items: list[Any]) -> None:
        cur = self.get(path)
        if not isinstance(cur, list):
            if items:
                self._add(path, list(items))
            return
        for it in items:
            if it not in cur:
                self._add(path + ("-",), it)


_KEYS = st.sampled_from(["a", "b", "spec", "x/y", "t~"])
_LEAF = st.one_of(st.integers(0, 3), st.sampled_from(["v", "w"]), st.none())
_DOCS = st.recursive(_LEAF, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                    st.dictionaries(_KEYS, inner, max_size=3)),
                     max_leaves=12)
_PATHS = st.lists(st.one_of(_KEYS, st.integers(0, 2)), min_size=1, max_size=4).map(tuple)
_OPS = st.lists(st.tuples(st.sampled_from(["merge", "extend", "replace"]), _PATHS, _DOCS),
                max_size=6)


def _run(pb: PatchBuilder | _CopyFirst, ops: list[tuple[str, Path, Any]]) -> list[Any]:
    said: list[Any] = []
    for how, path, value in ops:
        try:
            if how == "merge":
                pb.merge_map(path, value if isinstance(value, dict) else {"k": value})
            elif how == "extend":
                pb.extend_list(path, value if isinstance(value, list) else [value])
            else:
                pb.replace(path, value)
            said.append("ok")
        except (ValueError, IndexError) as e:  # IndexError: replace past a list's end, as before
            said.append(repr(e))
    return said


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_KEYS, _DOCS, max_size=4), _OPS)
def test_copy_on_write_is_the_copy_first_builder(doc: dict[str, Any],
                                                 ops: list[tuple[str, Path, Any]]) -> None:
    before = copy.deepcopy(doc)
    ours, ref = PatchBuilder(doc), _CopyFirst(doc)
    assert _run(ours, ops) == _run(ref, copy.deepcopy(ops))
    assert doc == before  # the user's document is untouched
    assert ours.ops == ref.ops
    assert ours.doc == ref.doc
    if all(op["op"] == "add" for op in ours.ops) and not any(
            isinstance(t, int) for _, path, _ in ops for t in path):
        # (an integer key into a map is a quirk no generator uses; RFC 6902 has no such key)
        assert jsonpatch.apply_patch(doc, ours.ops) == ours.doc
