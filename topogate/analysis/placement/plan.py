"""The working state of one job's placement analysis, filled in step by step by ``place_job``.

Each step (terms, feasibility, units, capacity, spread, result) reads what earlier steps left
here and adds its own part; the names follow the module docstring of the package.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.placement.peers import PeerIndex
from topogate.analysis.placement.terms import Term
from topogate.analysis.placement.units import _Units
from topogate.analysis.scheduling import NodeClass, PoolFit, fit_pools, node_classes
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import JobGroup, TrainingJob


@dataclass
class _Plan:
    job: TrainingJob
    cluster: str
    zone_key: str
    all_zones: set[str]
    peers: PeerIndex
    ns_labels: Mapping[str, Mapping[str, str]]
    known_ns: set[str]
    live: list[JobGroup]  # groups with pods
    by_name: dict[str, JobGroup]
    names: list[str]  # sorted names of the live groups
    fits: dict[str, tuple[PoolFit, ...]]  # every group, live or not
    node_zones: dict[str, set[str]]  # zones passing the node filters (and affinity topology keys)
    # Affinity (terms step): the effective required podAffinity term when it ties zones, the
    # effective term whatever its keys, why a group has no pool with its terms' keys, and the
    # required podAntiAffinity terms on the zone key.
    aff: dict[str, list[Term]] = field(default_factory=dict)
    need: dict[str, Term | None] = field(default_factory=dict)
    missing_key: dict[str, str] = field(default_factory=dict)
    anti: dict[str, list[Term]] = field(default_factory=dict)
    repels: dict[str, set[str]] = field(default_factory=dict)  # anti-affinity, both ways
    peer_repel: dict[str, set[str]] = field(default_factory=dict)  # zones taken by repelled peers
    anti_pairs: frozenset[tuple[str, str]] = frozenset()
    self_anti: set[str] = field(default_factory=set)
    unsched: dict[str, list[str]] = field(default_factory=dict)  # per group: why it cannot run
    # Zone sets and co-location units (units step).
    zones: dict[str, set[str]] = field(default_factory=dict)
    units: _Units = field(default_factory=lambda: _Units(()))
    # Zones a unit takes away from a member that has no podAffinity of its own: the scheduler may
    # still put that member there (it knows nothing of who follows it), leaving the rest Pending.
    unit_removed: dict[str, set[str]] = field(default_factory=dict)
    single: set[str] = field(default_factory=set)  # groups provably held in one zone
    risks: list[str] = field(default_factory=list)  # pending risks
    job_unsched: list[str] = field(default_factory=list)  # why the job as a whole cannot run
    splits: dict[str, list[str]] = field(default_factory=dict)  # per group: what splits it
    # Groups Kueue's topology-aware scheduling fits into one zone, per unit (placement.kueue).
    kueue_units: tuple[frozenset[str], ...] = ()


def new_plan(
    job: TrainingJob,
    cluster: Cluster,
    peers: PeerIndex,
    ns_labels: Mapping[str, Mapping[str, str]],
    nodes: Sequence[NodeClass] | None,
    fit_cache: dict[Any, tuple[PoolFit, ...]] | None,
) -> _Plan:
    """The inputs of the analysis and the node filters' answer per group."""
    classes = tuple(nodes) if nodes is not None else node_classes(cluster)
    live = [g for g in job.groups if g.pods > 0]
    by_name: dict[str, JobGroup] = {g.name: g for g in live}
    cache = fit_cache if fit_cache is not None else {}
    fits: dict[str, tuple[PoolFit, ...]] = {g.name: fit_pools(g.spec, classes, cache) for g in job.groups}
    return _Plan(
        job=job,
        cluster=cluster.name,
        zone_key=cluster.zone_label,
        all_zones={n.zone for n in classes},
        peers=peers,
        ns_labels=ns_labels,
        known_ns=set(peers.namespaces) | set(ns_labels) | {job.namespace},
        live=live,
        by_name=by_name,
        names=sorted(by_name),
        fits=fits,
        node_zones={n: {f.zone for f in fits[n] if f.fits} for n in fits},
    )
