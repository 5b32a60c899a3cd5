"""Building RFC 6902 JSON patches that only ADD to a document, never drop what it had.

The overlay must keep everything of the user's base (containers, env, tolerations, labels,
existing affinity terms). A JSON patch `add` on a path whose value exists REPLACES that value,
and an `add` under a missing parent fails. So every op is computed against the document as it
stands after the previous ops: `PatchBuilder` keeps a private copy, applies each op to it, and
picks per op the least intrusive form:

- a key into an existing map (`/.../labels/topogate.dev~1workload`), or the whole map when
  missing;
- `/-` appends to an existing list, or the whole list when missing;
- a missing chain of parents is created in one op at the first missing key.

Pure: no I/O; the caller's document is never mutated.
"""

from __future__ import annotations

from typing import Any

Path = tuple[str | int, ...]
_MISSING = object()


def escape(token: str | int) -> str:
    """One JSON-pointer reference token (RFC 6901: `~` -> `~0`, `/` -> `~1`)."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(path: Path) -> str:
    return "".join("/" + escape(t) for t in path)


def _get(doc: Any, path: Path) -> Any:
    cur = doc
    for t in path:
        if isinstance(t, int):
            if not isinstance(cur, list) or not 0 <= t < len(cur):
                return _MISSING
            cur = cur[t]
        else:
            if not isinstance(cur, dict) or t not in cur:
                return _MISSING
            cur = cur[t]
    return cur


def _copy(obj: Any) -> Any:
    """A deep copy of plain YAML data (maps, lists, scalars); several times faster than
    copy.deepcopy, which matters at thousands of jobs."""
    if isinstance(obj, dict):
        return {k: _copy(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_copy(v) for v in obj]
    return obj


def _nest(keys: Path, value: Any) -> Any:
    for k in reversed(keys):
        if isinstance(k, int):
            raise ValueError(f"cannot create a list index {k} that the document does not have")
        value = {k: value}
    return value


class PatchBuilder:
    """Accumulates `add` ops against a private copy of `doc`."""

    def __init__(self, doc: dict[str, Any]):
        self.doc: dict[str, Any] = _copy(doc)
        self.ops: list[dict[str, Any]] = []

    def get(self, path: Path) -> Any:
        v = _get(self.doc, path)
        return None if v is _MISSING else v

    def _add(self, path: Path, value: Any) -> None:
        """`add` at `path`, creating missing parents (maps only) in the same single op."""
        i = len(path)
        # Find the deepest existing parent; everything below it is created in one value.
        while i > 0 and not isinstance(_get(self.doc, path[: i - 1]), (dict, list)):
            i -= 1
        if i == 0:
            raise ValueError(f"no parent of {pointer(path)} exists in the document")
        at, value = path[:i], _nest(path[i:], value)
        parent = _get(self.doc, at[:-1])
        last = at[-1]
        if isinstance(parent, list):
            if last == "-":
                parent.append(_copy(value))
            elif isinstance(last, int):
                parent.insert(last, _copy(value))
            else:
                raise ValueError(f"{pointer(at)} indexes a list with a key")
        elif isinstance(parent, dict):
            parent[last] = _copy(value)
        else:  # pragma: no cover - guarded by the loop above
            raise ValueError(f"{pointer(at[:-1])} is neither a map nor a list")
        self.ops.append({"op": "add", "path": pointer(at), "value": value})

    def replace(self, path: Path, value: Any) -> None:
        parent = _get(self.doc, path[:-1])
        if isinstance(parent, list) and isinstance(path[-1], int):
            parent[path[-1]] = _copy(value)
        elif isinstance(parent, dict):
            parent[path[-1]] = _copy(value)
        else:
            raise ValueError(f"nothing to replace at {pointer(path)}")
        self.ops.append({"op": "replace", "path": pointer(path), "value": value})

    def merge_map(self, path: Path, entries: dict[str, Any]) -> None:
        """Set `entries` into the map at `path`, keeping its other keys; create it if missing."""
        cur = self.get(path)
        if not isinstance(cur, dict):
            self._add(path, dict(entries))
            return
        for k, v in entries.items():
            if cur.get(k) != v:
                self._add(path + (k,), v)

    def extend_list(self, path: Path, items: list[Any]) -> None:
        """Append the `items` the list at `path` lacks (equal items are not repeated)."""
        cur = self.get(path)
        if not isinstance(cur, list):
            if items:
                self._add(path, list(items))
            return
        for it in items:
            if it not in cur:
                self._add(path + ("-",), it)
