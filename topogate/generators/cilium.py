"""Cilium policies: the doors between network zones, and each job's allow-list.

Two kinds of object per cluster:

1. `clusters/<c>/network/<network-zone>.yaml`: one CiliumClusterwideNetworkPolicy (CCNP) per
   network zone. It selects the pods topogate manages in that network zone (label
   `topogate.dev/network-zone=<nz>`, stamped by the Kustomize overlay) and DENIES traffic, in
   both directions, with every managed pod whose network-zone label is a different value.

   Why deny rules and not a default-deny allow-list:
   - Deny wins. In Cilium an `ingressDeny`/`egressDeny` match drops the packet whatever any allow
     rule of any other policy says, so no later policy (a team's own CNP, a Helm chart's
     "allow all in namespace") can open a door the inventory closes. An allow-list boundary could
     be widened by any other allow rule that selects the same pods.
   - Non-managed pods are untouched. The selector names our label, so pods without it are never
     subjects; and the peer selector is `Exists` AND `NotIn [<nz>]` (NotIn alone would also match
     pods that lack the label, i.e. kube-dns, monitoring, everything else in the cluster).
   - `enableDefaultDeny: {ingress: false, egress: false}`: a policy with deny rules would
     otherwise switch its subjects into default-deny on its own (the CRD's documented default is
     "true for each direction that has rules"), which would make the boundary cut DNS and
     metrics too. The boundary only closes doors; opening the ones a job needs, and nothing
     else, is the job's own CNP below, which does put its pods into default deny.

2. `clusters/<c>/workloads/<ns>/<job>/ciliumnetworkpolicy.yaml`: one CiliumNetworkPolicy per
   workload, selecting the job's pods (labels `topogate.dev/workload=<job>` and
   `topogate.dev/network-zone=<nz>`), allowing exactly: all TCP between the job's own pods
   in both directions (NCCL opens random ports), the kind's rendezvous flow named explicitly
   (PyTorchJob TCP 23456 and TrainJob TCP 29500 to the coordinator group, MPIJob launcher ->
   workers TCP 22), DNS to kube-dns (UDP and TCP 53; with a DNS L7 rule when the job has FQDN
   egress, because `toFQDNs` only learns IPs from DNS answers the proxy saw), ingress from the
   monitoring namespace on the metrics port when declared, and egress to the declared FQDNs
   (`toFQDNs`, each in a rule of its own: the CRD forbids mixing toFQDNs with other `to*`
   fields) and CIDRs (`toCIDRSet`) on the declared ports. Having both ingress and egress rules,
   the CNP puts the job's pods into default deny: anything else the job needs (the API server,
   a package mirror) must be declared in the inventory.

Label keys carry the `k8s:` source prefix: Cilium prefixes every label it imports with its
source, an unprefixed key means `any:` (matches labels of every source), and `k8s:` restricts
the match to labels set on the Kubernetes pod, so a container-runtime label cannot stand in
for ours. `k8s:io.kubernetes.pod.namespace` is how a selector names a namespace.

The rendezvous selectors use `topogate.dev/replica-group=<group>`, a label the overlay stamps on
every replica group, rather than the controllers' own labels, whose keys and values differ
between operator versions.
"""

from __future__ import annotations

from typing import Any

from topogate.core.labels import MANAGED_BY_LABEL, NETWORK_ZONE_LABEL, REPLICA_GROUP_LABEL, WORKLOAD_LABEL
from topogate.core.layout import CLUSTERS, OWN_OVERLAYS
from topogate.generators.base import OutputFile
from topogate.inventory.model import Cluster, Door, Inventory, PortSpec, Workload
from topogate.k8s import kinds
from topogate.k8s.kustomization import KUSTOMIZE_API

API_VERSION = "cilium.io/v2"
GROUP_LABEL = REPLICA_GROUP_LABEL
K8S = "k8s:"  # Cilium's label-source prefix for labels that come from the Kubernetes pod
NAMESPACE_KEY = "k8s:io.kubernetes.pod.namespace"
CNP_FILE = "ciliumnetworkpolicy.yaml"
ALL_TCP = {"port": "1", "endPort": 65535, "protocol": "TCP"}  # every TCP port NCCL may pick
SSH_PORT = 22


def kustomization(resources: list[str], **extra: Any) -> dict[str, Any]:
    """A Kustomization document in the one key order every generated kustomization uses."""
    doc: dict[str, Any] = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}
    doc.update({k: v for k, v in extra.items() if k == "namespace"})
    doc["resources"] = list(resources)
    doc.update({k: v for k, v in extra.items() if k != "namespace"})
    return doc


def network_dir(cluster: str) -> str:
    return f"{CLUSTERS}/{cluster}/network"


def workload_dir(w: Workload) -> str:
    """The job's overlay: in the cluster's tree, or, for a job its own Application applies
    (`deployedBy: own`), apart from it (core.layout)."""
    if w.own:
        return f"{OWN_OVERLAYS}/{w.cluster}/{w.namespace}/{w.name}"
    return f"{CLUSTERS}/{w.cluster}/workloads/{w.namespace}/{w.name}"


def ccnp_name(nz: str) -> str:
    return f"topogate-network-zone-{nz}"


def cnp_name(w: Workload) -> str:
    return f"topogate-{w.name}"


def _managed_labels(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {MANAGED_BY_LABEL: "topogate", **(extra or {})}


def boundary_policy(cluster: Cluster, nz: str, carve_in: dict[str, list[PortSpec]] | None = None,
                    carve_out: dict[str, list[PortSpec]] | None = None) -> dict[str, Any]:
    """The CCNP that closes every door between network zone `nz` and the other managed pods.

    `carve_in`/`carve_out` map another network zone to the ports of declared doors from it / to
    it: against that zone the deny covers every other port (deny wins, so the door's ports must
    be left out of the deny for the door's allow rules to matter)."""
    key = K8S + NETWORK_ZONE_LABEL

    def others(skip: tuple[str, ...] = ()) -> dict[str, Any]:
        # Managed (label present) AND of another network zone: NotIn alone would also match
        # every pod without the label. Built per use: shared objects would dump as YAML aliases.
        return {"matchExpressions": [
            {"key": key, "operator": "Exists"},
            {"key": key, "operator": "NotIn", "values": sorted({nz, *skip})},
        ]}

    def deny(peer_key: str, carve: dict[str, list[PortSpec]] | None) -> list[dict[str, Any]]:
        if not carve:
            return [{peer_key: [others()]}]
        rules: list[dict[str, Any]] = [{peer_key: [others(tuple(carve))]}]
        for other in sorted(carve):
            rest = complement_ports(carve[other])
            if rest:
                rules.append({peer_key: [{"matchLabels": {key: other}}], "toPorts": _ports(*rest)})
        return rules

    return {
        "apiVersion": API_VERSION,
        "kind": "CiliumClusterwideNetworkPolicy",
        "metadata": {"name": ccnp_name(nz), "labels": _managed_labels({NETWORK_ZONE_LABEL: nz})},
        "spec": {
            "description": (f"topogate: pods in network zone {nz} of cluster {cluster.name} talk to no "
                            "managed pod of another network zone"),
            "endpointSelector": {"matchLabels": {key: nz}},
            # A deny-only policy must not put its subjects in default deny: see module docstring.
            "enableDefaultDeny": {"ingress": False, "egress": False},
            "ingressDeny": deny("fromEndpoints", carve_in),
            "egressDeny": deny("toEndpoints", carve_out),
        },
    }


def job_selector(w: Workload, group: str | None = None) -> dict[str, Any]:
    labels = {K8S + WORKLOAD_LABEL: w.name, K8S + NETWORK_ZONE_LABEL: w.network_zone}
    if group is not None:
        labels[K8S + GROUP_LABEL] = group
    return {"matchLabels": labels}


def _ports(*ports: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"ports": list(ports)}]


def _port(port: int, protocol: str = "TCP", end_port: int | None = None) -> dict[str, Any]:
    p: dict[str, Any] = {"port": str(port)}
    if end_port is not None and end_port > port:
        p["endPort"] = end_port
    p["protocol"] = protocol
    return p


def _tail(ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {"toPorts": _ports(*(dict(p) for p in ports))} if ports else {}


def group_names(w: Workload) -> list[str]:
    """The job's replica group names, sorted (the base's key order must not change the output)."""
    return sorted(g.name for g in w.groups)


def rendezvous(w: Workload) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(ingress, egress) rules that name the kind's rendezvous flow explicitly.

    They add no reach beyond the all-TCP rule; they exist so a reader (and `topogate explain`)
    sees the flow the job cannot start without, and so it survives if all-TCP is ever narrowed.
    """
    info = kinds.TRAINING_KINDS.get(w.kind)
    groups = group_names(w)
    if info is None or info.coordinator is None:
        return [], []
    coord = info.coordinator
    if info.rendezvous_port is not None:
        port = info.rendezvous_port
        target = job_selector(w, coord) if coord in groups or not groups else job_selector(w)
        return ([{"fromEndpoints": [job_selector(w)], "toPorts": _ports(_port(port))}],
                [{"toEndpoints": [target], "toPorts": _ports(_port(port))}])
    if info.ssh_from_coordinator:
        workers = [g for g in groups if g != coord] or ["Worker"]
        return ([{"fromEndpoints": [job_selector(w, coord)], "toPorts": _ports(_port(SSH_PORT))}],
                [{"toEndpoints": [job_selector(w, g) for g in workers], "toPorts": _ports(_port(SSH_PORT))}])
    return [], []


def job_policy(w: Workload, inv: Inventory | None = None) -> dict[str, Any]:
    """The CNP that allows exactly the flows the job needs (see module docstring)."""
    fqdns = sorted({f for e in w.egress for f in e.fqdns})
    # Selectors are built per use: a shared object would be dumped as a YAML anchor/alias.
    ingress: list[dict[str, Any]] = [{"fromEndpoints": [job_selector(w)], "toPorts": _ports(dict(ALL_TCP))}]
    egress: list[dict[str, Any]] = [{"toEndpoints": [job_selector(w)], "toPorts": _ports(dict(ALL_TCP))}]
    r_in, r_out = rendezvous(w)
    ingress += r_in
    egress += r_out
    dns: dict[str, Any] = {"ports": [_port(53, "UDP"), _port(53, "TCP")]}
    if fqdns:
        # toFQDNs only learns addresses from lookups Cilium's DNS proxy saw: route DNS through it.
        dns["rules"] = {"dns": [{"matchPattern": "*"}]}
    egress.append({
        "toEndpoints": [{"matchLabels": {NAMESPACE_KEY: "kube-system", K8S + "k8s-app": "kube-dns"}}],
        "toPorts": [dns],
    })
    if w.metrics is not None:
        ingress.append({
            "fromEndpoints": [{"matchLabels": {NAMESPACE_KEY: w.metrics.namespace}}],
            "toPorts": _ports(_port(w.metrics.port)),
        })
    for d in doors_from(inv, w):
        egress.append({"toEndpoints": [door_target(d)], "toPorts": _ports(*door_ports(d))})
    for e in w.egress:
        ports = [_port(p.port, p.protocol, p.end_port) for p in e.ports]
        if e.fqdns:
            names = [{"matchPattern": f} if "*" in f else {"matchName": f} for f in e.fqdns]
            egress.append({"toFQDNs": names, **_tail(ports)})
        if e.cidrs:
            egress.append({"toCIDRSet": [{"cidr": c} for c in e.cidrs], **_tail(ports)})
    return {
        "apiVersion": API_VERSION,
        "kind": "CiliumNetworkPolicy",
        "metadata": {
            "name": cnp_name(w),
            "namespace": w.namespace,
            "labels": _managed_labels({WORKLOAD_LABEL: w.name, NETWORK_ZONE_LABEL: w.network_zone}),
        },
        "spec": {
            "description": (f"topogate: {w.kind} {w.namespace}/{w.name} talks to its own pods, "
                            "kube-dns and what the inventory declares, nothing else"),
            "endpointSelector": job_selector(w),
            "ingress": ingress,
            "egress": egress,
        },
    }


# ---------------------------------------------------------------------------------------------
# Declared doors (inventory `doors:`): both sides, and the boundary's carve-out for zone targets
# ---------------------------------------------------------------------------------------------

_PROTOCOLS = ("TCP", "UDP", "SCTP")


def door_name(d: Door) -> str:
    return f"topogate-door-{d.name}"


def door_ports(d: Door) -> list[dict[str, Any]]:
    return [_port(p.port, p.protocol, p.end_port) for p in d.ports]


def complement_ports(specs: list[PortSpec]) -> list[dict[str, Any]]:
    """Every port of TCP, UDP and SCTP that none of `specs` covers, as toPorts entries."""
    out: list[dict[str, Any]] = []
    for proto in _PROTOCOLS:
        covered = sorted((p.port, p.end_port or p.port) for p in specs if p.protocol == proto)
        nxt = 1
        for lo, hi in covered:
            if lo > nxt:
                out.append(_port(nxt, proto, lo - 1))
            nxt = max(nxt, hi + 1)
        if nxt <= 65535:
            out.append(_port(nxt, proto, 65535))
    return out


def _zone_pods(nz: str) -> dict[str, Any]:
    # Naming the namespace key (Exists) lifts a CNP's namespace scoping: every namespace.
    return {"matchLabels": {K8S + NETWORK_ZONE_LABEL: nz},
            "matchExpressions": [{"key": NAMESPACE_KEY, "operator": "Exists"}]}


def door_target(d: Door) -> dict[str, Any]:
    if d.target.network_zone is not None:
        return _zone_pods(d.target.network_zone)
    labels = {NAMESPACE_KEY: d.target.namespace or "default"}
    labels.update({K8S + k: v for k, v in d.target.labels})
    return {"matchLabels": labels}


def doors_from(inv: Inventory | None, w: Workload) -> list[Door]:
    if inv is None:
        return []
    return [d for d in inv.doors_of(w.cluster) if w in inv.door_sources(d)]


def door_sources(inv: Inventory, d: Door) -> list[dict[str, Any]]:
    if d.source.network_zone is not None:
        return [_zone_pods(d.source.network_zone)]
    out = []
    for w in inv.door_sources(d):
        sel = job_selector(w)
        sel["matchLabels"][NAMESPACE_KEY] = w.namespace
        out.append(sel)
    return out


def door_policy(inv: Inventory, d: Door) -> dict[str, Any]:
    """The target side of a door: a CNP in the service's namespace selecting the service's pods
    (a CCNP selecting the network zone's managed pods for a zone target) that allows the door's
    sources on the door's ports. It switches no default deny on (`enableDefaultDeny: false`,
    Cilium >= 1.16): it opens the door where the target is locked, and locks out nobody else."""
    zone = d.target.network_zone
    meta: dict[str, Any] = {"name": door_name(d)}
    if zone is None:
        meta["namespace"] = d.target.namespace or "default"
    meta["labels"] = _managed_labels()
    subject = ({"matchLabels": {K8S + NETWORK_ZONE_LABEL: zone}} if zone is not None
               else {"matchLabels": {K8S + k: v for k, v in d.target.labels}})
    return {
        "apiVersion": API_VERSION,
        "kind": "CiliumClusterwideNetworkPolicy" if zone is not None else "CiliumNetworkPolicy",
        "metadata": meta,
        "spec": {
            "description": (f"topogate: door {d.name} of cluster {d.cluster}, declared in the "
                            "inventory: these sources on these ports, nothing else"),
            "endpointSelector": subject,
            "enableDefaultDeny": {"ingress": False, "egress": False},
            "ingress": [{"fromEndpoints": door_sources(inv, d), "toPorts": _ports(*door_ports(d))}],
        },
    }


def carve_outs(inv: Inventory, c: Cluster) -> tuple[dict[str, dict[str, list[PortSpec]]],
                                                      dict[str, dict[str, list[PortSpec]]]]:
    """Per network zone: ports to leave out of its ingress deny (by source zone) and egress deny
    (by target zone), for doors whose target is a network zone."""
    into: dict[str, dict[str, list[PortSpec]]] = {}
    out_of: dict[str, dict[str, list[PortSpec]]] = {}
    for d in inv.doors_of(c.name):
        target = d.target.network_zone
        if target is None:
            continue
        srcs = ({d.source.network_zone} if d.source.network_zone
                else {w.network_zone for w in inv.door_sources(d)})
        for src in sorted(srcs):
            into.setdefault(target, {}).setdefault(src, []).extend(d.ports)
            out_of.setdefault(src, {}).setdefault(target, []).extend(d.ports)
    return into, out_of


def render(inv: Inventory) -> list[OutputFile]:
    out: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        nzs = sorted(n.name for n in c.network_zones)
        d = network_dir(c.name)
        into, out_of = carve_outs(inv, c)
        for nz in nzs:
            src = c.network_zone(nz)
            out.append(OutputFile(f"{d}/{nz}.yaml", (boundary_policy(c, nz, into.get(nz), out_of.get(nz)),),
                                  source=src.pos if src else c.pos))
        doors = sorted(inv.doors_of(c.name), key=lambda x: x.name)
        resources = [f"{nz}.yaml" for nz in nzs]
        if doors:
            resources.append("doors")
            for door in doors:
                out.append(OutputFile(f"{d}/doors/{door.name}.yaml", (door_policy(inv, door),), source=door.pos))
            out.append(OutputFile(f"{d}/doors/kustomization.yaml",
                                  (kustomization([f"{x.name}.yaml" for x in doors]),), source=c.pos))
        out.append(OutputFile(f"{d}/kustomization.yaml", (kustomization(resources),), source=c.pos))
    for w in sorted(inv.workloads, key=lambda w: (w.cluster, w.namespace, w.name)):
        out.append(OutputFile(f"{workload_dir(w)}/{CNP_FILE}", (job_policy(w, inv),), source=w.pos))
    return out


__all__ = ["API_VERSION", "CNP_FILE", "GROUP_LABEL", "KUSTOMIZE_API", "SSH_PORT", "ccnp_name", "cnp_name",
           "complement_ports", "door_name", "door_sources", "group_names", "job_policy", "kustomization",
           "rendezvous", "render", "workload_dir"]
