"""The same object twice among PATHs: an error, never a silent pick.

Two copies of one object (the same API group, kind, namespace and name, in the same cluster)
are what kustomize refuses ("may not add resource with an already registered id"): a base
passed beside the overlay built on it, a hand-written copy of a generated job, two files of
one directory. Only the kinds the analysis reads count (training jobs and their runtimes, pod
templates, network policies, Namespaces, Kueue's objects): a second GitRepository or
PrometheusRule changes no verdict (and the generated tree has one of those per cluster, outside
`clusters/<name>/`). The analysis keeps the first copy in the order of the PATHs and reports every
other, naming both places, so the verdict cannot depend on the order of the arguments without
the run failing. A copy in a cluster's manifests and one that applies to every cluster (no
cluster claims it) are duplicates too: both would apply in that cluster.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topogate.analysis.map.cluster import POLICY_KINDS
from topogate.core.position import Position
from topogate.k8s.jobs import RUNTIME_KINDS
from topogate.k8s.kinds import KUEUE_KINDS, PLAIN_POD_TEMPLATES, TRAINING_KINDS
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import display

_READ = frozenset((*TRAINING_KINDS, *RUNTIME_KINDS, *PLAIN_POD_TEMPLATES, *POLICY_KINDS, "Namespace",
                   *KUEUE_KINDS))


@dataclass(frozen=True)
class Duplicate:
    object: str  # Kind/namespace/name (Kind/name when cluster-scoped)
    pos: Position  # the copy that is not analysed
    first: Position  # the copy that is
    # the kustomization roots that built each copy (first's, then this one's; "" for a file read
    # as it is): two roots rendering one object are two owners, each of which a GitOps tool
    # (an Argo CD Application, a Flux Kustomization) would apply
    roots: tuple[str, str] = ("", "")


def _identity(o: K8sObject) -> tuple[str, str, str, str]:
    group = o.api_version.rpartition("/")[0] if "/" in o.api_version else ""
    return group, o.kind, o.namespace, o.name


def _root(o: K8sObject) -> str:
    return display(o.built_from) if o.built_from else ""


def without_duplicates(by_cluster: Mapping[str | None, Sequence[K8sObject]]
                       ) -> tuple[dict[str | None, list[K8sObject]], tuple[Duplicate, ...]]:
    """The objects of each cluster with every later copy of an object left out, and the copies."""
    found: list[Duplicate] = []
    shared: dict[tuple[str, str, str, str], K8sObject] = {}
    kept: dict[str | None, list[K8sObject]] = {}
    for cluster in sorted(by_cluster, key=lambda c: (c is not None, c or "")):  # shared first
        seen = dict(shared) if cluster is not None else shared
        out: list[K8sObject] = []
        for o in by_cluster[cluster]:
            key = _identity(o)
            if not o.kind or not o.name or o.kind not in _READ:
                out.append(o)  # nothing to compare, or nothing the verdict reads
                continue
            first = seen.get(key)
            if first is not None:
                found.append(Duplicate(o.ref, o.pos, first.pos, (_root(first), _root(o))))
                continue
            seen[key] = o
            out.append(o)
        kept[cluster] = out
    return kept, tuple(found)


__all__ = ["Duplicate", "without_duplicates"]
