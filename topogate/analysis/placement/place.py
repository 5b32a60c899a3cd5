"""The placement analysis of a job (``place_job``) and of every job of the paths (``place_all``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topogate.analysis.placement.affinity import resolve_affinity
from topogate.analysis.placement.capacity import check_capacity
from topogate.analysis.placement.feasible import find_unstartable
from topogate.analysis.placement.inputs import inputs_of
from topogate.analysis.placement.kueue import KueueJob
from topogate.analysis.placement.model import JobPlacement
from topogate.analysis.placement.nodes import filter_nodes
from topogate.analysis.placement.peers import PeerIndex, peers_of, template_peers
from topogate.analysis.placement.result import assemble
from topogate.analysis.placement.spread import find_splits
from topogate.analysis.placement.terms import matches_peers
from topogate.analysis.placement.units import colocate
from topogate.analysis.placement.workload import pod_groups_of
from topogate.analysis.scheduling import NodeClass, PoolFit, node_classes
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.podgroups import PodGroupSpec

__all__ = ["place_all", "place_job"]


def place_job(
    job: TrainingJob,
    cluster: Cluster,
    peers: PeerIndex | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    nodes: Sequence[NodeClass] | None = None,
    fit_cache: dict[Any, tuple[PoolFit, ...]] | None = None,
    kueue: KueueJob | None = None,
    pod_groups: Mapping[tuple[str, str], PodGroupSpec] | None = None,
) -> JobPlacement:
    """The placement analysis of one job on one cluster: the steps of the package docstring, in
    its order, each returning its record; the result is assembled from the records.

    ``kueue``: what Kueue's topology-aware scheduling does with the job (``placement.kueue``):
    the pod sets it admits into one zone each are co-location units like those podAffinity
    forms, and their pods can use only the pools of the flavors Kueue may give them.
    ``pod_groups``: the Workload API's PodGroups by (namespace, name) (``placement.workload``):
    one with a zone topology is such a unit too, and a gang larger than its pods never starts."""
    classes = tuple(nodes) if nodes is not None else node_classes(cluster)
    cache = fit_cache if fit_cache is not None else {}
    workload = pod_groups_of(job, cluster.zone_label, pod_groups or {})
    inputs = inputs_of(job, cluster, peers or PeerIndex(), namespace_labels or {}, classes,
                       (*(kueue.units if kueue is not None else ()), *workload.units))
    filtered = filter_nodes(inputs, classes, cache, kueue)  # 1
    affinity = resolve_affinity(inputs)  # 2
    unstartable = find_unstartable(inputs, filtered, affinity)  # 3
    colocation = colocate(inputs, filtered, affinity)  # 4
    splits = find_splits(inputs, filtered, affinity, colocation)  # 5
    capacity = check_capacity(inputs, filtered.pool_fits, colocation.zones)  # 6
    return assemble(inputs, filtered, affinity, unstartable, colocation, splits, capacity, workload.problems)


# ---------------------------------------------------------------------------------------------


def place_all(
    jobs: Sequence[TrainingJob],
    cluster_of: Callable[[TrainingJob], Cluster | None],
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    kueue: Mapping[str, KueueJob] | None = None,
    others: Sequence[Mapping[str, Any]] = (),
    pod_groups: Mapping[tuple[str, str], PodGroupSpec] | None = None,
) -> dict[str, JobPlacement]:
    """Place every job whose cluster is known; jobs see each other's pods as peers, and those of
    ``others``: the manifests of the same cluster, whose workloads outside any job (a Deployment,
    a StatefulSet, ``peers.template_peers``) are peers from the start.

    Two passes: each job with the workloads' pods as peers, then again with every other job of
    the same cluster as peers too (placed by the first pass), so a pod following another job's
    coordinator is resolved. The cost is two placements per job plus indexed selector look-ups.
    """
    by_cluster: dict[str, list[tuple[TrainingJob, Cluster]]] = {}
    for j in jobs:
        c = cluster_of(j)
        if c is not None:
            by_cluster.setdefault(c.name, []).append((j, c))
    out: dict[str, JobPlacement] = {}
    for _, members in sorted(by_cluster.items()):
        cluster = members[0][1]
        classes = node_classes(cluster)
        cache: dict[Any, tuple[PoolFit, ...]] = {}
        ku = kueue or {}
        workloads = template_peers(others, classes, cache)
        alone = PeerIndex(workloads)
        first = [(j, place_job(j, cluster, alone, namespace_labels, classes, cache, ku.get(j.object_id), pod_groups))
                 for j, _ in members]
        index = PeerIndex([*workloads, *peers_of(first)])
        known = set(index.namespaces) | set(namespace_labels or {})
        for j, pl in first:
            # Only a job with a zone-key pod (anti-)affinity term that matches another job's pods
            # can change when peers are known; the others keep their first answer.
            if matches_peers(j, cluster.zone_label, index, known, namespace_labels or {}):
                pl = place_job(j, cluster, index, namespace_labels, classes, cache, ku.get(j.object_id), pod_groups)
            out[j.object_id] = pl
    return dict(sorted(out.items()))
