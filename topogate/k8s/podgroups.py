"""The Kubernetes Workload API's PodGroup (scheduling.k8s.io/v1beta1, Kubernetes 1.37), as the
placement analysis reads it.

A pod names its group in ``spec.schedulingGroup.podGroupName`` (a PodGroup of its namespace).
The PodGroup's ``spec.schedulingConstraints.topology[].key`` is a node label whose one domain
holds every pod of the group; ``spec.schedulingPolicy.gang.minCount`` is how many of its pods
must be placeable at once before the scheduler binds any (``basic`` instead: no gang). Field
names as in k8s.io/api scheduling/v1beta1 (PodGroupSpec, TopologyConstraint,
GangSchedulingPolicy) and core/v1 (PodSchedulingGroup).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

POD_GROUP_KIND = "PodGroup"
POD_GROUP_API_GROUP = "scheduling.k8s.io"
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class PodGroupSpec:
    namespace: str
    name: str
    topology_keys: tuple[str, ...]  # node labels whose one domain holds all its pods
    min_count: int  # gang: pods that must be placeable at once; 0 without a gang


def is_pod_group(obj: Mapping[str, Any]) -> bool:
    """A PodGroup of the Workload API (another API group's PodGroup, a scheduler plugin's, is not)."""
    return (obj.get("kind") == POD_GROUP_KIND
            and str(obj.get("apiVersion", "")).split("/", 1)[0] == POD_GROUP_API_GROUP)


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def read_pod_groups(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], PodGroupSpec]:
    """Every Workload API PodGroup among the objects, by (namespace, name)."""
    out: dict[tuple[str, str], PodGroupSpec] = {}
    for o in objects:
        if not is_pod_group(o):
            continue
        md, spec = _dict(o.get("metadata")), _dict(o.get("spec"))
        ns, name = str(md.get("namespace") or DEFAULT_NAMESPACE), str(md.get("name", ""))
        topology = _dict(spec.get("schedulingConstraints")).get("topology")
        keys = tuple(str(t["key"]) for t in topology if isinstance(t, dict) and t.get("key")) \
            if isinstance(topology, list) else ()
        raw = _dict(_dict(spec.get("schedulingPolicy")).get("gang")).get("minCount")
        min_count = raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else 0
        out.setdefault((ns, name), PodGroupSpec(ns, name, keys, min_count))
    return out


def pod_group_name(spec: Mapping[str, Any]) -> str:
    """The PodGroup a pod spec names (``spec.schedulingGroup.podGroupName``), or ""."""
    name = _dict(spec.get("schedulingGroup")).get("podGroupName")
    return str(name) if isinstance(name, str) else ""


__all__ = ["POD_GROUP_KIND", "PodGroupSpec", "is_pod_group", "pod_group_name", "read_pod_groups"]
