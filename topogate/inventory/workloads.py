"""Checks of one workload: its cluster, network zone and placement, its egress, and whether its
job can ever fit in the GPUs the placement allows."""

from __future__ import annotations

import ipaddress
import re
from typing import TYPE_CHECKING, Any

from topogate.core.words import plural
from topogate.inventory.bases import groups_of, read_base
from topogate.inventory.kueue import check_kueue_workload
from topogate.inventory.model import (
    Cluster,
    EgressRule,
    Metrics,
    NetworkZone,
    PortSpec,
    ReplicaGroup,
    Workload,
    follow_zones,
)
from topogate.inventory.values import DNS, as_int, dicts, seq
from topogate.k8s import kinds

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath


def read_workload(chk: Checker, i: int, w: dict[str, Any], clusters: dict[str, Cluster]) -> Workload | None:
    base: YPath = ("workloads", i)
    name, ns = str(w.get("name", "")), str(w.get("namespace", ""))
    kind = str(w.get("kind", ""))
    cname = w.get("cluster")
    cluster = clusters.get(str(cname)) if isinstance(cname, str) else None
    if isinstance(cname, str) and cluster is None:
        chk.err(base + ("cluster",), (
            f"workload '{name}' names cluster '{cname}', which the inventory does not define; "
            f"known clusters: {', '.join(sorted(clusters)) or 'none'}"))
    nzname = w.get("networkZone")
    nz = cluster.network_zone(str(nzname)) if cluster and isinstance(nzname, str) else None
    if cluster and isinstance(nzname, str) and nz is None:
        chk.err(base + ("networkZone",), (
            f"workload '{name}' names network zone '{nzname}', which cluster '{cluster.name}' does "
            f"not define; known: {', '.join(sorted(n.name for n in cluster.network_zones)) or 'none'}"))
    placement = w.get("placement", "pin")
    zone = w.get("zone")
    if nz is not None and isinstance(zone, str) and zone not in nz.zones:
        chk.err(base + ("zone",), (
            f"workload '{name}' is pinned to zone '{zone}', which is not in its network zone "
            f"'{nz.name}' ({', '.join(nz.zones)}); pick one of those zones"))
    if nz is not None and placement == "pin" and zone is None and len(nz.zones) != 1:
        chk.err(base, (
            f"workload '{name}' uses placement 'pin' but network zone '{nz.name}' has "
            f"{len(nz.zones)} zones ({', '.join(nz.zones)}); add `zone:` with one of them, or "
            "use `placement: follow` to keep the job together in whichever zone it starts"))
    if placement == "follow" and isinstance(zone, str):
        chk.err(base + ("zone",), (
            f"workload '{name}' uses placement 'follow', which chooses the zone at run time; "
            "remove `zone:` or use `placement: pin`"))

    if kind == "TrainJob" and DNS.match(name) and not _RFC1035.match(name):
        chk.err(base + ("name",), (
            f"workload '{name}' is a TrainJob, whose name the Trainer's CRD requires to start "
            "with a letter (an RFC 1035 label): rename the job and the workload"))
    base_rel = w.get("base")
    base_dir, docs = "", ()
    groups: tuple[ReplicaGroup, ...] = ()
    if isinstance(base_rel, str) and base_rel:
        base_dir, docs = (read_base(chk, base + ("base",), base_rel)
                          if chk.reads_base(str(cname or ""), base_rel) else ("", ()))
        if base_dir and kind in kinds.TRAINING_KINDS and DNS.match(name):
            groups = groups_of(chk, base + ("base",), docs, kind, name, base_rel)

    metrics = None
    m = w.get("metrics")
    if isinstance(m, dict) and isinstance(m.get("port"), int):
        metrics = Metrics(int(m["port"]), str(m.get("namespace", "monitoring")),
                          chk.loc.at(base + ("metrics",)))
    egress = _egress(chk, base, w)
    scheduler, queue = str(w.get("scheduler", "default")), w.get("queue")
    wl = Workload(
        name, ns, str(cname or ""), kind, str(base_rel or ""), str(nzname or ""),
        str(placement), zone if isinstance(zone, str) else None, metrics, egress, groups,
        base_dir, docs, chk.loc.at(base), scheduler, queue if isinstance(queue, str) else None,
        str(w.get("deployedBy", "topogate")))
    check_kueue_workload(chk, base, wl, cluster)
    # Capacity only means something once the cluster and the placement are well-formed;
    # otherwise it repeats an earlier problem in other words.
    placement_ok = not (isinstance(zone, str) and zone not in nz.zones) if nz else False
    if (cluster and nz is not None and groups and placement_ok
            and not chk.has_problem_under(("clusters", chk.cluster_index.get(cluster.name, -1)))):
        capacity(chk, base, wl, cluster, nz)
    return wl


_RFC1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_PREFIX_LENGTH = re.compile(r"^(0|[1-9][0-9]{0,2})$")


def _is_cidr(text: str) -> bool:
    """An address and a prefix length in range, the length written without leading zeros:
    Python reads `/08` as 8, but Cilium's agent parses prefixes with Go's netip, which refuses
    it (and `%zone`, which the schema's pattern already keeps out)."""
    addr, sep, length = text.partition("/")
    if not sep or not _PREFIX_LENGTH.match(length) or "%" in addr:
        return False
    try:
        ipaddress.ip_network(text, strict=False)
    except ValueError:
        return False
    return True


def _egress(chk: Checker, base: YPath, w: dict[str, Any]) -> tuple[EgressRule, ...]:
    """The egress rules of a workload; a CIDR or a port range Cilium would refuse is a problem."""
    egress = tuple(
        EgressRule(
            tuple(str(x) for x in seq(e.get("fqdns"))),
            tuple(str(x) for x in seq(e.get("cidrs"))),
            tuple(PortSpec(as_int(p.get("port")), str(p.get("protocol", "TCP")),
                           as_int(p["endPort"]) if "endPort" in p else None)
                  for p in dicts(e.get("ports"))),
            chk.loc.at(base + ("egress", ei)),
            tuple(chk.loc.at(base + ("egress", ei, "fqdns", fi))
                  for fi, _ in enumerate(seq(e.get("fqdns")))))
        for ei, e in enumerate(dicts(w.get("egress"))))
    for ei, e in enumerate(dicts(w.get("egress"))):
        if not e.get("fqdns") and not e.get("cidrs"):
            chk.err(base + ("egress", ei), "an egress entry needs `fqdns:` or `cidrs:`")
        for ci, cidr in enumerate(seq(e.get("cidrs"))):
            if not _is_cidr(str(cidr)):
                chk.err(base + ("egress", ei, "cidrs", ci), (
                    f"'{cidr}' is not a CIDR (like 10.0.0.0/8 or 2001:db8::/32); Cilium's CRD "
                    "would reject the policy"))
        for pi, port in enumerate(dicts(e.get("ports"))):
            end, start = port.get("endPort"), port.get("port")
            if isinstance(end, int) and isinstance(start, int) and end < start:
                chk.err(base + ("egress", ei, "ports", pi, "endPort"), (
                    f"endPort {end} is below port {start}; a range runs from port up to endPort"))
    return egress


def capacity(chk: Checker, base: YPath, w: Workload, c: Cluster, nz: NetworkZone) -> None:
    # A co-located job must fit in ONE zone: that is what pin and follow both guarantee.
    if w.placement == "follow" and not follow_zones(c, nz, w) and not w.gpus:
        # Even a job without GPUs needs a node: with no zone to follow into, generate would
        # have no zone to write into the job's affinity.
        chk.err(base, (
            f"workload '{w.name}' uses placement 'follow' but no zone of network zone "
            f"'{nz.name}' has a node (no pool, or pools of 0 nodes); the job can never start: "
            "add nodes to a pool of the network zone"))
        return
    if w.placement == "follow" and not follow_zones(c, nz, w):
        chk.err(base, (
            f"workload '{w.name}' uses placement 'follow' but no zone of network zone "
            f"'{nz.name}' has both a node with {plural(max(g.gpus_per_pod for g in w.groups), 'GPU')} "
            f"and {plural(w.gpus, 'GPU')} in all; the job can never start: reduce replicas or add GPU nodes"))
        return
    zones = [w.zone] if w.zone else list(nz.zones)
    best = max((z.gpus for z in c.zones if z.name in zones), default=0)
    total = sum(z.gpus for z in c.zones if z.name in nz.zones)
    if w.gpus > best:
        detail = ", ".join(f"{g.name} {g.replicas}x{g.gpus_per_pod}" for g in w.groups if g.gpus)
        chk.err(base, (
            f"workload '{w.name}' needs {plural(w.gpus, 'GPU')} ({detail}) but the largest zone it may use "
            f"in network zone '{nz.name}' has {best} (the network zone has {total} in all); the "
            "job can never start: reduce replicas or add GPU nodes"))
    for g in w.groups:
        per_node = max((p.gpus_per_node for z in c.zones if z.name in zones for p in z.pools),
                       default=0)
        if g.gpus_per_pod > per_node:
            chk.err(base, (
                f"workload '{w.name}' group {g.name} asks {plural(g.gpus_per_pod, 'GPU')} per pod but no node "
                f"in network zone '{nz.name}' has more than {per_node}"))
