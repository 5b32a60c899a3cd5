"""Label selectors as Cilium and Kubernetes read them: ``k8s:``/``any:`` source prefixes,
matchLabels and matchExpressions, and whether a selector names the namespace (which lifts the
namespace scoping of a CNP peer selector).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.netpolicy.keys import NAMESPACE_LABELS_PREFIX, POD_NAMESPACE_LABEL

__all__ = ["CompiledSelector", "IdentityView", "Requirement", "compile_selector", "split_source"]

# ---------------------------------------------------------------------------------------------
# Label selectors
# ---------------------------------------------------------------------------------------------


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def split_source(key: str) -> tuple[str, str]:
    """Cilium label keys are ``source:key``; Kubernetes keys never contain ':'."""
    if ":" in key:
        src, _, rest = key.partition(":")
        return src, rest
    return "any", key


class IdentityView:
    """The labels of an identity that is not a pod's (an entity, an address, a node), by source:
    what a selector with ``reserved:``, ``node:`` or ``any:`` keys sees (pkg/labels HasKey: an
    ``any`` key matches a label of every source). A pod's identity is all ``k8s`` labels and is
    matched as a plain mapping, which is faster."""

    __slots__ = ("by_source",)

    def __init__(self, by_source: Mapping[str, Mapping[str, str]]) -> None:
        self.by_source = by_source

    def lookup(self, source: str, key: str) -> str | None:
        if source == "any":
            for some in self.by_source.values():
                if key in some:
                    return some[key]
            return None
        labels = self.by_source.get(source)
        return None if labels is None else labels.get(key)


def _compare(op: str, values: frozenset[str], present: bool, value: str | None) -> bool:
    if op == "In":
        return present and value in values
    if op == "NotIn":
        return not present or value not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    return False  # unknown operator: a selector that cannot be understood selects nothing


@dataclass(frozen=True)
class Requirement:
    """One matchLabels pair (as ``In``) or one matchExpressions entry."""

    key: str  # without source prefix
    op: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str]
    pod_source: bool  # False: a source (reserved:, cidr:, ...) pods never carry
    source: str = "any"  # the key's source: any (no prefix), k8s, reserved, node, ...

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Against a pod's identity (its labels, all of the k8s source)."""
        present = self.pod_source and self.key in labels
        if self.op == "In":
            return present and labels[self.key] in self.values
        if self.op == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.op == "Exists":
            return present
        if self.op == "DoesNotExist":
            return not present
        return False  # unknown operator: a selector that cannot be understood selects nothing

    def matches_view(self, view: IdentityView) -> bool:
        """Against the identity of something that is not a pod."""
        value = view.lookup(self.source, self.key)
        return _compare(self.op, self.values, value is not None, value)


@dataclass(frozen=True)
class CompiledSelector:
    """A label selector (endpointSelector, fromEndpoints/toEndpoints entries, NetworkPolicy
    podSelector/namespaceSelector): its requirements are ANDed."""

    reqs: tuple[Requirement, ...]
    text: str  # for messages

    def matches(self, labels: Mapping[str, str]) -> bool:
        # A loop, not all(<generator>): asked for every pod class and peer of every job.
        for r in self.reqs:
            if not r.matches(labels):
                return False
        return True

    def matches_view(self, view: IdentityView) -> bool:
        for r in self.reqs:
            if not r.matches_view(view):
                return False
        return True

    def has_source(self, source: str) -> bool:
        """Does a key of the selector carry this source prefix (``reserved``: the agent then
        leaves the selector unscoped, pkg/k8s/apis/cilium.io/utils getEndpointSelector)?"""
        return any(r.source == source for r in self.reqs)

    def names_key(self, key: str) -> bool:
        return any(r.pod_source and r.key == key for r in self.reqs)

    def names_namespace(self) -> bool:
        return any(r.pod_source and r.key == POD_NAMESPACE_LABEL for r in self.reqs)

    def names_namespace_labels(self) -> bool:
        return any(r.pod_source and r.key.startswith(NAMESPACE_LABELS_PREFIX) for r in self.reqs)


@functools.lru_cache(maxsize=1 << 16)
def _requirement(key: str, op: str, values: frozenset[str], source: str) -> Requirement:
    """One object per distinct requirement: every job's policies repeat the same few (its
    namespace, its replica group), and a cluster's thousands of selectors are kept to the end."""
    return Requirement(key, op, values, source in ("k8s", "any"), source)


def compile_selector(raw: Any) -> CompiledSelector:
    if not isinstance(raw, Mapping):
        raw = {}
    unknown = sorted(str(k) for k in raw if k not in ("matchLabels", "matchExpressions"))
    if unknown:
        # Usually a label indented one level too little (`matchLabels:` left empty). kubectl
        # refuses the unknown field; an API server that prunes it keeps `{}`, which selects every
        # pod: reading it either way would be a silent verdict.
        raise ValueError(f"label selector field {unknown[0]!r} is not matchLabels or matchExpressions "
                         f"(a label indented under the wrong key?); as written it would select every pod")
    reqs: list[Requirement] = []
    for k, v in sorted((raw.get("matchLabels") or {}).items()):
        src, key = split_source(str(k))
        reqs.append(_requirement(key, "In", frozenset({"" if v is None else str(v)}), src))
    for expr in raw.get("matchExpressions") or []:
        if not isinstance(expr, Mapping):
            continue
        src, key = split_source(str(expr.get("key", "")))
        values = frozenset(str(x) for x in (expr.get("values") or []))
        op = str(expr.get("operator", ""))
        if op not in _OPERATORS:
            # The API server rejects it; evaluating it as "selects nothing" would turn a typo
            # into a silent verdict (e.g. `in` instead of `In`).
            raise ValueError(f"matchExpressions key {key!r}: operator {op!r} is not one of "
                             f"{', '.join(_OPERATORS)} (operators are case-sensitive)")
        reqs.append(_requirement(key, op, values, src))
    text = ",".join(f"{r.key} {r.op} {sorted(r.values)}" for r in reqs) or "{}"
    return CompiledSelector(tuple(reqs), text)
