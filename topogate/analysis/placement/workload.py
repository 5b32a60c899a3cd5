"""The Workload API's PodGroups of a job (``topogate.k8s.podgroups``): which of its groups one
PodGroup's topology constraint holds in one zone, and which gang can never be admitted.

A PodGroup whose topology key is the zone key (or the hostname: one node is in one zone) makes
the groups whose pods name it one co-location unit, as a Kueue pod-set group does: the scheduler
picks one domain for the whole PodGroup. Its gang ``minCount`` is then judged with the unit (all
its pods must fit in one zone, ``capacity.fit_gpu_units``), and on its own: a gang that needs
more pods than the job makes naming it never starts. Pods of other jobs that name the same
PodGroup are not counted.

The topology constraint needs the TopologyAwareWorkloadScheduling feature gate (alpha in
Kubernetes 1.37, off by default; the Workload API itself needs GenericWorkload): where it is off
the API server drops ``schedulingConstraints`` from a PodGroup it stores (the PodGroup registry
strategy), and nothing holds the pods together. A manifest that writes the constraint is taken
at its word, as the cluster it is written for has the gate on."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.scheduling import HOSTNAME_LABEL
from topogate.core.words import plural
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.podgroups import PodGroupSpec, pod_group_name

__all__ = ["PodGroups", "pod_groups_of"]


@dataclass(frozen=True)
class PodGroups:
    units: tuple[frozenset[str], ...]  # groups of the job one PodGroup holds in one zone
    problems: tuple[str, ...]  # gangs that are never admitted


def pod_groups_of(job: TrainingJob, zone_key: str,
                  pod_groups: Mapping[tuple[str, str], PodGroupSpec]) -> PodGroups:
    members: dict[tuple[str, str], list[str]] = {}
    pods: dict[tuple[str, str], int] = {}
    for g in job.groups:
        key = (job.namespace, pod_group_name(g.spec))
        if g.pods > 0 and key in pod_groups:
            members.setdefault(key, []).append(g.name)
            pods[key] = pods.get(key, 0) + g.pods
    units: list[frozenset[str]] = []
    problems: list[str] = []
    for key in sorted(members):
        pg, names = pod_groups[key], sorted(members[key])
        if any(k in (zone_key, HOSTNAME_LABEL) for k in pg.topology_keys):
            units.append(frozenset(names))
        if pg.min_count > pods[key]:
            problems.append(f"PodGroup {pg.namespace}/{pg.name} is a gang of minCount {pg.min_count}, but only "
                            f"{plural(pods[key], 'pod')} ({', '.join(names)}) name it: the scheduler binds none")
    return PodGroups(tuple(units), tuple(problems))
