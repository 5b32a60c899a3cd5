"""Kueue and admission settings: a cluster's `kueue:` and `admission:` sections, and the checks
of a workload placed by Kueue."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topogate.core.labels import DEFAULT_ZONE_LABEL
from topogate.inventory.model import AdmissionConfig, Cluster, KueueConfig, Workload, Zone, kueue_groupable
from topogate.inventory.problems import Problem

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath


def read_kueue(chk: Checker, base: YPath, c: dict[str, Any], zones: list[Zone]) -> KueueConfig | None:
    k = c.get("kueue")
    if not isinstance(k, dict) or not isinstance(k.get("queue"), str):
        return None
    # One resource group covers every resource, so every flavor must list the same ones: a
    # pool without a declared CPU would get a quota of 0 and be locked out of the queue.
    pools = [p for z in zones for p in z.pools]
    for what, attr in (("cpuPerNode", "cpu_per_node"), ("memoryPerNode", "memory_per_node")):
        have = sorted(f"{z.name}/{p.name}" for z in zones for p in z.pools if getattr(p, attr))
        if have and len(have) != len(pools):
            chk.err(base + ("kueue",), (
                f"cluster '{c.get('name')}' uses Kueue and declares {what} on {', '.join(have)} "
                f"but not on every pool; its ClusterQueue covers a resource for all pools or "
                f"none: declare {what} on every pool or on none"))
    _check_flavors(chk, base, c, zones)
    zone_label = c.get("zoneLabel")
    if isinstance(zone_label, str) and len(zone_label) > _MAX_NODE_LABEL:
        # A label key may be 317 characters (prefix 253, '/', name 63); Kueue's Topology
        # takes 316 as a level's nodeLabel, and the generated Topology's first level is this.
        chk.err(base + ("zoneLabel",), (
            f"zoneLabel is {len(zone_label)} characters; cluster '{c.get('name')}' uses Kueue, "
            f"whose Topology takes a node label of at most {_MAX_NODE_LABEL}: use a shorter "
            "label key, or remove `kueue:`"))
    return KueueConfig(k["queue"], chk.loc.at(base + ("kueue",)))


# Limits of Kueue's v1beta2 CRDs: a resource group holds 1-64 flavors, a ResourceFlavor at most
# 8 nodeLabels and 8 tolerations. Refused here, at the pool, not by the API server after merge.
_MAX_FLAVORS, _MAX_NODE_LABELS, _MAX_TOLERATIONS = 64, 8, 8
_MAX_NODE_LABEL = 316  # Topology.spec.levels[].nodeLabel maxLength


def _check_flavors(chk: Checker, base: YPath, c: dict[str, Any], zones: list[Zone]) -> None:
    """Each pool becomes a ResourceFlavor `<zone>-<pool>` in the cluster's ClusterQueue."""
    name = c.get("name")
    pools = [(z, p) for z in zones for p in z.pools]
    if not pools or len(pools) > _MAX_FLAVORS:
        chk.err(base + ("kueue",), (
            f"cluster '{name}' uses Kueue but has {len(pools)} node pools; its ClusterQueue "
            f"takes 1 to {_MAX_FLAVORS} (one ResourceFlavor per pool): "
            + ("declare the pools under `zones:`" if not pools else "merge pools or remove `kueue:`")))
        return
    zone_label = c.get("zoneLabel") if isinstance(c.get("zoneLabel"), str) else DEFAULT_ZONE_LABEL
    seen: dict[str, str] = {}
    for z, p in pools:
        flavor = f"{z.name}-{p.name}"
        if flavor in seen:
            chk.problems.append(Problem(p.pos, (
                f"pool '{p.name}' of zone '{z.name}' and pool {seen[flavor]} both become Kueue "
                f"ResourceFlavor '{flavor}'; rename one of the pools")))
        seen.setdefault(flavor, f"'{p.name}' of zone '{z.name}'")
        n_labels = len({k for k, _ in p.labels} | {zone_label})
        if n_labels > _MAX_NODE_LABELS:
            chk.problems.append(Problem(p.pos, (
                f"pool '{p.name}' of zone '{z.name}' has {n_labels} node labels with the zone "
                f"label; a Kueue ResourceFlavor takes at most {_MAX_NODE_LABELS}: remove labels")))
        if len(p.taints) > _MAX_TOLERATIONS:
            chk.problems.append(Problem(p.pos, (
                f"pool '{p.name}' of zone '{z.name}' has {len(p.taints)} taints; a Kueue "
                f"ResourceFlavor tolerates at most {_MAX_TOLERATIONS}: remove taints")))


def read_admission(chk: Checker, base: YPath, c: dict[str, Any]) -> AdmissionConfig | None:
    a = c.get("admission")
    if not isinstance(a, dict):
        return None
    actions = a.get("validationActions", ["Deny"])
    if not isinstance(actions, list):
        return None
    if "Deny" in actions and "Warn" in actions:
        chk.err(base + ("admission", "validationActions"), (
            "validationActions cannot hold both Deny and Warn (Kubernetes rejects the binding): "
            "use [Deny] to enforce, or [Warn, Audit] while rolling out"))
    return AdmissionConfig(tuple(str(x) for x in actions), chk.loc.at(base + ("admission",)))


def check_kueue_workload(chk: Checker, base: YPath, w: Workload, cluster: Cluster | None) -> None:
    if w.queue is not None and w.scheduler != "kueue":
        chk.err(base + ("queue",), (f"workload '{w.name}' names a queue but is not placed by "
                                     "Kueue; add `scheduler: kueue` or remove `queue:`"))
    if w.scheduler != "kueue" or cluster is None:
        return
    if cluster.kueue is None:
        chk.err(base + ("scheduler",), (
            f"workload '{w.name}' uses scheduler 'kueue' but cluster '{cluster.name}' has no "
            "`kueue:` section; add `kueue: {queue: NAME}` to the cluster (topogate then "
            "generates its Topology, ResourceFlavors and queues) or remove `scheduler:`"))
        return
    # Kueue fits a PodSet group (exactly two pod sets, one of them a single pod) into one
    # topology domain; pod sets outside a group are fitted independently. For `follow`
    # nothing else keeps the job in one zone (docs/kueue.md).
    if w.placement == "follow" and w.groups and not kueue_groupable(w.groups):
        shape = ", ".join(f"{g.name} x{g.replicas}" for g in w.groups)
        chk.err(base, (
            f"workload '{w.name}' uses scheduler 'kueue' with placement 'follow', but Kueue "
            f"can keep only one pod set, or two with one of a single pod, in one zone; this "
            f"job has {shape}: use `placement: pin` with `zone:`"))
