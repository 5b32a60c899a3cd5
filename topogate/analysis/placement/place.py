"""The placement analysis of a job (``place_job``) and of every job of the paths (``place_all``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topogate.analysis.placement.affinity import resolve_affinity, resolve_anti_affinity
from topogate.analysis.placement.capacity import group_capacity, job_capacity, unit_capacity
from topogate.analysis.placement.feasible import deadlocks, node_and_affinity_reasons, pending_risks
from topogate.analysis.placement.kueue import KueueJob, flavor_fits, shared_flavor_problem
from topogate.analysis.placement.model import JobPlacement
from topogate.analysis.placement.peers import PeerIndex, peers_of
from topogate.analysis.placement.plan import new_plan
from topogate.analysis.placement.result import assemble
from topogate.analysis.placement.spread import splits
from topogate.analysis.placement.terms import matches_peers
from topogate.analysis.placement.units import narrow_zones_and_units
from topogate.analysis.scheduling import NodeClass, PoolFit, node_classes
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import TrainingJob


def place_job(
    job: TrainingJob,
    cluster: Cluster,
    peers: PeerIndex | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    nodes: Sequence[NodeClass] | None = None,
    fit_cache: dict[Any, tuple[PoolFit, ...]] | None = None,
    kueue: KueueJob | None = None,
) -> JobPlacement:
    """The placement analysis of one job on one cluster (see the package docstring).

    ``kueue``: what Kueue's topology-aware scheduling does with the job (``placement.kueue``):
    the pod sets it admits into one zone each are co-location units like those podAffinity
    forms, and their pods can use only the pools of the flavors Kueue may give them."""
    p = new_plan(job, cluster, peers or PeerIndex(), namespace_labels or {}, nodes, fit_cache)
    if kueue is not None:
        p.kueue_units = kueue.units
        classes = tuple(nodes) if nodes is not None else node_classes(cluster)
        cache = fit_cache if fit_cache is not None else {}
        for n, flavors in kueue.flavors:
            g = job.group(n)
            if g is not None and n in p.fits:
                p.fits[n] = flavor_fits(g.spec, flavors, classes, cache)
                p.node_zones[n] = {f.zone for f in p.fits[n] if f.fits}
        p.job_unsched += shared_flavor_problem(job, kueue, classes, cache)
    resolve_affinity(p)
    resolve_anti_affinity(p)
    node_and_affinity_reasons(p)
    deadlocks(p)
    narrow_zones_and_units(p)  # 1 + 2: zone sets and co-location units
    unit_capacity(p)  # 4a: a GPU unit must fit in one zone
    pending_risks(p)
    splits(p)  # 3
    group_capacity(p)  # 4b
    capacity = job_capacity(p)
    return assemble(p, capacity)


# ---------------------------------------------------------------------------------------------


def place_all(
    jobs: Sequence[TrainingJob],
    cluster_of: Callable[[TrainingJob], Cluster | None],
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    kueue: Mapping[str, KueueJob] | None = None,
) -> dict[str, JobPlacement]:
    """Place every job whose cluster is known; jobs see each other's pods as peers.

    Two passes: each job alone, then again with every other job of the same cluster as peers
    (placed by the first pass), so a pod following another job's coordinator is resolved. The
    cost is two placements per job plus indexed selector look-ups.
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
        first = [(j, place_job(j, cluster, None, namespace_labels, classes, cache, ku.get(j.object_id)))
                 for j, _ in members]
        index = PeerIndex(peers_of(first))
        known = set(index.namespaces) | set(namespace_labels or {})
        for j, pl in first:
            # Only a job with a zone-key pod (anti-)affinity term that matches another job's pods
            # can change when peers are known; the others keep their first answer.
            if matches_peers(j, cluster.zone_label, index, known, namespace_labels or {}):
                pl = place_job(j, cluster, index, namespace_labels, classes, cache, ku.get(j.object_id))
            out[j.object_id] = pl
    return dict(sorted(out.items()))
