"""Kueue's configuration among the manifests: which queue a job is in and what that queue can
give it (kueue.x-k8s.io, any version: the fields read here are the same in v1beta1 and v1beta2).

A job names a LocalQueue with the ``kueue.x-k8s.io/queue-name`` label on the job object; without
it, Kueue puts the job in the LocalQueue named ``default`` of its namespace when one exists
(``ApplyDefaultLocalQueue`` in pkg/controller/jobframework/defaults.go). The LocalQueue names a
ClusterQueue (``spec.clusterQueue``), whose resource groups list ResourceFlavors; a flavor with
``spec.topologyName`` is a TAS flavor, and its Topology's ``spec.levels`` are the node labels
that topology requests may name, highest first. Domains nest: a domain of a lower level lies
inside one domain of every level above it, so a request at or below the zone level keeps a pod
set in one zone.

Everything is read with its position, so findings can point at the object or field to fix.
A link of the chain that is not among the manifests is reported as such (``missing``): the
analysis never guesses what a queue it cannot see would do.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from topogate.core.position import Position
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.k8s.kueue import GROUP, QUEUE_LABEL
from topogate.k8s.objects import K8sObject

DEFAULT_QUEUE = "default"


@dataclass(frozen=True)
class Topology:
    name: str
    levels: tuple[str, ...]  # node labels, highest level first
    pos: Position


@dataclass(frozen=True)
class Flavor:
    name: str
    topology: str  # "" when the flavor has no topologyName (not a TAS flavor)
    node_labels: tuple[tuple[str, str], ...]
    pos: Position
    # Kueue adds these to the pods it admits on the flavor; kept as sorted (field, value) pairs.
    tolerations: tuple[tuple[tuple[str, str], ...], ...] = ()

    def toleration_dicts(self) -> list[dict[str, str]]:
        return [dict(t) for t in self.tolerations]


@dataclass(frozen=True)
class ClusterQueue:
    name: str
    flavors: tuple[str, ...]  # every flavor of every resource group, in order
    pos: Position


@dataclass(frozen=True)
class LocalQueue:
    namespace: str
    name: str
    cluster_queue: str
    pos: Position

    @property
    def ref(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Chain:
    """What a job's queue resolves to. ``missing`` names the first link not among the manifests
    (then the later fields are partial); ``flavors`` keeps the ClusterQueue's order."""

    local_queue: LocalQueue | None
    cluster_queue: ClusterQueue | None
    flavors: tuple[Flavor, ...]
    topologies: dict[str, Topology]
    missing: str = ""

    def topology_of(self, f: Flavor) -> Topology | None:
        return self.topologies.get(f.topology) if f.topology else None


def _is_kueue(o: K8sObject) -> bool:
    return o.kind in KUEUE_KINDS and o.api_version.split("/", 1)[0] == GROUP


def _spec(o: K8sObject) -> dict[str, Any]:
    s = o.obj.get("spec")
    return s if isinstance(s, dict) else {}


def _levels(o: K8sObject) -> tuple[str, ...]:
    levels = _spec(o).get("levels")
    return tuple(str(lv.get("nodeLabel", "")) for lv in levels or [] if isinstance(lv, dict))


def _flavor_names(o: K8sObject) -> tuple[str, ...]:
    out: list[str] = []
    for rg in _spec(o).get("resourceGroups") or []:
        for f in (rg.get("flavors") or []) if isinstance(rg, dict) else []:
            if isinstance(f, dict) and f.get("name"):
                out.append(str(f["name"]))
    return tuple(dict.fromkeys(out))


class KueueConfig:
    """The Kueue objects of one cluster, by name (the first of a name wins, as with jobs)."""

    def __init__(self, objects: Iterable[K8sObject]) -> None:
        self.topologies: dict[str, Topology] = {}
        self.flavors: dict[str, Flavor] = {}
        self.cluster_queues: dict[str, ClusterQueue] = {}
        self.local_queues: dict[tuple[str, str], LocalQueue] = {}
        for o in objects:
            if not _is_kueue(o):
                continue
            spec = _spec(o)
            if o.kind == "Topology":
                self.topologies.setdefault(o.name, Topology(o.name, _levels(o), o.pos))
            elif o.kind == "ResourceFlavor":
                labels = spec.get("nodeLabels")
                pairs = tuple(sorted((str(k), str(v)) for k, v in labels.items())) if isinstance(labels, dict) else ()
                tols = tuple(tuple(sorted((str(k), str(v)) for k, v in t.items()))
                             for t in spec.get("tolerations") or [] if isinstance(t, dict))
                self.flavors.setdefault(o.name, Flavor(o.name, str(spec.get("topologyName") or ""), pairs,
                                                       o.pos, tols))
            elif o.kind == "ClusterQueue":
                self.cluster_queues.setdefault(o.name, ClusterQueue(o.name, _flavor_names(o), o.pos))
            else:
                ns = o.namespace or "default"
                self.local_queues.setdefault(
                    (ns, o.name), LocalQueue(ns, o.name, str(spec.get("clusterQueue") or ""), o.pos))

    @property
    def empty(self) -> bool:
        return not (self.topologies or self.flavors or self.cluster_queues or self.local_queues)

    def queue_of(self, namespace: str, job_labels: dict[str, Any]) -> str:
        """The LocalQueue name Kueue files the job under ("" when it does not manage it)."""
        named = job_labels.get(QUEUE_LABEL)
        if named:
            return str(named)
        if (namespace, DEFAULT_QUEUE) in self.local_queues:
            return DEFAULT_QUEUE
        return ""

    def resolve(self, namespace: str, queue: str) -> Chain:
        lq = self.local_queues.get((namespace, queue))
        if lq is None:
            return Chain(None, None, (), {}, f"LocalQueue {namespace}/{queue}")
        cq = self.cluster_queues.get(lq.cluster_queue)
        if cq is None:
            return Chain(lq, None, (), {}, f"ClusterQueue {lq.cluster_queue or '(none named)'}")
        flavors: list[Flavor] = []
        for name in cq.flavors:
            f = self.flavors.get(name)
            if f is None:
                return Chain(lq, cq, tuple(flavors), {}, f"ResourceFlavor {name}")
            flavors.append(f)
        tops: dict[str, Topology] = {}
        for f in flavors:
            if f.topology and f.topology not in tops:
                t = self.topologies.get(f.topology)
                if t is None:
                    return Chain(lq, cq, tuple(flavors), tops, f"Topology {f.topology}")
                tops[f.topology] = t
        return Chain(lq, cq, tuple(flavors), tops)
