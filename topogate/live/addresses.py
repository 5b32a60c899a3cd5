"""The addresses of a snapshot for `audit egress --flow-logs`: pod IPs and node IPs, each with
its zone and the training jobs behind it, and the cluster's zone ids (az-id -> zone name).

Which of them the flow logs carry (pod IPs with the VPC CNI, node IPs under an overlay) the
attribution decides from the records themselves.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from typing import Any

from topogate.audit.attribute import AddressBook, Endpoint
from topogate.inventory.model import Cluster, Inventory
from topogate.live.nodes import parse_nodes
from topogate.live.running import job_key
from topogate.live.snapshot import Snapshot

ZONE_ID_LABEL = "topology.k8s.aws/zone-id"  # EKS puts the zone id on every node


def _md(o: Mapping[str, Any]) -> Mapping[str, Any]:
    md = o.get("metadata")
    return md if isinstance(md, dict) else {}


def _node_addresses(node: Mapping[str, Any]) -> list[str]:
    out = []
    for a in (node.get("status") or {}).get("addresses") or []:
        if isinstance(a, dict) and a.get("type") in ("InternalIP", "ExternalIP") and a.get("address"):
            out.append(str(a["address"]))
    return out


def address_book(snapshot: Snapshot, inv: Inventory, cluster: Cluster) -> AddressBook:
    zone_of = {n.name: n.zone for n in parse_nodes(snapshot.nodes, cluster.zone_label)}
    zone_ids: dict[str, str] = {}
    for node in snapshot.nodes:
        name = str(_md(node).get("name", ""))
        zid = (_md(node).get("labels") or {}).get(ZONE_ID_LABEL)
        if zid and zone_of.get(name):
            zone_ids[str(zid)] = zone_of[name]
    known = {(str(_md(j).get("namespace", "")), str(_md(j).get("name", ""))): str(j.get("kind"))
             for j in snapshot.jobs}
    on_node: dict[str, set[str]] = defaultdict(set)
    on_host: dict[str, set[str]] = defaultdict(set)
    pods: dict[str, Endpoint] = {}
    for p in snapshot.pods:
        status = p.get("status") or {}
        host_node = str((p.get("spec") or {}).get("nodeName") or "")
        if not host_node or status.get("phase") in ("Succeeded", "Failed"):
            continue
        key = job_key(p, known, inv)
        job = "/".join(key) if key else ""
        ip, host = str(status.get("podIP") or ""), str(status.get("hostIP") or "")
        if job:
            on_node[host_node].add(job)
            if not ip or ip == host:
                on_host[host_node].add(job)
        if ip and ip != host:
            pods[ip] = Endpoint("pod", f"{_md(p).get('namespace', '')}/{_md(p).get('name', '')}",
                                zone_of.get(host_node, ""), (job,) if job else ())
    nodes: dict[str, Endpoint] = {}
    for node in snapshot.nodes:
        name = str(_md(node).get("name", ""))
        for addr in _node_addresses(node):
            nodes[addr] = Endpoint("node", name, zone_of.get(name, ""),
                                   tuple(sorted(on_node.get(name, ()))),
                                   tuple(sorted(on_host.get(name, ()))))
    return AddressBook(snapshot.source, pods, nodes, zone_ids)


__all__ = ["address_book"]
