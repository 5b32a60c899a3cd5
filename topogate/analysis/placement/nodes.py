"""Step 1 of the package docstring, the node filters: which pools each group's pods pass, and so
in which zones they can land before any relation between pods is considered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.kueue import KueueJob, flavor_fits, shared_flavor_problem
from topogate.analysis.placement.terms import required_terms
from topogate.analysis.scheduling import HOSTNAME_LABEL, NodeClass, PoolFit, fit_pools

__all__ = ["NodeFilters", "filter_nodes"]


@dataclass(frozen=True)
class NodeFilters:
    # Every group of the job, with pods or not: each pool with its verdict (Kueue's flavors applied).
    pool_fits: Mapping[str, tuple[PoolFit, ...]]
    # Every group: the zones of the pools it passes; for a group with pods, only those whose
    # pools also carry every topologyKey of its required podAffinity.
    zones: Mapping[str, frozenset[str]]
    # Groups with pods that pass some pool, none of which carries their podAffinity keys: why.
    missing_topology_key: Mapping[str, str]
    kueue_problems: tuple[str, ...]  # why Kueue never admits the job (its PodSet groups' flavor)


def filter_nodes(
    inputs: Inputs, classes: Sequence[NodeClass], cache: dict[Any, tuple[PoolFit, ...]], kueue: KueueJob | None,
) -> NodeFilters:
    job = inputs.job
    fits: dict[str, tuple[PoolFit, ...]] = {g.name: fit_pools(g.spec, classes, cache, g.devices.per_pod)
                                             for g in job.groups}
    kueue_problems: tuple[str, ...] = ()
    if kueue is not None:
        # A pod set Kueue admits can use only the pools of the flavors it may get (placement.kueue).
        for n, flavors in kueue.flavors:
            g = job.group(n)
            if g is not None and n in fits:
                fits[n] = flavor_fits(g.spec, flavors, classes, cache)
        kueue_problems = tuple(shared_flavor_problem(job, kueue, classes, cache))
    zones = {n: frozenset(f.zone for f in pools if f.fits) for n, pools in fits.items()}
    missing: dict[str, str] = {}
    for g in inputs.with_pods:
        terms = required_terms(g.spec, "podAffinity")
        if not terms:
            continue
        # "All topology labels must exist on the node" (InterPodAffinity Filter): a pool without a
        # term's key is out. Every node has a hostname, which the inventory does not list.
        keys = {str(t.get("topologyKey", "")) for t in terms} - {HOSTNAME_LABEL}
        keyed = frozenset(f.zone for f in fits[g.name] if f.fits and all(k in f.node.label_map for k in keys))
        if zones[g.name] and not keyed:
            missing[g.name] = (f"{g.name}: no pool it fits carries the podAffinity topologyKey "
                               f"{', '.join(sorted(keys))}: it stays Pending")
        zones[g.name] = keyed
    return NodeFilters(fits, zones, missing, kueue_problems)
