"""The shape of the fields the analysis reads, checked on every object collected from PATHs.

The API server refuses an object whose `affinity` is a string or whose `maxSkew` is "x"; the
analysis, which reads those fields as the API server would have stored them, used to crash on
them (a traceback, exit 1: read as "findings" by callers). So before any analysis, each field it
reads must have the type Kubernetes gives it; a field of the wrong type is bad input (exit 2)
reported where it is written. Only structure and the numbers the analysis computes with are
checked: the values themselves are the analysis's to judge.
"""

from __future__ import annotations

import math
import re
from typing import Any

from topogate.k8s import quantity
from topogate.k8s.quantity import GPU_RESOURCES
from topogate.safeio.saferead import InputError

# A shape: a dict (a mapping with these keys; "*" for every key), a one-item list (a list of
# that shape), or a leaf name.
Shape = Any
INT, SCALAR, QUANTITY = "an integer", "a scalar", "a whole number"
# A custom resource's `type: string` field: the API server refuses an integer there (it does not
# convert: "in body must be of type string"), so topogate refuses it too, saying so.
STRING, BOOL = "a string", "true or false"

_INT_TEXT = re.compile(r"\s*[+-]?[0-9]+\s*")
MAX_INT = 2**31 - 1  # Kubernetes' int32 fields; a larger count is no real workload

_SELECTOR: Shape = {"matchLabels": {"*": SCALAR},
                    "matchExpressions": [{"key": SCALAR, "operator": SCALAR, "values": [SCALAR]}]}
_NODE_TERM: Shape = {"matchExpressions": [{"key": SCALAR, "operator": SCALAR, "values": [SCALAR]}],
                     "matchFields": [{"key": SCALAR, "operator": SCALAR, "values": [SCALAR]}]}
_POD_TERM: Shape = {"labelSelector": _SELECTOR, "namespaceSelector": _SELECTOR,
                    "namespaces": [SCALAR], "topologyKey": SCALAR}
_POD_AFFINITY: Shape = {"requiredDuringSchedulingIgnoredDuringExecution": [_POD_TERM],
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {"weight": INT, "podAffinityTerm": _POD_TERM}]}
_RESOURCES: Shape = {"limits": {**{g: QUANTITY for g in GPU_RESOURCES}, "*": SCALAR},
                     "requests": {**{g: QUANTITY for g in GPU_RESOURCES}, "*": SCALAR}}
_CONTAINER: Shape = {"name": SCALAR, "ports": [{"containerPort": INT, "name": SCALAR, "protocol": SCALAR}],
                     "resources": _RESOURCES}
POD_SPEC: Shape = {
    "nodeSelector": {"*": SCALAR},
    "affinity": {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [_NODE_TERM]},
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": INT, "preference": _NODE_TERM}]},
        "podAffinity": _POD_AFFINITY,
        "podAntiAffinity": _POD_AFFINITY},
    "tolerations": [{"key": SCALAR, "operator": SCALAR, "value": SCALAR, "effect": SCALAR,
                     "tolerationSeconds": INT}],
    "topologySpreadConstraints": [{"maxSkew": INT, "minDomains": INT, "topologyKey": SCALAR,
                                   "whenUnsatisfiable": SCALAR, "labelSelector": _SELECTOR}],
    "containers": [_CONTAINER],
    "initContainers": [_CONTAINER],
    "serviceAccountName": SCALAR,
    "hostNetwork": SCALAR,
}
_METADATA: Shape = {"name": SCALAR, "namespace": SCALAR, "labels": {"*": SCALAR}}
TEMPLATE: Shape = {"metadata": _METADATA, "spec": POD_SPEC}
_JOB_SPEC: Shape = {"parallelism": INT, "completions": INT, "template": TEMPLATE}
_JOBSET_SPEC: Shape = {"replicatedJobs": [{"name": SCALAR, "replicas": INT,
                                           "template": {"spec": _JOB_SPEC}}]}

# Network policies, as their CRDs (cilium.io/v2) and the NetworkPolicy API type the fields the
# evaluator reads. `{}` is a mapping whose content is not read here.
_CILIUM_SELECTOR: Shape = {"matchLabels": {"*": STRING},
                           "matchExpressions": [{"key": STRING, "operator": STRING, "values": [STRING]}]}
_CILIUM_PORTS: Shape = [{"ports": [{"port": STRING, "endPort": INT, "protocol": STRING}],
                         "rules": {}, "serverNames": [STRING]}]
_CIDR_RULE: Shape = {"cidr": STRING, "except": [STRING], "cidrGroupRef": STRING}
_ICMPS: Shape = [{"fields": [{"type": SCALAR, "family": STRING}]}]
# fromRequires/toRequires are read as the Cilium releases that have them write them (selectors);
# the 1.20 CRD deprecates them to an empty list of strings, which a 1.20 API server enforces.
_CILIUM_INGRESS: Shape = {
    "fromEndpoints": [_CILIUM_SELECTOR], "fromRequires": [_CILIUM_SELECTOR], "fromNodes": [_CILIUM_SELECTOR],
    "fromEntities": [STRING], "fromCIDR": [STRING], "fromCIDRSet": [_CIDR_RULE], "fromGroups": [{}],
    "toPorts": _CILIUM_PORTS, "icmps": _ICMPS}
_CILIUM_EGRESS: Shape = {
    "toEndpoints": [_CILIUM_SELECTOR], "toRequires": [_CILIUM_SELECTOR], "toNodes": [_CILIUM_SELECTOR],
    "toEntities": [STRING], "toCIDR": [STRING], "toCIDRSet": [_CIDR_RULE], "toGroups": [{}],
    "toFQDNs": [{"matchName": STRING, "matchPattern": STRING}], "toServices": [{}],
    "toPorts": _CILIUM_PORTS, "icmps": _ICMPS}
# Deny rules have no L7 part (toPorts holds ports only) and no toFQDNs (the CRD has neither).
_DENY_PORTS: Shape = [{"ports": [{"port": STRING, "endPort": INT, "protocol": STRING}]}]
_CILIUM_INGRESS_DENY: Shape = {**_CILIUM_INGRESS, "toPorts": _DENY_PORTS}
_CILIUM_EGRESS_DENY: Shape = {k: v for k, v in _CILIUM_EGRESS.items() if k != "toFQDNs"} | {"toPorts": _DENY_PORTS}
CILIUM_RULE: Shape = {
    "endpointSelector": _CILIUM_SELECTOR, "nodeSelector": _CILIUM_SELECTOR,
    "ingress": [_CILIUM_INGRESS], "ingressDeny": [_CILIUM_INGRESS_DENY],
    "egress": [_CILIUM_EGRESS], "egressDeny": [_CILIUM_EGRESS_DENY],
    "enableDefaultDeny": {"ingress": BOOL, "egress": BOOL}, "description": STRING}
_NP_PEER: Shape = {"podSelector": _SELECTOR, "namespaceSelector": _SELECTOR,
                   "ipBlock": {"cidr": SCALAR, "except": [SCALAR]}}
_NP_PORTS: Shape = [{"protocol": SCALAR, "port": SCALAR, "endPort": INT}]  # port: int or string

# Per kind: the shape of `spec`.
SPECS: dict[str, Shape] = {
    "PyTorchJob": {"pytorchReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "MPIJob": {"mpiReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "TFJob": {"tfReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "XGBoostJob": {"xgbReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "PaddleJob": {"paddleReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "JAXJob": {"jaxReplicaSpecs": {"*": {"replicas": INT, "template": TEMPLATE}}},
    "JobSet": _JOBSET_SPEC,
    "TrainJob": {"runtimeRef": {"name": SCALAR}, "trainer": {"numNodes": INT, "resourcesPerNode": _RESOURCES}},
    "TrainingRuntime": {"mlPolicy": {"numNodes": INT}, "template": {"spec": _JOBSET_SPEC}},
    "ClusterTrainingRuntime": {"mlPolicy": {"numNodes": INT}, "template": {"spec": _JOBSET_SPEC}},
    "Deployment": {"replicas": INT, "template": TEMPLATE, "selector": _SELECTOR},
    "StatefulSet": {"replicas": INT, "template": TEMPLATE, "selector": _SELECTOR},
    "ReplicaSet": {"replicas": INT, "template": TEMPLATE, "selector": _SELECTOR},
    "DaemonSet": {"template": TEMPLATE, "selector": _SELECTOR},
    "Job": _JOB_SPEC,
    "CronJob": {"jobTemplate": {"spec": _JOB_SPEC}},
    "Pod": POD_SPEC,
    "CiliumNetworkPolicy": CILIUM_RULE,
    "CiliumClusterwideNetworkPolicy": CILIUM_RULE,
    "NetworkPolicy": {"podSelector": _SELECTOR, "policyTypes": [SCALAR],
                      "ingress": [{"from": [_NP_PEER], "ports": _NP_PORTS}],
                      "egress": [{"to": [_NP_PEER], "ports": _NP_PORTS}]},
}
# Kinds with a list of rules besides `spec` (a CiliumNetworkPolicy may hold several).
SPECS_LISTS: dict[str, Shape] = {"CiliumNetworkPolicy": [CILIUM_RULE],
                                 "CiliumClusterwideNetworkPolicy": [CILIUM_RULE]}

Path_ = tuple[str | int, ...]


def _describe(v: Any) -> str:
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, list):
        return "a list"
    return repr(v) if len(repr(v)) <= 40 else repr(v)[:37] + "..."


def _leaf_ok(leaf: str, v: Any) -> bool:
    if leaf == SCALAR:
        return not isinstance(v, dict | list)
    if leaf == STRING:
        return isinstance(v, str)
    if leaf == BOOL:
        return isinstance(v, bool)

    if leaf == QUANTITY:  # as the API server reads an extended resource: a whole count
        n = quantity.whole(v)
        return n is not None and n <= MAX_INT
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return abs(v) <= MAX_INT
    if leaf == INT and isinstance(v, float):
        return math.isfinite(v) and v.is_integer() and abs(v) <= MAX_INT
    if isinstance(v, str):
        text = v.strip()
        return bool(_INT_TEXT.fullmatch(v)) and _magnitude(text) <= MAX_INT
    return False


_MAX_DIGITS = 4000  # int() refuses texts past 4,300 digits, leading zeros included


def _magnitude(text: str) -> int:
    """abs(int(text)) for ASCII digits with an optional sign; a text of more than _MAX_DIGITS
    digits counts as too large, as int() and everything after it would refuse it (a traceback
    on hostile input), however many of them are leading zeros."""
    digits = text.lstrip("+-")
    return MAX_INT + 1 if len(digits) > _MAX_DIGITS else int(digits)


def _fine(value: Any, shape: Shape) -> bool:
    """Whether value has shape: _problem's walk over the same fields, without the order and
    the paths that only the first problem needs (every object collected is checked; almost
    all are fine)."""
    stack: list[tuple[Any, Shape]] = [(value, shape)]
    pop, push = stack.pop, stack.append
    while stack:
        v, s = pop()
        if v is None:
            continue
        if type(s) is dict:
            if not isinstance(v, dict):
                return False
            star = s.get("*")
            for k, x in v.items():
                sub = s.get(k if type(k) is str else str(k), star)
                if sub is not None:
                    push((x, sub))
        elif type(s) is list:
            if not isinstance(v, list):
                return False
            sub = s[0]
            stack.extend((item, sub) for item in v)
        elif not _leaf_ok(s, v):
            return False
    return True


def _problem(value: Any, shape: Shape, path: Path_) -> tuple[Path_, str] | None:
    """The first place where value does not have shape: (path, what was expected there)."""
    if _fine(value, shape):
        return None
    return _first_problem(value, shape, path)


def _first_problem(value: Any, shape: Shape, path: Path_) -> tuple[Path_, str] | None:
    stack: list[tuple[Any, Shape, Path_]] = [(value, shape, path)]
    while stack:
        v, s, p = stack.pop()
        if v is None:
            continue  # null is how YAML writes "not set"
        if isinstance(s, dict):
            if not isinstance(v, dict):
                return p, "a mapping"
            for k in sorted(v, key=str, reverse=True):
                sub = s.get(str(k), s.get("*"))
                if sub is not None:
                    stack.append((v[k], sub, (*p, str(k))))
        elif isinstance(s, list):
            if not isinstance(v, list):
                return p, "a list"
            stack.extend((item, s[0], (*p, i)) for i, item in reversed(list(enumerate(v))))
        elif not _leaf_ok(s, v):
            return p, s if s in (SCALAR, STRING, BOOL) else f"{s} (at most {MAX_INT})"
    return None


def first_problem(doc: dict[str, Any]) -> tuple[Path_, str] | None:
    """(path, what it must be) of the first field of a plain document whose type the analysis
    (or a generator patching it) cannot read; None when every such field has its type."""
    found = _problem(doc.get("metadata"), _METADATA, ("metadata",))
    kind = str(doc.get("kind", ""))
    shape = SPECS.get(kind)
    if found is None and shape is not None:
        found = _problem(doc.get("spec"), shape, ("spec",))
    listed = SPECS_LISTS.get(kind)
    if found is None and listed is not None:
        found = _problem(doc.get("specs"), listed, ("specs",))
    return found


def problem_in(value: Any, shape: Shape, path: Path_ = ()) -> tuple[Path_, str] | None:
    """(path, what it must be) of the first field of `value` not of `shape`, or None: for
    readers of other objects (a cluster's nodes and pods) with shapes of their own."""
    return _problem(value, shape, path)


def field_name(path: Path_) -> str:
    return ".".join(str(s) if isinstance(s, str) else f"[{s}]" for s in path).replace(".[", "[")


def describe_at(doc: Any, path: Path_) -> str:
    value: Any = doc
    for step in path:
        value = value[step]
    return _describe(value)


def check(obj: Any) -> None:
    """InputError at the first field of a collected object whose type the analysis cannot read."""
    found = first_problem(obj.obj)
    if found is None:
        return
    path, expected = found
    value = describe_at(obj.obj, path)
    if expected == STRING and not isinstance(_value_at(obj.obj, path), dict | list):
        # The API server's own words for it: it refuses, it does not convert.
        raise InputError(obj.locate(path), (
            f"{obj.ref}: {field_name(path)} must be a string, not {value}: the API server refuses it "
            f"({field_name(path)} in body must be of type string); quote it: \"{_value_at(obj.obj, path)}\""))
    raise InputError(obj.locate(path), (
        f"{obj.ref}: {field_name(path)} must be {expected}, not {value}; the "
        "API server would refuse this object: fix the field"))


def _value_at(doc: Any, path: Path_) -> Any:
    value: Any = doc
    for step in path:
        value = value[step]
    return value
