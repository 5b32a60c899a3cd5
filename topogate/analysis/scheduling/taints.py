"""Taints and tolerations (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).

A ``NoSchedule`` or ``NoExecute`` taint removes the node unless some toleration matches it;
``PreferNoSchedule`` is a soft preference and removes nothing. A toleration matches when its
effect is empty (matches all effects) or equal, its key is empty with ``operator: Exists``
(matches every key, value and effect) or equal, and ``Exists`` ignores the value while
``Equal`` (the default) compares it. An empty key with ``Equal`` is rejected by the API server
(Toleration API: "If the key is empty, operator must be Exists"), so it tolerates nothing here.
``Gt``/``Lt`` (alpha, feature gate TaintTolerationComparisonOperators) tolerate when the taint's
integer value is greater/less than the toleration's. The ExtendedResourceToleration admission
plugin's tolerations are known here (``implicit_tolerations``); ``fit`` decides how to use them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from topogate.analysis.scheduling.values import int_or_none
from topogate.inventory.model import Taint

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: Mapping[str, Any], taint: Taint) -> bool:
    """Whether one toleration matches one taint (key, value, effect; operator)."""
    effect = toleration.get("effect") or ""
    if effect and effect != taint.effect:
        return False
    key = toleration.get("key") or ""
    op = toleration.get("operator") or "Equal"
    if not key:
        # Empty key + Exists tolerates everything; empty key with another operator is invalid.
        return op == "Exists"
    if key != taint.key:
        return False
    if op == "Exists":
        return True
    if op == "Equal":
        return str(toleration.get("value") or "") == taint.value
    if op in ("Gt", "Lt"):
        have, want = int_or_none(taint.value), int_or_none(toleration.get("value"))
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False


def extended_resources(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """Extended resources (``vendor/name``, e.g. nvidia.com/gpu) any container asks for."""
    names: set[str] = set()
    for section in ("containers", "initContainers"):
        for c in spec.get(section) or []:
            res = c.get("resources") if isinstance(c, dict) else None
            for part in ("limits", "requests"):
                block = res.get(part) if isinstance(res, dict) else None
                for k, v in (block.items() if isinstance(block, dict) else ()):
                    if "/" in str(k) and not str(k).startswith(("kubernetes.io/", "hugepages-")) and str(v) not in ("0", ""):
                        names.add(str(k))
    return tuple(sorted(names))


def implicit_tolerations(spec: Mapping[str, Any]) -> list[dict[str, str]]:
    """What the ExtendedResourceToleration admission plugin adds (GKE enables it, EKS GPU AMIs
    rely on it): for each extended resource the pod requests, Exists/NoSchedule on a taint of
    that name. The repository's pod spec lacks it; the API server adds it on admission."""
    return [{"key": name, "operator": "Exists", "effect": "NoSchedule"} for name in extended_resources(spec)]


def untolerated_taints(tolerations: Any, taints: Iterable[Taint]) -> tuple[Taint, ...]:
    """The NoSchedule/NoExecute taints that no toleration matches."""
    tols = [t for t in tolerations if isinstance(t, dict)] if isinstance(tolerations, list) else []
    return tuple(
        t for t in taints
        if t.effect in BLOCKING_EFFECTS and not any(tolerates(tol, t) for tol in tols)
    )


def taint_str(t: Taint) -> str:
    return f"{t.key}={t.value}:{t.effect}" if t.value else f"{t.key}:{t.effect}"
