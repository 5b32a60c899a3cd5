"""The proofs over every pod: network-zone boundaries, declared doors, who may reach a job, and
the flows a job needs.

A proof reads one cluster's compiled policies and jobs through `ClusterView`, the part of the
map (analysis.map.cluster.ClusterMap) it needs, so the proofs sit below the map that runs them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

from topogate.analysis.locate import RuleLocator
from topogate.analysis.netpolicy import PolicySet
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.objects import K8sObject


class ClusterView(Protocol):
    """One cluster as the proofs see it."""

    @property
    def pset(self) -> PolicySet: ...

    @property
    def jobs(self) -> Sequence[TrainingJob]: ...

    @property
    def by_ref(self) -> Mapping[tuple[str, str, str], K8sObject]: ...

    @property
    def locate_rule(self) -> RuleLocator: ...


__all__ = ["ClusterView"]
