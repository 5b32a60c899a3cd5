"""nodeSelector, required node affinity and nodeName against one node class's labels.

nodeSelector.  Every key must be present with exactly that value
(https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodeselector).

Required node affinity.  ``nodeSelectorTerms`` are ORed, the expressions of one term ANDed
(assign-pod-node/#node-affinity: "If you specify multiple terms ... terms are ORed", "multiple
expressions in a single matchExpressions ... ANDed"). A null or empty term matches no objects
(https://kubernetes.io/docs/reference/kubernetes-api/definitions/node-selector-term-v1/), so an
empty term list matches no node either (the API server also rejects it). Both nodeSelector and
node affinity must hold when both are set. ``preferredDuringScheduling...`` constrains nothing.
Operators (assign-pod-node/#operators): ``NotIn`` and ``DoesNotExist`` also match a node
without the key; ``Gt``/``Lt`` compare integers, the node label must exist and parse as an
integer, else the expression fails.

The unknown hostname.  ``kubernetes.io/hostname`` (node names are not in the inventory):
``Exists`` matches, ``DoesNotExist`` does not, ``In``/``Gt``/``Lt`` never match a pool class and
``NotIn`` always does (a pool of several nodes always has one outside a finite list). A pool that
sets ``kubernetes.io/hostname`` in its labels (a one-node pool) is matched normally.
``matchFields`` (only ``metadata.name`` exists) and ``spec.nodeName`` are treated the same way:
node names are unknown, so they can only be satisfied by ``NotIn``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogate.analysis.scheduling.nodes import HOSTNAME_LABEL, UNKNOWN, LabelValue, Removal, Unknown
from topogate.analysis.scheduling.values import as_str_list, int_or_none


def _node_label(labels: Mapping[str, str], key: str) -> LabelValue | None:
    """The value of `key` on a node of the class: a string, UNKNOWN, or None when absent."""
    if key in labels:
        return labels[key]
    if key == HOSTNAME_LABEL:
        return UNKNOWN
    return None


def requirement_matches(req: Mapping[str, Any], value: LabelValue | None) -> bool:
    """One NodeSelectorRequirement against a node's value for its key (None = key absent)."""
    op = req.get("operator")
    values = as_str_list(req.get("values"))
    if op == "Exists":
        return value is not None
    if op == "DoesNotExist":
        return value is None
    if op == "In":
        return isinstance(value, str) and value in values
    if op == "NotIn":
        # An absent key satisfies NotIn; an unknown value (hostname) is outside any finite list on
        # some node of the class.
        return not (isinstance(value, str) and value in values)
    if op in ("Gt", "Lt"):
        if not isinstance(value, str) or len(values) != 1:
            return False
        have, want = int_or_none(value), int_or_none(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an unknown operator is rejected by the API server; it selects nothing


def _describe_requirement(req: Mapping[str, Any]) -> str:
    key = str(req.get("key", ""))
    op = str(req.get("operator", ""))
    values = as_str_list(req.get("values"))
    if op in ("Exists", "DoesNotExist"):
        return f"{key} {op}"
    return f"{key} {op} [{', '.join(values)}]"


def _describe_value(key: str, value: LabelValue | None) -> str:
    if value is None:
        return f"no label {key}"
    if isinstance(value, Unknown):
        return f"{key} is a node name, not modelled in the inventory"
    return f"{key}={value}"


def term_failures(term: Any, labels: Mapping[str, str]) -> list[str]:
    """Why a NodeSelectorTerm does not match a node class; empty when it matches."""
    if not isinstance(term, dict):
        return ["null node selector term matches no node"]
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return ["empty node selector term matches no node"]
    fails: list[str] = []
    for req in exprs if isinstance(exprs, list) else []:
        if not isinstance(req, dict):
            fails.append("malformed requirement")
            continue
        key = str(req.get("key", ""))
        value = _node_label(labels, key)
        if not requirement_matches(req, value):
            fails.append(f"{_describe_requirement(req)}: node has {_describe_value(key, value)}")
    for req in fields if isinstance(fields, list) else []:
        if not isinstance(req, dict):
            fails.append("malformed field requirement")
            continue
        # metadata.name is the only node field selector; node names are unknown here.
        field_value: LabelValue | None = UNKNOWN if req.get("key") == "metadata.name" else None
        if not requirement_matches(req, field_value):
            fails.append(f"matchFields {_describe_requirement(req)}: node names are not modelled")
    return fails


def term_keys(term: Any) -> list[str]:
    if not isinstance(term, dict):
        return []
    out = [str(r.get("key", "")) for r in (term.get("matchExpressions") or []) if isinstance(r, dict)]
    out += [str(r.get("key", "")) for r in (term.get("matchFields") or []) if isinstance(r, dict)]
    return out


def required_node_affinity(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """The pod's required node selector ({nodeSelectorTerms: [...]}) or None when it has none."""
    aff = spec.get("affinity")
    na = aff.get("nodeAffinity") if isinstance(aff, dict) else None
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(na, dict) else None
    return req if isinstance(req, dict) else None


def node_affinity_removals(spec: Mapping[str, Any], labels: Mapping[str, str]) -> list[Removal]:
    """nodeSelector, required node affinity and nodeName against one node class's labels."""
    out: list[Removal] = []
    sel = spec.get("nodeSelector")
    if isinstance(sel, dict):
        for key in sorted(sel):
            want = str(sel[key])
            have = _node_label(labels, str(key))
            if have != want:
                out.append(Removal(
                    "nodeSelector", str(key),
                    f"nodeSelector {key}={want}: node has {_describe_value(str(key), have)}",
                ))
    req = required_node_affinity(spec)
    if req is not None:
        terms = req.get("nodeSelectorTerms")
        terms = terms if isinstance(terms, list) else []
        if not terms:
            out.append(Removal("nodeAffinity", "", "required nodeAffinity has no nodeSelectorTerms: matches no node"))
        else:
            per_term = [term_failures(t, labels) for t in terms]
            if all(per_term):
                keys = sorted({k for t in terms for k in term_keys(t)})
                if len(terms) == 1:
                    msg = "required nodeAffinity: " + "; ".join(per_term[0])
                else:
                    msg = "required nodeAffinity: no term matches (" + " | ".join(
                        f"term {i}: " + "; ".join(f) for i, f in enumerate(per_term)) + ")"
                out.append(Removal("nodeAffinity", ",".join(keys), msg))
    node_name = spec.get("nodeName")
    if isinstance(node_name, str) and node_name and labels.get(HOSTNAME_LABEL) != node_name:
        out.append(Removal("nodeName", "nodeName", f"nodeName {node_name}: node names are not modelled in the inventory"))
    return out
