"""The inventory model: frozen dataclasses, each remembering where in the inventory it came from.

Everything downstream (generators, analysis, audit) reads only these objects, never raw YAML,
so a finding about a generated object can always point back at the inventory entry behind it.
Mappings are stored as sorted tuples of pairs so the model is immutable and hashable.
"""

from __future__ import annotations

import datetime as _dt
import functools
from dataclasses import dataclass, field
from typing import Any

from topogate.core.labels import DEFAULT_ZONE_LABEL, Pairs
from topogate.core.position import NOWHERE, Position

API_VERSION = "topogate.dev/v1alpha1"
KIND = "Inventory"

@dataclass(frozen=True)
class Taint:
    key: str
    effect: str  # NoSchedule | PreferNoSchedule | NoExecute
    value: str = ""
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class PoolDevice:
    """Devices each node of a pool offers through Dynamic Resource Allocation (its ResourceSlices):
    of a DeviceClass by name, or of a driver with attributes a DeviceClass's selector reads."""

    count: int
    device_class: str = ""
    driver: str = ""
    attributes: tuple[tuple[str, str | int | bool], ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Pool:
    name: str
    nodes: int  # an autoscaled pool's most: what its jobs can count on once it has scaled up
    gpus_per_node: int = 0
    labels: Pairs = ()
    taints: tuple[Taint, ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)
    # Kubernetes quantities per node ("96", "500m"; "768Gi"), only where the inventory declares
    # them: Kueue's quotas never invent capacity the inventory does not state.
    cpu_per_node: str | None = None
    memory_per_node: str | None = None
    # `nodes: {min, max}`: the fewest nodes an autoscaler keeps (None: a fixed pool of `nodes`)
    min_nodes: int | None = None
    devices: tuple[PoolDevice, ...] = ()  # DRA devices per node (`devices`)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node

    @property
    def autoscaled(self) -> bool:
        return self.min_nodes is not None

    def holds(self, count: int) -> bool:
        """Whether `count` nodes is a size the inventory allows the pool."""
        return count == self.nodes if self.min_nodes is None else self.min_nodes <= count <= self.nodes

    @property
    def size_text(self) -> str:
        return str(self.nodes) if self.min_nodes is None else f"{self.min_nodes} to {self.nodes} (autoscaled)"

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class Zone:
    name: str
    pools: tuple[Pool, ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)


@dataclass(frozen=True)
class NetworkZone:
    name: str
    zones: tuple[str, ...]
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class CostConfig:
    tag_key: str | None = None
    tag_value: str | None = None
    budget_usd_per_day: float | None = None
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class KueueConfig:
    """Opt-in: generate Kueue's Topology, ResourceFlavors, ClusterQueue and LocalQueues."""

    queue: str  # the ClusterQueue's name and the default LocalQueue name in each namespace
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class AdmissionConfig:
    """Opt-in: a ValidatingAdmissionPolicy that enforces the inventory's placement."""

    validation_actions: tuple[str, ...] = ("Deny",)
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class CiliumConfig:
    """The cluster's `cilium:` block: the agent's settings that change a verdict, as written
    (None where the inventory leaves one unset: the version's default decides)."""

    version: str | None = None
    labels: tuple[str, ...] | None = None  # the `labels` option's entries
    policy_cidr_match_mode: tuple[str, ...] | None = None
    enable_node_selector_labels: bool | None = None
    allow_localhost: str | None = None
    policy_enforcement: str | None = None
    cluster_name: str | None = None
    kube_api_server: str | None = None
    enable_k8s_cluster_network_policy: bool | None = None
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Cluster:
    name: str
    provider: str
    region: str
    zone_label: str = DEFAULT_ZONE_LABEL
    cost: CostConfig | None = None
    zones: tuple[Zone, ...] = ()
    network_zones: tuple[NetworkZone, ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)
    kueue: KueueConfig | None = None
    admission: AdmissionConfig | None = None
    # Trainer runtimes the cluster has that are not among the manifests: a ClusterTrainingRuntime
    # by name, a TrainingRuntime as namespace/name (`trainingRuntimes`).
    training_runtimes: tuple[str, ...] = ()
    cilium: CiliumConfig | None = None  # the agent as configured; None: the newest known version's defaults

    def zone(self, name: str) -> Zone | None:
        return next((z for z in self.zones if z.name == name), None)

    def network_zone(self, name: str) -> NetworkZone | None:
        return next((n for n in self.network_zones if n.name == name), None)

    def network_zone_of(self, zone: str) -> NetworkZone | None:
        return next((n for n in self.network_zones if zone in n.zones), None)


@dataclass(frozen=True)
class PortSpec:
    port: int
    protocol: str = "TCP"
    end_port: int | None = None


@dataclass(frozen=True)
class EgressRule:
    """An extra egress a job needs (object store, package mirror): FQDNs and/or CIDRs on ports."""

    fqdns: tuple[str, ...] = ()
    cidrs: tuple[str, ...] = ()
    ports: tuple[PortSpec, ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)
    fqdn_pos: tuple[Position, ...] = field(default=(), compare=False)  # one per fqdns entry


@dataclass(frozen=True)
class Metrics:
    """Ingress from a monitoring namespace to the job's metrics port."""

    port: int
    namespace: str = "monitoring"
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica type of a job (PyTorchJob Master/Worker, a JobSet replicatedJob, ...),

    as read from the workload's base manifests: how many pods and how many GPUs each asks for.
    """

    name: str
    replicas: int
    gpus_per_pod: int = 0

    @property
    def gpus(self) -> int:
        return self.replicas * self.gpus_per_pod


@dataclass(frozen=True)
class Workload:
    name: str
    namespace: str
    cluster: str
    kind: str
    base: str  # as written, relative to the inventory file
    network_zone: str
    placement: str = "pin"
    zone: str | None = None
    metrics: Metrics | None = None
    egress: tuple[EgressRule, ...] = ()
    groups: tuple[ReplicaGroup, ...] = ()  # filled from the base manifests
    base_dir: str = ""  # absolute path of the base, resolved by the loader
    # The parsed documents of the base kustomization's local resources, in file order, so
    # generators can compute patches against what the user wrote without doing I/O.
    base_docs: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    pos: Position = field(default=NOWHERE, compare=False)
    scheduler: str = "default"
    queue: str | None = None  # LocalQueue name; default: the cluster's `kueue.queue`
    # `deployedBy`: "topogate" (the cluster's tree lists the job's overlay) or "own" (a team's own
    # Application or Flux Kustomization applies the overlay, written apart: core.layout)
    deployed_by: str = "topogate"

    @property
    def own(self) -> bool:
        return self.deployed_by == "own"

    @property
    def object_id(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)


@dataclass(frozen=True)
class Waiver:
    rule: str  # a rule ID (TG101) or name (hard-block)
    object: str  # Kind/namespace/name, or "*"
    reason: str
    expires: _dt.date | None = None
    pos: Position = field(default=NOWHERE, compare=False)


# What `outputs` may name; all of them unless the inventory says otherwise.
OUTPUTS = frozenset({"argocd", "flux", "monitoring"})


@dataclass(frozen=True)
class GitOps:
    repo_url: str
    target_revision: str = "main"
    path: str = "."  # where the generated tree lives inside the repo
    argocd_namespace: str = "argocd"
    argocd_project: str = "default"
    flux_namespace: str = "flux-system"
    destination_server: str = "https://kubernetes.default.svc"
    flux_secret_ref: str | None = None  # Secret with credentials for a private repository
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class DoorEnd:
    """One side of a door: named workloads or a whole network zone (`from`), a service's pods
    (namespace + labels) or a whole network zone (`to`)."""

    workloads: tuple[str, ...] = ()  # workload `name` or `namespace/name`, of the door's cluster
    network_zone: str | None = None
    namespace: str | None = None
    labels: Pairs = ()
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class Door:
    """A declared, least-privilege opening across a boundary: `source` may open connections to
    `target` on `ports`, nothing else. Generated on both sides; check proves nothing wider."""

    name: str
    cluster: str
    source: DoorEnd
    target: DoorEnd
    ports: tuple[PortSpec, ...] = ()
    pos: Position = field(default=NOWHERE, compare=False)


@dataclass(frozen=True)
class _WorkloadIndex:
    """Lookups of an inventory's workloads; the first one wins where keys repeat, as the
    scans these replace found it."""

    by_cluster: dict[str, tuple[Workload, ...]]
    by_place: dict[tuple[str, str, str], tuple[Workload, ...]]
    by_id: dict[tuple[str, str, str], Workload]

    @staticmethod
    def of(workloads: tuple[Workload, ...]) -> _WorkloadIndex:
        by_cluster: dict[str, list[Workload]] = {}
        by_place: dict[tuple[str, str, str], list[Workload]] = {}
        by_id: dict[tuple[str, str, str], Workload] = {}
        for w in workloads:
            by_cluster.setdefault(w.cluster, []).append(w)
            by_place.setdefault((w.cluster, w.namespace, w.name), []).append(w)
            by_id.setdefault((w.kind, w.namespace, w.name), w)
        return _WorkloadIndex({c: tuple(ws) for c, ws in by_cluster.items()},
                              {k: tuple(ws) for k, ws in by_place.items()}, by_id)


@dataclass(frozen=True)
class Inventory:
    name: str
    path: str  # the inventory file as given (used in headers and findings)
    clusters: tuple[Cluster, ...] = ()
    workloads: tuple[Workload, ...] = ()
    waivers: tuple[Waiver, ...] = ()
    gitops: GitOps | None = None
    root: str = ""  # directory that holds the inventory file (the repository root for `base`)
    pos: Position = field(default=NOWHERE, compare=False)
    doors: tuple[Door, ...] = ()
    runbook_url: str = ""  # runbookURL: the alerts' runbook page ("" = none given)
    # `outputs`: the GitOps outputs generate writes beside the clusters' tree
    outputs: frozenset[str] = OUTPUTS

    def cluster(self, name: str) -> Cluster | None:
        return self._clusters_by_name.get(name)

    @functools.cached_property
    def _clusters_by_name(self) -> dict[str, Cluster]:
        # Asked for every workload by every generator: a scan of the clusters each time. The
        # first of a name wins, as the scan's did (reversed, so it is written last).
        return {c.name: c for c in reversed(self.clusters)}

    def workloads_of(self, cluster: str) -> tuple[Workload, ...]:
        return self._index.by_cluster.get(cluster, ())

    def workload_at(self, cluster: str, namespace: str, name: str,
                    kind: str | None = None) -> Workload | None:
        """The first workload of a cluster with this namespace and name (and kind, if given)."""
        return next((w for w in self._index.by_place.get((cluster, namespace, name), ())
                     if kind is None or w.kind == kind), None)

    def workload_of(self, kind: str, namespace: str, name: str) -> Workload | None:
        """The first workload with this Kind/namespace/name (any cluster)."""
        return self._index.by_id.get((kind, namespace, name))

    @functools.cached_property
    def _index(self) -> _WorkloadIndex:
        # Asked once per object and flow of a check: a scan each was quadratic in workloads.
        # Computed on first use and kept beside the fields (not one of them: no effect on ==).
        return _WorkloadIndex.of(self.workloads)

    def queue_of(self, w: Workload) -> str | None:
        """The LocalQueue a Kueue workload is submitted to; None when Kueue does not place it."""
        c = self.cluster(w.cluster)
        if w.scheduler != "kueue" or c is None or c.kueue is None:
            return None
        return w.queue or c.kueue.queue
    def doors_of(self, cluster: str) -> tuple[Door, ...]:
        return tuple(d for d in self.doors if d.cluster == cluster)

    def door_sources(self, d: Door) -> tuple[Workload, ...]:
        """The workloads a door lets out: those it names, or every one of its network zone."""
        return tuple(w for w in self.workloads_of(d.cluster)
                     if w.name in d.source.workloads or f"{w.namespace}/{w.name}" in d.source.workloads
                     or (d.source.network_zone is not None
                                                         and w.network_zone == d.source.network_zone))

    def workload(self, ref: str) -> Workload | None:
        """Find a workload by `name`, `namespace/name` or `Kind/namespace/name`."""
        for w in self.workloads:
            if ref in (w.name, f"{w.namespace}/{w.name}", w.object_id):
                return w
        return None

    def pin_zones(self, w: Workload) -> tuple[str, ...]:
        """The zones a workload's pods may use: its pinned zone, or for `follow` the zones of its
        network zone where the whole job fits.

        `follow` lets whichever pod is scheduled first choose the zone and every other pod join
        it. A zone where some group cannot run (no GPU node big enough, too few GPUs for the job)
        must not be offered: a pod that needs no GPU could start there first and strand the rest.
        """
        c = self.cluster(w.cluster)
        nz = c.network_zone(w.network_zone) if c else None
        if c is None or nz is None:
            return ()
        if w.placement == "pin":
            if w.zone:
                return (w.zone,)
            return nz.zones[:1] if len(nz.zones) == 1 else ()
        return follow_zones(c, nz, w)


def follow_zones(cluster: Cluster, nz: NetworkZone, w: Workload) -> tuple[str, ...]:
    """The zones of a network zone where the whole job fits: a node big enough for its largest
    GPU pod, and enough GPUs in the zone for all of them (a co-located job uses one zone)."""
    need_per_pod = max((g.gpus_per_pod for g in w.groups), default=0)

    def whole_job_fits(name: str) -> bool:
        zone = cluster.zone(name)
        pools = [p for p in zone.pools if p.nodes > 0] if zone else []
        per_node = max((p.gpus_per_node for p in pools), default=0)
        return bool(pools) and per_node >= need_per_pod and sum(p.gpus for p in pools) >= w.gpus

    return tuple(z for z in sorted(nz.zones) if whole_job_fits(z))


def kueue_groupable(groups: tuple[ReplicaGroup, ...]) -> bool:
    """Whether Kueue can fit all of a job's pod sets into one topology domain: a single pod
    set, or a PodSet group of exactly two of which one is a single pod (the grouping rule Kueue's
    job webhooks enforce; docs/kueue.md)."""
    if len(groups) == 1:
        return True
    return len(groups) == 2 and min(g.replicas for g in groups) == 1

__all__ = ["API_VERSION", "AdmissionConfig", "CiliumConfig", "Cluster", "CostConfig", "Door", "DoorEnd",
           "EgressRule", "GitOps", "Inventory", "KIND", "KueueConfig", "Metrics", "NetworkZone", "OUTPUTS",
           "Pool", "PoolDevice", "PortSpec", "ReplicaGroup", "Taint", "Waiver", "Workload", "Zone",
           "follow_zones", "kueue_groupable"]
