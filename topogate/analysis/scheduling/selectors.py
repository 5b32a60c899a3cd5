"""Pod label selectors (metav1.LabelSelector), used by pod (anti-)affinity and topology spread."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogate.analysis.scheduling.values import as_str_list


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A LabelSelector against a set of labels. ``{}`` matches everything; None matches nothing.

    Callers decide what a *null* selector means in their context (a null podAffinityTerm
    labelSelector matches no pods, per the PodAffinityTerm API reference); here it is False.
    """
    if not isinstance(selector, dict):
        return False
    ml = selector.get("matchLabels")
    if isinstance(ml, dict):
        for k, v in ml.items():
            if labels.get(str(k)) != str(v):
                return False
    for req in selector.get("matchExpressions") or []:
        if not isinstance(req, dict):
            return False
        key = str(req.get("key", ""))
        op = req.get("operator")
        vals = as_str_list(req.get("values"))
        have = labels.get(key)
        if op == "In":
            if have is None or have not in vals:
                return False
        elif op == "NotIn":
            if have is not None and have in vals:
                return False
        elif op == "Exists":
            if have is None:
                return False
        elif op == "DoesNotExist":
            if have is not None:
                return False
        else:
            return False
    return True


def with_label_keys(selector: Any, labels: Mapping[str, str], match_keys: Any, mismatch_keys: Any = None) -> Any:
    """Merge matchLabelKeys (key In [own value]) and mismatchLabelKeys (key NotIn [own value])

    into a selector, as the scheduler does for pod affinity and topology spread; keys the pod
    lacks are ignored (PodAffinityTerm / TopologySpreadConstraint API reference).
    """
    if not isinstance(selector, dict):
        return selector
    extra: list[dict[str, Any]] = []
    for k in as_str_list(match_keys):
        if k in labels:
            extra.append({"key": k, "operator": "In", "values": [labels[k]]})
    for k in as_str_list(mismatch_keys):
        if k in labels:
            extra.append({"key": k, "operator": "NotIn", "values": [labels[k]]})
    if not extra:
        return selector
    exprs = [e for e in (selector.get("matchExpressions") or []) if isinstance(e, dict)]
    return {**selector, "matchExpressions": exprs + extra}
