"""What the placement analysis of one job reads and never changes: the job, the cluster's zones,
the known peers and namespaces. Every step (the package docstring numbers them) takes it."""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topogate.analysis.placement.peers import PeerIndex
from topogate.analysis.scheduling import NodeClass
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import JobGroup, TrainingJob

__all__ = ["Inputs", "inputs_of"]


@dataclass(frozen=True)
class Inputs:
    job: TrainingJob
    cluster: str
    zone_key: str
    all_zones: frozenset[str]  # zones of every pool of the cluster
    peers: PeerIndex  # pods of other jobs that affinity terms may select
    namespace_labels: Mapping[str, Mapping[str, str]]
    known_namespaces: frozenset[str]  # the namespaces a namespaceSelector can select
    # The groups with pods in the job's order. A malformed job may repeat a name; the steps that
    # read a group's own terms walk this, as the analysis always has, so the last one wins.
    with_pods: tuple[JobGroup, ...]
    groups: Mapping[str, JobGroup]  # the same groups by name
    names: tuple[str, ...]  # their names, sorted: the order every step walks them in
    # Groups placed into one zone together before their pods exist: Kueue's pod-set groups, the
    # groups of a PodGroup with a zone topology (placement.workload).
    zone_units: tuple[frozenset[str], ...]
    classes: tuple[NodeClass, ...] = ()  # the cluster's node classes (pools), sorted by (zone, pool)
    # Groups whose pods trail the first of a set spanning other jobs (placement.trailing): one zone.
    trailing: tuple[frozenset[str], ...] = ()

    @functools.cached_property
    def placed_whole(self) -> frozenset[str]:
        """The members of every zone unit: their zone is picked for their unit as a whole (by
        Kueue or the scheduler's PodGroup), before any of their pods is bound. Asked of every
        group by several steps: worked out once per job."""
        return frozenset(n for u in self.zone_units for n in u)


def inputs_of(
    job: TrainingJob,
    cluster: Cluster,
    peers: PeerIndex,
    namespace_labels: Mapping[str, Mapping[str, str]],
    classes: Sequence[NodeClass],
    zone_units: tuple[frozenset[str], ...],
    trailing: tuple[frozenset[str], ...] = (),
) -> Inputs:
    with_pods = tuple(g for g in job.groups if g.pods > 0)
    groups = {g.name: g for g in with_pods}
    return Inputs(
        job=job,
        cluster=cluster.name,
        zone_key=cluster.zone_label,
        all_zones=frozenset(n.zone for n in classes),
        peers=peers,
        namespace_labels=namespace_labels,
        known_namespaces=frozenset(peers.namespaces) | frozenset(namespace_labels) | {job.namespace},
        with_pods=with_pods,
        groups=groups,
        names=tuple(sorted(groups)),
        zone_units=zone_units,
        classes=tuple(classes),
        trailing=trailing,
    )
