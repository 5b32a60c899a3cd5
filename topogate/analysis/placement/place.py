"""The placement analysis of a job (``place_job``) and of every job of the paths (``place_all``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topogate.analysis.placement.affinity import resolve_affinity
from topogate.analysis.placement.capacity import check_capacity
from topogate.analysis.placement.feasible import find_unstartable
from topogate.analysis.placement.inputs import inputs_of
from topogate.analysis.placement.kueue import KueueJob
from topogate.analysis.placement.model import JobPlacement
from topogate.analysis.placement.nodes import filter_nodes
from topogate.analysis.placement.peers import (
    UNPLACED_KINDS,
    PeerIndex,
    peers_of,
    template_peers,
    workload_jobs,
)
from topogate.analysis.placement.result import assemble
from topogate.analysis.placement.schedulers import other_schedulers
from topogate.analysis.placement.spread import find_splits
from topogate.analysis.placement.terms import matches_peers
from topogate.analysis.placement.trailing import trailing_across
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
    hypernodes: Sequence[Mapping[str, Any]] = (),
    trailing: tuple[frozenset[str], ...] = (),
) -> JobPlacement:
    """The placement analysis of one job on one cluster: the steps of the package docstring, in
    its order, each returning its record; the result is assembled from the records.

    ``nodes``: the cluster's node classes (default: its pools, devices matched to no DeviceClass
    but by name).
    ``kueue``: what Kueue's topology-aware scheduling does with the job (``placement.kueue``):
    the pod sets it admits into one zone each are co-location units like those podAffinity
    forms, and their pods can use only the pools of the flavors Kueue may give them.
    ``pod_groups``: the Workload API's PodGroups by (namespace, name) (``placement.workload``):
    one with a zone topology is such a unit too, and a gang larger than its pods never starts.
    ``hypernodes``: Volcano's HyperNodes among the manifests (``placement.schedulers``: a Volcano
    Job's hard network topology holds it in one zone where they show it).
    ``trailing``: sets of the job's groups held in one zone through other jobs' pods
    (``placement.trailing``)."""
    classes = tuple(nodes) if nodes is not None else node_classes(cluster)
    cache = fit_cache if fit_cache is not None else {}
    workload = pod_groups_of(job, cluster.zone_label, pod_groups or {})
    others = other_schedulers(job, classes, cluster.zone_label, hypernodes)
    inputs = inputs_of(job, cluster, peers or PeerIndex(), namespace_labels or {}, classes,
                       (*(kueue.units if kueue is not None else ()), *workload.units, *others.units), trailing)
    filtered = filter_nodes(inputs, classes, cache, kueue)  # 1
    affinity = resolve_affinity(inputs)  # 2
    unstartable = find_unstartable(inputs, filtered, affinity)  # 3
    colocation = colocate(inputs, filtered, affinity, unstartable)  # 4
    splits = find_splits(inputs, filtered, affinity, colocation)  # 5
    capacity = check_capacity(inputs, filtered.pool_fits, colocation.zones)  # 6
    placed = assemble(inputs, filtered, affinity, unstartable, colocation, splits, capacity, workload.problems)
    return dataclasses.replace(placed, scheduler_notes=others.notes) if others.notes else placed


# ---------------------------------------------------------------------------------------------


def place_all(
    jobs: Sequence[TrainingJob],
    cluster_of: Callable[[TrainingJob], Cluster | None],
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    kueue: Mapping[str, KueueJob] | None = None,
    others: Sequence[Mapping[str, Any]] = (),
    pod_groups: Mapping[tuple[str, str], PodGroupSpec] | None = None,
    device_classes: Mapping[str, Mapping[str, Any]] | None = None,
    hypernodes: Sequence[Mapping[str, Any]] = (),
) -> dict[str, JobPlacement]:
    """Place every job whose cluster is known; jobs see each other's pods as peers, and those of
    ``others``: the manifests of the same cluster, whose workloads outside any job (a Deployment,
    a StatefulSet) are placed like a job of one group (``peers.workload_jobs``: their own
    affinity counts too), a DaemonSet's or CronJob's taken where their node filters let them.

    Rounds: every job and workload with the fixed peers only, then again, with every other one as
    peers (placed by the round before), each whose pod (anti-)affinity can involve another's
    pods, until no placement changes (a chain of jobs following each other takes a round per
    link; at most MAX_ROUNDS). The cost is one placement per job, plus one per round for those
    few, plus indexed selector look-ups.
    """
    by_cluster: dict[str, list[tuple[TrainingJob, Cluster]]] = {}
    for j in jobs:
        c = cluster_of(j)
        if c is not None:
            by_cluster.setdefault(c.name, []).append((j, c))
    out: dict[str, JobPlacement] = {}
    for _, members in sorted(by_cluster.items()):
        out.update(_place_cluster([j for j, _ in members], members[0][1], namespace_labels or {}, kueue or {},
                                  others, pod_groups, device_classes or {}, hypernodes))
    return dict(sorted(out.items()))


def _place_cluster(jobs: Sequence[TrainingJob], cluster: Cluster, ns_labels: Mapping[str, Mapping[str, str]],
                   kueue: Mapping[str, KueueJob], others: Sequence[Mapping[str, Any]],
                   pod_groups: Mapping[tuple[str, str], PodGroupSpec] | None,
                   device_classes: Mapping[str, Mapping[str, Any]],
                   hypernodes: Sequence[Mapping[str, Any]]) -> dict[str, JobPlacement]:
    classes = node_classes(cluster, device_classes)
    cache: dict[Any, tuple[PoolFit, ...]] = {}
    fixed = template_peers([o for o in others if o.get("kind") in UNPLACED_KINDS], classes, cache)
    everyone = [*jobs, *workload_jobs([o for o in others if o.get("kind") not in UNPLACED_KINDS])]

    across: dict[str, tuple[frozenset[str], ...]] = {}

    def place(j: TrainingJob, index: PeerIndex) -> JobPlacement:
        return place_job(j, cluster, index, ns_labels, classes, cache, kueue.get(j.object_id), pod_groups, hypernodes,
                         across.get(j.object_id, ()))

    placed = {j.object_id: place(j, PeerIndex(fixed)) for j in everyone}
    # Which jobs' terms can involve another's pods, judged against every group (reach or not).
    first = [*fixed, *peers_of((j, placed[j.object_id]) for j in everyone)]
    every = PeerIndex(first, keep_unplaced=True)
    known = set(every.namespaces) | set(ns_labels)
    linked = [j for j in everyone if matches_peers(j, every, known, ns_labels)]
    across.update(trailing_across(everyone, every, known, ns_labels, cluster.zone_label))
    for round_ in range(MAX_ROUNDS if linked else 0):
        index = PeerIndex(first if round_ == 0 else [*fixed, *peers_of((j, placed[j.object_id]) for j in everyone)])
        again = {j.object_id: place(j, index) for j in linked}
        if all(again[k] == placed[k] for k in again):
            break
        placed.update(again)
    return {j.object_id: placed[j.object_id] for j in jobs}

MAX_ROUNDS = 6
