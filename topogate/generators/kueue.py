"""Kueue (v1beta2) from the inventory: topology-aware scheduling that knows the zones.

Per cluster with `kueue:` (paths relative to OUT):

    clusters/<c>/kueue/kustomization.yaml
    clusters/<c>/kueue/topology.yaml        Topology `topogate`: levels <zoneLabel>, then
                                            kubernetes.io/hostname (the lowest level must be
                                            the hostname for TAS to place single pods)
    clusters/<c>/kueue/resourceflavors.yaml one ResourceFlavor `<zone>-<pool>` per pool
    clusters/<c>/kueue/clusterqueue.yaml    ClusterQueue `<kueue.queue>`
    clusters/<c>/kueue/localqueues.yaml     a LocalQueue per namespace (and queue name) that
                                            runs a Kueue workload of the cluster

ResourceFlavor: `nodeLabels` are the pool's labels plus `<zoneLabel>: <zone>`, so a flavor is
one pool in one zone; `tolerations` are the pool's taints tolerated (Kueue adds a flavor's
tolerations to the pods it admits there); `topologyName` makes the flavor a TAS flavor.

ClusterQueue: ONE resource group whose flavors are every pool, in zone/pool order. Its covered
resources are `nvidia.com/gpu` (nominal quota nodes x gpusPerNode) plus `cpu` and `memory` when
the inventory declares them (nodes x cpuPerNode / memoryPerNode; the loader insists on all
pools or none, because every flavor of a group lists every covered resource). One group,
because Kueue assigns a flavor per resource group: with CPU in a group of its own, a PodSet
group's coordinator could take a CPU flavor in one zone while its workers take a GPU flavor in
another. `namespaceSelector` admits exactly the namespaces that run the cluster's Kueue
workloads (Kueue's default, null, admits none).

Without cpuPerNode/memoryPerNode the queue covers GPUs only. Kueue's default quota check
(BlockUndeclared) then refuses pods that request CPU or memory; docs/kueue.md says how to
configure Kueue for that (`resources.excludeResourcePrefixes`) and why IgnoreUndeclared is not
enough for a coordinator that requests only CPU.
"""

from __future__ import annotations

import re
from typing import Any

from topogate.core.labels import HOSTNAME_LABEL, MANAGED_BY_LABEL, NAMESPACE_NAME_LABEL
from topogate.generators import cilium
from topogate.generators.base import OutputFile
from topogate.inventory.model import Cluster, Inventory, Pool, Workload
from topogate.k8s.kueue import API_VERSION
from topogate.k8s.quantity import GPU_RESOURCES

TOPOLOGY_NAME = "topogate"
# The resource the ClusterQueues quote pools' GPUs in.
GPU_RESOURCE = GPU_RESOURCES[0]
_QUANTITY = re.compile(r"^([0-9]+)([A-Za-z]*)$")


def kueue_dir(cluster: str) -> str:
    return f"clusters/{cluster}/kueue"


def flavor_name(zone: str, pool: Pool) -> str:
    return f"{zone}-{pool.name}"


def _meta(name: str, namespace: str | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace:
        md["namespace"] = namespace
    md["labels"] = {MANAGED_BY_LABEL: "topogate"}
    return md


def times(quantity: str, n: int) -> str:
    """`n` nodes' worth of a per-node quantity, in the quantity's own unit ("96" x 4 = "384",
    "768Gi" x 4 = "3072Gi"): exact, with no rounding through another unit."""
    m = _QUANTITY.match(quantity)
    if m is None:  # the schema admits only integer quantities with a suffix
        raise ValueError(f"not an integer quantity: {quantity!r}")
    return f"{int(m.group(1)) * n}{m.group(2)}"


def topology(cluster: Cluster) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": "Topology", "metadata": _meta(TOPOLOGY_NAME),
            "spec": {"levels": [{"nodeLabel": cluster.zone_label}, {"nodeLabel": HOSTNAME_LABEL}]}}


def _toleration(key: str, value: str, effect: str) -> dict[str, str]:
    if value:
        return {"key": key, "operator": "Equal", "value": value, "effect": effect}
    return {"key": key, "operator": "Exists", "effect": effect}


def resource_flavor(cluster: Cluster, zone: str, pool: Pool) -> dict[str, Any]:
    labels = dict(sorted({**pool.label_map, cluster.zone_label: zone}.items()))
    spec: dict[str, Any] = {"nodeLabels": labels}
    tols = sorted((t.key, t.value, t.effect) for t in pool.taints)
    if tols:
        spec["tolerations"] = [_toleration(*t) for t in tols]
    spec["topologyName"] = TOPOLOGY_NAME
    return {"apiVersion": API_VERSION, "kind": "ResourceFlavor",
            "metadata": _meta(flavor_name(zone, pool)), "spec": spec}


def covered_resources(cluster: Cluster) -> list[str]:
    pools = [p for z in cluster.zones for p in z.pools]
    out = []
    if pools and all(p.cpu_per_node for p in pools):
        out.append("cpu")
    if pools and all(p.memory_per_node for p in pools):
        out.append("memory")
    return out + [GPU_RESOURCE]


def _quotas(pool: Pool, covered: list[str]) -> list[dict[str, Any]]:
    per_node = {"cpu": pool.cpu_per_node, "memory": pool.memory_per_node}
    out = []
    for r in covered:
        q = str(pool.gpus) if r == GPU_RESOURCE else times(str(per_node[r]), pool.nodes)
        out.append({"name": r, "nominalQuota": q})
    return out


def kueue_workloads(inv: Inventory, cluster: Cluster) -> list[Workload]:
    return [w for w in inv.workloads_of(cluster.name) if inv.queue_of(w)]


def cluster_queue(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    assert cluster.kueue is not None
    covered = covered_resources(cluster)
    flavors = [{"name": flavor_name(z.name, p), "resources": _quotas(p, covered)}
               for z in sorted(cluster.zones, key=lambda z: z.name)
               for p in sorted(z.pools, key=lambda p: p.name)]
    spec: dict[str, Any] = {}
    namespaces = sorted({w.namespace for w in kueue_workloads(inv, cluster)})
    if namespaces:
        spec["namespaceSelector"] = {"matchExpressions": [
            {"key": NAMESPACE_NAME_LABEL, "operator": "In", "values": namespaces}]}
    spec["resourceGroups"] = [{"coveredResources": covered, "flavors": flavors}]
    return {"apiVersion": API_VERSION, "kind": "ClusterQueue",
            "metadata": _meta(cluster.kueue.queue), "spec": spec}


def local_queues(inv: Inventory, cluster: Cluster) -> list[dict[str, Any]]:
    assert cluster.kueue is not None
    pairs = sorted({(w.namespace, str(inv.queue_of(w))) for w in kueue_workloads(inv, cluster)})
    return [{"apiVersion": API_VERSION, "kind": "LocalQueue", "metadata": _meta(q, ns),
             "spec": {"clusterQueue": cluster.kueue.queue}} for ns, q in pairs]


def render(inv: Inventory) -> list[OutputFile]:
    out: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        if c.kueue is None:
            continue
        d = kueue_dir(c.name)
        flavors = tuple(resource_flavor(c, z.name, p)
                        for z in sorted(c.zones, key=lambda z: z.name)
                        for p in sorted(z.pools, key=lambda p: p.name))
        queues = tuple(local_queues(inv, c))
        files = ["topology.yaml", "resourceflavors.yaml", "clusterqueue.yaml"]
        if queues:
            files.append("localqueues.yaml")
        out += [
            OutputFile(f"{d}/kustomization.yaml", (cilium.kustomization(files),), source=c.kueue.pos),
            OutputFile(f"{d}/topology.yaml", (topology(c),), source=c.kueue.pos),
            OutputFile(f"{d}/resourceflavors.yaml", flavors, source=c.kueue.pos),
            OutputFile(f"{d}/clusterqueue.yaml", (cluster_queue(inv, c),), source=c.kueue.pos),
        ]
        if queues:
            out.append(OutputFile(f"{d}/localqueues.yaml", queues, source=c.kueue.pos))
    return out
