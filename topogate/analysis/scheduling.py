"""Node-filter semantics: can a pod land on the nodes of a pool, and if not, which constraint says no.

The unit of reasoning is a *node class*: all nodes of one inventory pool share their labels,
taints and GPU count, so the kube-scheduler's filters give the same answer for each of them.
``fit_pool`` runs the filters topogate models on one class and keeps every reason that removes
it, so ``explain`` can say "taint gpu=present:NoSchedule not tolerated" rather than "no".

Only filters are modelled (no scoring): a placement the scheduler merely prefers against is
still a placement that can happen. Everything here is a pure function of a pod spec (the dict
under a pod template's ``spec``) and the inventory model.

Semantics, with the page that pins each non-obvious rule
--------------------------------------------------------
Node labels.  A pool's nodes carry the pool's labels plus ``<cluster.zone_label>: <zone>``, and the
well-known labels every kubelet/cloud sets unless the pool overrides them:
``topology.kubernetes.io/region: <cluster.region>``, ``kubernetes.io/os: linux``,
``kubernetes.io/arch: amd64`` (https://kubernetes.io/docs/reference/labels-annotations-taints/).
``kubernetes.io/hostname`` is unique per node and node names are not in the inventory, so it is
*unknown*: ``Exists`` matches, ``DoesNotExist`` does not, ``In``/``Gt``/``Lt`` never match a pool
class and ``NotIn`` always does (a pool of several nodes always has one outside a finite list).
A pool that sets ``kubernetes.io/hostname`` in its labels (a one-node pool) is matched normally.
``matchFields`` (only ``metadata.name`` exists) and ``spec.nodeName`` are treated the same way:
node names are unknown, so they can only be satisfied by ``NotIn``.

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

Taints (https://kubernetes.io/docs/concepts/scheduling-eviction/taint-and-toleration/).  A
``NoSchedule`` or ``NoExecute`` taint removes the node unless some toleration matches it;
``PreferNoSchedule`` is a soft preference and removes nothing. A toleration matches when its
effect is empty (matches all effects) or equal, its key is empty with ``operator: Exists``
(matches every key, value and effect) or equal, and ``Exists`` ignores the value while
``Equal`` (the default) compares it. An empty key with ``Equal`` is rejected by the API server
(Toleration API: "If the key is empty, operator must be Exists"), so it tolerates nothing here.
``Gt``/``Lt`` (alpha, feature gate TaintTolerationComparisonOperators) tolerate when the taint's
integer value is greater/less than the toleration's.

GPUs.  A pod's GPU request (``kinds.pod_gpus``: extended resources are whole devices on one
node) must fit in one node: ``gpus <= gpus_per_node``. A pool with zero nodes holds nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.inventory.model import Cluster, Taint
from topogate.kinds import pod_gpus
from topogate.words import plural

HOSTNAME_LABEL = "kubernetes.io/hostname"
REGION_LABEL = "topology.kubernetes.io/region"
OS_LABEL = "kubernetes.io/os"
ARCH_LABEL = "kubernetes.io/arch"

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")

Pairs = tuple[tuple[str, str], ...]


class _Unknown:
    """The value of a label that every node has but whose value the inventory does not know."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = _Unknown()
LabelValue = str | _Unknown


@dataclass(frozen=True)
class NodeClass:
    """The nodes of one pool, as the scheduler's filters see them."""

    cluster: str
    zone: str
    pool: str
    labels: Pairs
    taints: tuple[Taint, ...] = ()
    nodes: int = 0
    gpus_per_node: int = 0

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def node_classes(cluster: Cluster) -> tuple[NodeClass, ...]:
    """One node class per pool of the cluster, sorted by (zone, pool)."""
    out: list[NodeClass] = []
    for zone in cluster.zones:
        for pool in zone.pools:
            labels: dict[str, str] = {OS_LABEL: "linux", ARCH_LABEL: "amd64"}
            if cluster.region:
                labels[REGION_LABEL] = cluster.region
            labels.update(pool.label_map)
            # The zone label is the zone the pool is declared in, whatever the pool's labels say:
            # the inventory is the source of truth for where a node is.
            labels[cluster.zone_label] = zone.name
            out.append(NodeClass(
                cluster.name, zone.name, pool.name, tuple(sorted(labels.items())), pool.taints,
                pool.nodes, pool.gpus_per_node,
            ))
    return tuple(sorted(out, key=lambda n: (n.zone, n.pool)))


@dataclass(frozen=True)
class Removal:
    """One constraint that keeps a pod off a node class.

    ``constraint`` is one of nodeSelector, nodeAffinity, nodeName, taint, gpus, nodes;
    ``key`` the label key, ``key=value:effect`` of a taint, or the GPU resource.
    """

    constraint: str
    key: str
    message: str

    def __str__(self) -> str:
        return self.message


AFFINITY_CONSTRAINTS = ("nodeSelector", "nodeAffinity", "nodeName")


@dataclass(frozen=True)
class PoolFit:
    """The verdict of the node filters for one pod spec on one node class."""

    node: NodeClass
    reasons: tuple[Removal, ...] = ()
    notes: tuple[str, ...] = ()  # assumptions the fit relies on (e.g. an admission plugin's toleration)

    @property
    def zone(self) -> str:
        return self.node.zone

    @property
    def pool(self) -> str:
        return self.node.pool

    @property
    def fits(self) -> bool:
        return not self.reasons

    @property
    def affinity_ok(self) -> bool:
        """nodeSelector, node affinity and nodeName pass (topology spread's nodeAffinityPolicy)."""
        return not any(r.constraint in AFFINITY_CONSTRAINTS for r in self.reasons)

    @property
    def taints_ok(self) -> bool:
        """Every blocking taint is tolerated (topology spread's nodeTaintsPolicy)."""
        return not any(r.constraint == "taint" for r in self.reasons)

    @property
    def reason(self) -> str:
        return "; ".join(r.message for r in self.reasons)


# ---------------------------------------------------------------------------------------------
# Label requirements


def _as_str_list(v: Any) -> list[str]:
    if not isinstance(v, list):
        return []
    return [str(x) for x in v if x is not None]


def _int_or_none(v: Any) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s, 10)
        except ValueError:
            return None
    return None


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
    values = _as_str_list(req.get("values"))
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
        have, want = _int_or_none(value), _int_or_none(values[0])
        if have is None or want is None:
            return False
        return have > want if op == "Gt" else have < want
    return False  # an unknown operator is rejected by the API server; it selects nothing


def _describe_requirement(req: Mapping[str, Any]) -> str:
    key = str(req.get("key", ""))
    op = str(req.get("operator", ""))
    values = _as_str_list(req.get("values"))
    if op in ("Exists", "DoesNotExist"):
        return f"{key} {op}"
    return f"{key} {op} [{', '.join(values)}]"


def _describe_value(key: str, value: LabelValue | None) -> str:
    if value is None:
        return f"no label {key}"
    if isinstance(value, _Unknown):
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


# ---------------------------------------------------------------------------------------------
# Taints


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
        have, want = _int_or_none(taint.value), _int_or_none(toleration.get("value"))
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


# ---------------------------------------------------------------------------------------------
# The filter


def fit_pool(spec: Mapping[str, Any], node: NodeClass, gpus: int | None = None) -> PoolFit:
    """Every reason the pod with this spec cannot land on the node class (none: it fits)."""
    labels = node.label_map
    reasons = node_affinity_removals(spec, labels)
    written = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []
    notes: list[str] = []
    for t in untolerated_taints(written, node.taints):
        if not untolerated_taints(implicit_tolerations(spec), (t,)):
            notes.append(f"taint {taint_str(t)} tolerated by the ExtendedResourceToleration admission "
                         f"plugin (the pod requests {t.key}); without that plugin the pod stays Pending")
            continue
        reasons.append(Removal("taint", taint_str(t), f"taint {taint_str(t)} not tolerated"))
    gpus = pod_gpus(dict(spec)) if gpus is None else gpus
    if gpus > node.gpus_per_node:
        reasons.append(Removal(
            "gpus", "gpu",
            f"pod needs {plural(gpus, 'GPU')} on one node, nodes of {node.pool} have {node.gpus_per_node}",
        ))
    if node.nodes <= 0:
        reasons.append(Removal("nodes", "", f"pool {node.pool} has no nodes"))
    return PoolFit(node, tuple(reasons), tuple(notes))


def filter_key(spec: Mapping[str, Any]) -> str:
    """The part of a pod spec the node filters read, as a string: equal keys give equal fits."""
    aff = spec.get("affinity")
    na = aff.get("nodeAffinity") if isinstance(aff, dict) else None
    return repr((spec.get("nodeSelector"), na, spec.get("tolerations"), spec.get("nodeName"), pod_gpus(dict(spec)),
                 extended_resources(spec)))


def fit_pools(
    spec: Mapping[str, Any], nodes: Sequence[NodeClass] | Cluster,
    cache: dict[tuple[str, tuple[NodeClass, ...]], tuple[PoolFit, ...]] | None = None,
) -> tuple[PoolFit, ...]:
    """fit_pool over every node class of a cluster (or a given sequence), sorted by (zone, pool).

    ``cache`` (any dict the caller keeps) shares verdicts between pod specs that differ only in
    what the node filters do not read: thousands of jobs stamped from one template cost one.
    """
    classes = node_classes(nodes) if isinstance(nodes, Cluster) else tuple(nodes)
    classes = tuple(sorted(classes, key=lambda n: (n.zone, n.pool)))
    key = (filter_key(spec), classes) if cache is not None else None
    if cache is not None and key is not None and key in cache:
        return cache[key]
    gpus = pod_gpus(dict(spec))
    out = tuple(fit_pool(spec, n, gpus) for n in classes)
    if cache is not None and key is not None:
        cache[key] = out
    return out


def feasible_zones(fits: Iterable[PoolFit]) -> tuple[str, ...]:
    return tuple(sorted({f.zone for f in fits if f.fits}))


# ---------------------------------------------------------------------------------------------
# Pod label selectors (metav1.LabelSelector), used by pod (anti-)affinity and topology spread


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
        vals = _as_str_list(req.get("values"))
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
    for k in _as_str_list(match_keys):
        if k in labels:
            extra.append({"key": k, "operator": "In", "values": [labels[k]]})
    for k in _as_str_list(mismatch_keys):
        if k in labels:
            extra.append({"key": k, "operator": "NotIn", "values": [labels[k]]})
    if not extra:
        return selector
    exprs = [e for e in (selector.get("matchExpressions") or []) if isinstance(e, dict)]
    return {**selector, "matchExpressions": exprs + extra}
