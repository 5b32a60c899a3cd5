"""The shape of the objects a snapshot file or the API hands the live commands.

A hand-made or truncated export, a proxy or a broken API server can give `metadata: "x"`,
`labels: [..]`, `allocatable: 8` or `taints: {}`; the readers (nodes, running jobs, slim_pod,
the analysis of jobs and policies) used to crash on them: a traceback and exit 1, read as
"drift found". So each item's fields that anything reads are checked first, as the API server
would have typed them; a wrong one is exit 2 (a file) or 75 (the server), one line.
"""

from __future__ import annotations

from typing import Any

from topogate.k8s import shapes
from topogate.k8s.quantity import GPU_RESOURCES

_STRING, _SCALAR = shapes.STRING, shapes.SCALAR

_OWNERS = [{"kind": _SCALAR, "name": _SCALAR, "controller": _SCALAR}]
_METADATA = {"name": _SCALAR, "namespace": _SCALAR, "labels": {"*": _SCALAR},
             "ownerReferences": _OWNERS, "continue": _SCALAR}
# What topogate.live.nodes and topogate.live.running read of nodes and pods, beyond the pod
# spec topogate.k8s.shapes already types (containers' GPU limits among it).
_EXTRA: dict[str, Any] = {
    # A node's labels, taints and GPUs are what drift compares with the inventory: the API
    # server serves them as strings (a GPU count as a whole-number string), and a reader that
    # turned `value: false` or `nvidia.com/gpu: "x"` into "" or 0 would call a broken export
    # "no drift". So those are typed strictly here.
    "Node": {"metadata": {**_METADATA, "labels": {"*": shapes.STRING}},
             "spec": {"taints": [{"key": shapes.STRING, "value": shapes.STRING,
                                  "effect": shapes.STRING}],
                      "unschedulable": _SCALAR},
             "status": {"allocatable": {**{g: shapes.QUANTITY for g in GPU_RESOURCES},
                                        "*": _SCALAR}}},
    "Pod": {"metadata": _METADATA,
            "spec": {"nodeName": _SCALAR, "containers": [{"resources": {"limits": {}}}]},
            "status": {"phase": _SCALAR,
                       "conditions": [{"type": _SCALAR, "status": _SCALAR, "reason": _SCALAR,
                                       "message": _SCALAR}]}},
}
_ANY = {"metadata": _METADATA}


def problem(item: dict[str, Any]) -> str | None:
    """What is wrong with the first mistyped field of an item (a dict), or None."""
    kind = item.get("kind")
    if not isinstance(kind, str):
        return f"kind must be a string, not {shapes.describe_at(item, ('kind',))}"
    found = shapes.problem_in(item, _EXTRA.get(kind, _ANY)) or shapes.first_problem(item)
    if found is None:
        return None
    path, expected = found
    return (f"{shapes.field_name(path)} must be {expected}, not "
            f"{shapes.describe_at(item, path)}")


def too_deep(doc: Any, limit: int) -> bool:
    """Whether parsed JSON nests past `limit` levels (what the YAML guard refuses: later steps,
    such as comparing a policy with the generated one, recurse once per level)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return False


def name_of(item: dict[str, Any]) -> str:
    """kind/namespace/name of an item for messages, from whatever of it is well-typed."""
    md = item.get("metadata")
    md = md if isinstance(md, dict) else {}
    parts = [item.get("kind"), md.get("namespace"), md.get("name")]
    return "/".join(p for p in parts if isinstance(p, str) and p)[:200] or "an object"


__all__ = ["name_of", "problem", "too_deep"]
