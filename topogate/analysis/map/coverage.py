"""What the analysis did not look at: pod templates that belong to no training job.

`check` analyses training jobs (the kinds in ``kinds.KINDS``, TrainJobs through their runtimes,
and plain workloads grouped by the ``topogate.dev/group`` pod-template label). Every other pod
template among the manifests is invisible to placement and reachability, so an "ok" says
nothing about it. This module lists them, so the report can say so and how to group them.

A pod template is found where the kind is known (Deployment, StatefulSet, ReplicaSet,
DaemonSet, Job, CronJob, Pod) and, for any other kind, wherever a ``template`` holds a pod spec
with ``containers`` (an Argo Rollout, a RayJob, a training kind topogate does not know).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from topogate.analysis.netpolicy import POLICY_KINDS
from topogate.core.position import Position
from topogate.k8s.jobs import GROUP_LABEL, GROUPABLE_KINDS, RUNTIME_KINDS
from topogate.k8s.kinds import PLAIN_POD_TEMPLATES, TRAINING_KINDS, Path, dig
from topogate.k8s.objects import K8sObject

# Objects that hold pod templates but run nothing themselves.
_NOT_RUN = ("PodTemplate", *RUNTIME_KINDS)
_SEARCH_DEPTH = 8


@dataclass(frozen=True)
class Ungrouped:
    """A pod template that belongs to no training job."""

    object: str  # Kind/namespace/name
    kind: str
    pos: Position
    groupable: bool  # can the topogate.dev/group label make it part of a job?


def _has_pod_spec(tpl: Any) -> bool:
    spec = tpl.get("spec") if isinstance(tpl, dict) else None
    return isinstance(spec, dict) and isinstance(spec.get("containers"), list)


def _generic_templates(obj: Any, path: Path = (), depth: int = 0) -> Iterator[Path]:
    """Paths of every ``template`` holding a pod spec inside an object of an unknown kind."""
    if depth > _SEARCH_DEPTH:
        return
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            v = obj[k]
            if k == "template" and _has_pod_spec(v):
                yield (*path, str(k))
            else:
                yield from _generic_templates(v, (*path, str(k)), depth + 1)
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _generic_templates(v, (*path, i), depth + 1)


def _has_template_key(obj: Any, depth: int = 0) -> bool:
    """Whether a ``template`` key is anywhere `_generic_templates` looks (to the same depth):
    without one it finds nothing, and most objects (every policy) have none. No sorting and
    no paths, so the answer costs a fraction of the walk it spares."""
    if depth > _SEARCH_DEPTH:
        return False
    if isinstance(obj, dict):
        if "template" in obj:
            return True
        return any(_has_template_key(v, depth + 1) for v in obj.values() if isinstance(v, (dict, list)))
    if isinstance(obj, list):
        return any(_has_template_key(v, depth + 1) for v in obj if isinstance(v, (dict, list)))
    return False


def _template_paths(o: K8sObject) -> list[Path]:
    if o.kind in PLAIN_POD_TEMPLATES:
        path = PLAIN_POD_TEMPLATES[o.kind]
        tpl = dig(o.obj, path) if path else o.obj
        return [path] if _has_pod_spec(tpl) else []
    spec = o.obj.get("spec")
    if not _has_template_key(spec):
        return []
    return list(_generic_templates(spec, ("spec",)))


def _grouped(o: K8sObject, path: Path) -> bool:
    tpl = dig(o.obj, path) if path else o.obj
    md = tpl.get("metadata") if isinstance(tpl, dict) else None
    labels = md.get("labels") if isinstance(md, dict) else None
    return isinstance(labels, dict) and bool(labels.get(GROUP_LABEL))


def ungrouped_templates(objects: Iterable[K8sObject]) -> tuple[Ungrouped, ...]:
    """Every object with a pod template that no training job includes, once per object."""
    seen: dict[str, Ungrouped] = {}
    for o in objects:
        if o.kind in TRAINING_KINDS or o.kind in _NOT_RUN:
            continue
        paths = _template_paths(o)
        if not paths:
            continue
        groupable = o.kind in GROUPABLE_KINDS
        if groupable and _grouped(o, paths[0]):
            continue
        oid = f"{o.kind}/{o.namespace or 'default'}/{o.name}"
        pos = o.locate(paths[0]) if paths[0] else o.pos
        seen.setdefault(oid, Ungrouped(oid, o.kind, pos, groupable))
    return tuple(seen[k] for k in sorted(seen))



# Keys that, in a spec, say which pods or nodes an object is about: a policy-like object.
_SELECTOR_KEYS = ("podSelector", "endpointSelector", "nodeSelector")
# Kinds the analysis reads, or knows to be without effect on who talks to whom or where pods
# land (a Service selects the pods it load-balances to; a PodDisruptionBudget and a
# HorizontalPodAutoscaler the pods they count).
_READ_OR_INERT = frozenset((
    *TRAINING_KINDS, *RUNTIME_KINDS, *PLAIN_POD_TEMPLATES, "PodTemplate",
    *POLICY_KINDS, "Namespace",
    "Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue", "PodGroup",
    "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler", "VerticalPodAutoscaler",
    "PodMonitor", "ServiceMonitor"))


@dataclass(frozen=True)
class Unread:
    """An object of a kind topogate does not read that says which pods or nodes it is about."""

    object: str
    kind: str
    key: str  # the selector key found (podSelector, endpointSelector, nodeSelector)
    pos: Position


def _selector_key(obj: Any, depth: int = 0) -> tuple[Path, str] | None:
    if depth > _SEARCH_DEPTH:
        return None
    if isinstance(obj, dict):
        for k in sorted(obj, key=str):
            if k in _SELECTOR_KEYS:
                return (str(k),), str(k)
            found = _selector_key(obj[k], depth + 1)
            if found is not None:
                return (str(k), *found[0]), found[1]
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            found = _selector_key(v, depth + 1)
            if found is not None:
                return (i, *found[0]), found[1]
    return None


def unread_objects(objects: Iterable[K8sObject]) -> tuple[Unread, ...]:
    """Objects whose kind topogate does not read but whose spec selects pods or nodes (an
    AdminNetworkPolicy, a CiliumEgressGatewayPolicy, a PodGroup of a scheduler plugin, ...)."""
    seen: dict[str, Unread] = {}
    for o in objects:
        if o.kind in _READ_OR_INERT or not isinstance(o.obj.get("spec"), dict):
            continue
        found = _selector_key(o.obj["spec"])
        if found is None:
            continue
        path, key = found
        oid = f"{o.kind}/{o.namespace}/{o.name}" if o.namespace else f"{o.kind}/{o.name}"
        seen.setdefault(oid, Unread(oid, o.kind, key, o.locate(("spec", *path))))
    return tuple(seen[k] for k in sorted(seen))


__all__ = ["Ungrouped", "Unread", "ungrouped_templates", "unread_objects"]
