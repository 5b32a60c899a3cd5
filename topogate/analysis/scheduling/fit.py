"""The filter: every reason a pod spec cannot land on a node class, over all classes of a cluster.

GPUs.  A pod's GPU request (``kinds.pod_gpus``: extended resources are whole devices on one
node) must fit in one node: ``gpus <= gpus_per_node``. A pool with zero nodes holds nothing.
A taint that only the ExtendedResourceToleration admission plugin tolerates does not remove the
pool; the fit carries a note saying it rests on that plugin.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topogate.analysis.scheduling.node_affinity import node_affinity_removals
from topogate.analysis.scheduling.nodes import NodeClass, PoolFit, Removal, node_classes
from topogate.analysis.scheduling.taints import (
    extended_resources,
    implicit_tolerations,
    taint_str,
    untolerated_taints,
)
from topogate.core.words import plural
from topogate.inventory.model import Cluster
from topogate.k8s.kinds import pod_gpus


def fit_pool(spec: Mapping[str, Any], node: NodeClass, gpus: int | None = None,
             devices: Mapping[str, int] | None = None) -> PoolFit:
    """Every reason the pod with this spec cannot land on the node class (none: it fits).

    ``devices``: DRA devices the pod claims, per DeviceClass (``k8s.dra``): each must be on one
    node (a claim's devices are allocated from the node's ResourceSlices, DynamicResources Filter)."""
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
    offered = dict(node.devices)
    for cls, need in sorted((devices or {}).items()):
        if need > offered.get(cls, 0):
            reasons.append(Removal(
                "devices", cls, f"pod claims {plural(need, 'device')} of DeviceClass {cls} on one node (DRA), nodes of "
                                f"{node.pool} offer {offered.get(cls, 0)}"))
    if node.nodes <= 0:
        reasons.append(Removal("nodes", "", f"pool {node.pool} has no nodes"))
    dra = sum(offered.get(c, 0) for c in devices) + (node.gpus_per_node if gpus else 0) if devices else None
    return PoolFit(node, tuple(reasons), tuple(notes), dra)


def filter_key(spec: Mapping[str, Any]) -> str:
    """The part of a pod spec the node filters read, as a string: equal keys give equal fits."""
    aff = spec.get("affinity")
    na = aff.get("nodeAffinity") if isinstance(aff, dict) else None
    return repr((spec.get("nodeSelector"), na, spec.get("tolerations"), spec.get("nodeName"), pod_gpus(dict(spec)),
                 extended_resources(spec)))


def fit_pools(
    spec: Mapping[str, Any], nodes: Sequence[NodeClass] | Cluster,
    cache: dict[Any, tuple[PoolFit, ...]] | None = None,
    devices: Mapping[str, int] | None = None,
) -> tuple[PoolFit, ...]:
    """fit_pool over every node class of a cluster (or a given sequence), sorted by (zone, pool).

    ``cache`` (any dict the caller keeps) shares verdicts between pod specs that differ only in
    what the node filters do not read: thousands of jobs stamped from one template cost one.
    """
    classes = node_classes(nodes) if isinstance(nodes, Cluster) else tuple(nodes)
    classes = tuple(sorted(classes, key=lambda n: (n.zone, n.pool)))
    claimed = tuple(sorted((devices or {}).items()))
    key = (filter_key(spec), claimed, classes) if cache is not None else None
    if cache is not None and key is not None and key in cache:
        return cache[key]
    gpus = pod_gpus(dict(spec))
    out = tuple(fit_pool(spec, n, gpus, dict(claimed)) for n in classes)
    if cache is not None and key is not None:
        cache[key] = out
    return out


def feasible_zones(fits: Iterable[PoolFit]) -> tuple[str, ...]:
    return tuple(sorted({f.zone for f in fits if f.fits}))
