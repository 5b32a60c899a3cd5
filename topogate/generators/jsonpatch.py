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


_POINTERS: dict[Path, str] = {}


def pointer(path: Path) -> str:
    # Thousands of jobs patch the same few paths (/spec/pytorchReplicaSpecs/Worker/...).
    found = _POINTERS.get(path)
    if found is None:
        found = "".join("/" + escape(t) for t in path)
        if len(_POINTERS) < 100_000:
            _POINTERS[path] = found
    return found


def _step(cur: Any, t: str | int) -> Any:
    if isinstance(t, int):
        if not isinstance(cur, list) or not 0 <= t < len(cur):
            return _MISSING
        return cur[t]
    if not isinstance(cur, dict) or t not in cur:
        return _MISSING
    return cur[t]


def _get(doc: Any, path: Path) -> Any:
    cur = doc
    for t in path:
        cur = _step(cur, t)
        if cur is _MISSING:
            return _MISSING
    return cur


def _nest(keys: Path, value: Any) -> Any:
    for k in reversed(keys):
        if isinstance(k, int):
            raise ValueError(f"cannot create a list index {k} that the document does not have")
        value = {k: value}
    return value


class PatchBuilder:
    """Accumulates `add` ops against a private copy of `doc`.

    The copy is made on write: `doc` starts as a shallow copy, and a container is copied (with
    every container above it) only when an op changes it, so the user's containers, args and
    volumes are never copied. Containers this builder made are known by id; the ones it
    holds stay alive, so no other object can take their ids. A value an op adds is put into
    the copy as it is, shared with the op: it is not the builder's own, so a later op that
    changes it copies it first and the op keeps the value it was given."""

    def __init__(self, doc: dict[str, Any]):
        self.doc: dict[str, Any] = dict(doc)
        self.ops: list[dict[str, Any]] = []
        self._held: list[Any] = [self.doc]
        self._own: set[int] = {id(self.doc)}

    def get(self, path: Path) -> Any:
        v = _get(self.doc, path)
        return None if v is _MISSING else v

    def _writable(self, path: Path) -> Any:
        """The container at `path` (which exists), made this builder's own, with its parents."""
        cur: Any = self.doc
        for t in path:
            child = cur[t]
            if id(child) not in self._own:
                child = dict(child) if isinstance(child, dict) else list(child)
                cur[t] = child  # cur is ours: the user's document is left as it was
                self._own.add(id(child))
                self._held.append(child)
            cur = child
        return cur

    def _add(self, path: Path, value: Any) -> None:
        """`add` at `path`, creating missing parents (maps only) in the same single op."""
        if not path:
            raise ValueError(f"no parent of {pointer(path)} exists in the document")
        # Find the deepest existing parent; everything below it is created in one value.
        # Containers along a path form a prefix (nothing is found below a scalar or a gap).
        cur: Any = self.doc
        deepest = 0
        for j in range(len(path) - 1):
            t = path[j]  # _step, inlined: this loop runs a dozen times per op
            if isinstance(t, int):
                if not isinstance(cur, list) or not 0 <= t < len(cur):
                    break
            elif not isinstance(cur, dict) or t not in cur:
                break
            cur = cur[t]
            if not isinstance(cur, (dict, list)):
                break
            deepest = j + 1
        i = deepest + 1
        at, value = path[:i], _nest(path[i:], value)
        parent = self._writable(at[:-1])
        last = at[-1]
        if isinstance(parent, list):
            if last == "-":
                parent.append(value)
            elif isinstance(last, int):
                parent.insert(last, value)
            else:
                raise ValueError(f"{pointer(at)} indexes a list with a key")
        elif isinstance(parent, dict):
            parent[last] = value
        else:  # pragma: no cover - guarded by the loop above
            raise ValueError(f"{pointer(at[:-1])} is neither a map nor a list")
        self.ops.append({"op": "add", "path": pointer(at), "value": value})

    def replace(self, path: Path, value: Any) -> None:
        parent = _get(self.doc, path[:-1])
        if (isinstance(parent, list) and isinstance(path[-1], int)) or isinstance(parent, dict):
            self._writable(path[:-1])[path[-1]] = value
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
                cur = self.get(path)  # the add may have made a copy: read the current map

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
                cur = self.get(path)  # the add may have made a copy: read the current list
