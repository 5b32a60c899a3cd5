"""Cases for the Cilium oracle (tests/oracles/test_cilium_oracle.py): seeded, of our own design.

A case is what one cluster's agent sees: its settings (the inventory's `cilium:` block, in the
words of cilium-config), Namespaces, Pods, the policies (CiliumNetworkPolicy,
CiliumClusterwideNetworkPolicy, NetworkPolicy, ClusterNetworkPolicy) and the flows to ask about.
The generator draws every construct topogate's evaluator (topogate/analysis/netpolicy) models:

- selectors: matchLabels and matchExpressions (In, NotIn, Exists, DoesNotExist); keys with and
  without the `k8s:`/`any:` prefixes, `reserved:` keys, the namespace key, namespace labels, the
  service account, and label keys Cilium's identity filter drops (topology.kubernetes.io/zone,
  kubernetes.io/hostname, pod-template-hash, *.beta.kubernetes.io);
- Cilium rules: ingress, egress, ingressDeny, egressDeny; fromEndpoints/toEndpoints,
  fromEntities/toEntities (every entity of the 1.20 CRD, cluster-mesh included),
  fromCIDR/toCIDR, fromCIDRSet/toCIDRSet with except, fromNodes/toNodes, toFQDNs, the empty rule,
  explicitly empty peer lists, L4-only rules, two peer kinds in one rule; toPorts with port,
  endPort, protocol (TCP, UDP, SCTP, ANY, none) and named ports; icmps; L7 (http, dns) rules;
  enableDefaultDeny; spec and specs; a CNP without metadata.namespace;
- NetworkPolicy: podSelector, policyTypes (defaulted, matching the rules, or not), ingress/egress
  rules with podSelector, namespaceSelector, both, ipBlock with except, `{}` rules, ports with
  endPort, protocol and names;
- ClusterNetworkPolicy (Admin and Baseline tiers, Accept/Deny/Pass, namespaces and pods subjects
  and peers, networks, protocols);
- the agent's settings that change verdicts: the `labels` identity filter, policy-cidr-match-mode,
  enable-node-selector-labels, allow-localhost, the enforcement mode, the cluster name, where the
  kube-apiserver runs, enable-k8s-cluster-network-policy.

Flows go between pods, entities and single addresses, on ports the rules name (and their
neighbours) and others. Everything is plain data (JSON-able), so a case can be written as YAML for
`topogate trace`, sent to the oracle as is, and shrunk by deleting parts of it.
"""

from __future__ import annotations

import copy
import random
from typing import Any

NAMESPACES = ("ml", "web", "kube-system")
NS_LABELS = {"ml": ({"team": "ml"}, {"team": "ml", "env": "prod"}),
             "web": ({"team": "web"}, {"env": "prod"}, {}),
             "kube-system": ({},)}

# Pod label keys: plain ones, topogate's, and keys the identity filter of 1.20 drops.
LABEL_VALUES: dict[str, tuple[str, ...]] = {
    "app": ("a", "b", "c"),
    "role": ("worker", "master"),
    "topogate.dev/network-zone": ("gpu", "general"),
    "topology.kubernetes.io/zone": ("zone-a", "zone-b"),
    "kubernetes.io/hostname": ("node-1",),
    "app.kubernetes.io/name": ("train",),
    "pod-template-hash": ("5d8f",),
    "failure-domain.beta.kubernetes.io/zone": ("zone-a",),
    "node.kubernetes.io/pool": ("gpu",),
}
FILTERED_KEYS = ("topology.kubernetes.io/zone", "kubernetes.io/hostname", "pod-template-hash",
                 "failure-domain.beta.kubernetes.io/zone")
NAMED_PORTS = (("http", 8080, "TCP"), ("rdzv", 23456, "TCP"), ("dns", 53, "UDP"), ("metrics", 9090, "TCP"))
NODE_LABELS = ({"node-type": "gpu", "topology.kubernetes.io/zone": "zone-a"},
               {"node-type": "cpu", "topology.kubernetes.io/zone": "zone-b"})

ENTITIES = ("all", "world", "cluster", "cluster-mesh", "host", "init", "ingress", "unmanaged",
            "remote-node", "health", "none", "kube-apiserver")
# The entities a flow may start or end at (each a concrete identity of the agent).
FLOW_ENTITIES = ("world", "host", "remote-node", "kube-apiserver", "health", "ingress", "unmanaged")
# Every entity a peer can be, as an identity of its own (and the oracle's endpoints).
ENTITY_LIKE = ("world", "world-ipv4", "world-ipv6", "host", "remote-node", "kube-apiserver", "health", "init",
               "ingress", "unmanaged")
CIDRS = ("10.0.0.0/8", "10.96.0.0/12", "192.0.2.0/24", "0.0.0.0/0", "20.1.1.1/32", "10.1.0.0/16")
EXCEPTS = {"10.0.0.0/8": ("10.96.0.0/12", "10.1.0.0/16"), "0.0.0.0/0": ("10.0.0.0/8", "192.0.2.0/24"),
           "192.0.2.0/24": ("192.0.2.128/25",), "10.1.0.0/16": ("10.1.2.0/24",)}
ADDRESSES = ("10.1.2.3", "10.96.0.10", "10.200.0.1", "192.0.2.10", "192.0.2.200", "20.1.1.1", "8.8.8.8")
FQDNS = ("api.example.com",)
PORTS = (22, 53, 80, 443, 8080, 9090, 23456)
LABEL_FILTERS = (
    ["k8s:app", "k8s:io.kubernetes.pod.namespace"],
    ["k8s:topology.kubernetes.io/zone"],
    ["!k8s:role"],
    ["k8s:!app.kubernetes.io"],
    ["k8s:topogate.dev", "k8s:app"],
)


def _pick(rnd: random.Random, seq: Any) -> Any:
    return seq[rnd.randrange(len(seq))]


class Gen:
    """One case, drawn from a seeded generator."""

    def __init__(self, seed: int) -> None:
        self.rnd = random.Random(seed)
        self.ports_named: set[int] = set()
        self.node_labels = False  # the case's agent has enable-node-selector-labels

    # -- settings ------------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        r = self.rnd
        s: dict[str, Any] = {}
        if r.random() < 0.35:
            return s  # the version's defaults
        if r.random() < 0.3:
            s["labels"] = list(_pick(r, LABEL_FILTERS))
        if r.random() < 0.15:
            s["policyCIDRMatchMode"] = ["nodes"]
        if r.random() < 0.2:
            s["enableNodeSelectorLabels"] = True
        if r.random() < 0.2:
            s["allowLocalhost"] = _pick(r, ("always", "policy", "auto"))
        if r.random() < 0.12:
            s["enforcement"] = _pick(r, ("always", "never", "default"))
        if r.random() < 0.15:
            s["clusterName"] = "east"
        if r.random() < 0.3:
            s["apiServer"] = _pick(r, ("remote-node", "host", "world"))
        if r.random() < 0.1:
            s["enableK8sClusterNetworkPolicy"] = True
        return s

    # -- pods ----------------------------------------------------------------------------------
    def namespaces(self) -> list[dict[str, Any]]:
        out = []
        for ns in NAMESPACES:
            labels = dict(_pick(self.rnd, NS_LABELS[ns]))
            out.append({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": ns, **({"labels": labels} if labels else {})}})
        return out

    def pods(self) -> list[dict[str, Any]]:
        r = self.rnd
        pods: list[dict[str, Any]] = []
        for i in range(r.randint(2, 4)):
            ns = _pick(r, ("ml", "ml", "web"))
            labels = {k: _pick(r, LABEL_VALUES[k]) for k in r.sample(sorted(LABEL_VALUES), r.randint(1, 4))}
            spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}]}
            if r.random() < 0.4:
                ports = r.sample(NAMED_PORTS, r.randint(1, 2))
                spec["containers"][0]["ports"] = [
                    {"name": n, "containerPort": p, **({"protocol": pr} if pr != "TCP" or r.random() < 0.5 else {})}
                    for n, p, pr in ports]
            if r.random() < 0.3:
                spec["serviceAccountName"] = "trainer"
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"p{i}", "namespace": ns, "labels": labels}, "spec": spec})
        if r.random() < 0.5:
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "dns", "namespace": "kube-system", "labels": {"k8s-app": "kube-dns"}},
                         "spec": {"containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10",
                                                  "ports": [{"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}})
        return pods

    # -- selectors -----------------------------------------------------------------------------
    def _key(self, cilium: bool) -> tuple[str, str]:
        """(selector key as written, the pod label key it names)."""
        r = self.rnd
        key = _pick(r, sorted(LABEL_VALUES))
        prefix = _pick(r, ("", "k8s:", "any:", "k8s:")) if cilium else ""
        return prefix + key, key

    def selector(self, cilium: bool, *, peer: bool = False, pods: list[dict[str, Any]] | None = None,
                 empty_ok: bool = True) -> dict[str, Any]:
        r = self.rnd
        sel: dict[str, Any] = {}
        if empty_ok and r.random() < 0.15:
            return sel
        # Mostly select one of the case's pods by a label it carries.
        if pods and r.random() < 0.6:
            pod = _pick(r, pods)
            labels = pod["metadata"]["labels"]
            k = _pick(r, sorted(labels))
            prefix = _pick(r, ("", "k8s:", "any:")) if cilium else ""
            sel["matchLabels"] = {prefix + k: labels[k]}
        elif r.random() < 0.7:
            written, key = self._key(cilium)
            sel["matchLabels"] = {written: _pick(r, LABEL_VALUES[key])}
        if cilium and peer:
            x = r.random()
            if x < 0.12:
                sel.setdefault("matchLabels", {})["k8s:io.kubernetes.pod.namespace"] = _pick(r, NAMESPACES)
            elif x < 0.18:
                sel.setdefault("matchLabels", {})["io.cilium.k8s.namespace.labels.team"] = _pick(r, ("ml", "web"))
            elif x < 0.22:
                sel.setdefault("matchLabels", {})["io.cilium.k8s.policy.serviceaccount"] = "trainer"
            elif x < 0.30:
                sel = {"matchLabels": {f"reserved:{_pick(r, ('world', 'host', 'kube-apiserver', 'remote-node'))}": ""}}
        if r.random() < 0.35:
            written, key = self._key(cilium)
            op = _pick(r, ("In", "NotIn", "Exists", "DoesNotExist"))
            expr: dict[str, Any] = {"key": written, "operator": op}
            if op in ("In", "NotIn"):
                expr["values"] = r.sample(LABEL_VALUES[key], r.randint(1, len(LABEL_VALUES[key])))
            sel["matchExpressions"] = [expr]
        return sel

    # -- ports ---------------------------------------------------------------------------------
    def port_entry(self, default_any: bool) -> dict[str, Any]:
        r = self.rnd
        p: dict[str, Any] = {}
        x = r.random()
        if x < 0.15:
            name, number, _ = _pick(r, NAMED_PORTS)
            p["port"] = name
            self.ports_named.add(number)
        else:
            number = _pick(r, PORTS) if r.random() < 0.8 else r.randint(1, 65535)
            p["port"] = str(number)
            self.ports_named.add(number)
            if r.random() < 0.2:
                end = min(65535, number + r.randint(1, 100))
                p["endPort"] = end
                self.ports_named.add(end)
        protos = ("TCP", "UDP", "SCTP", "ANY", None) if default_any else ("TCP", "UDP", "SCTP", None)
        proto = _pick(r, protos)
        if proto is not None:
            p["protocol"] = proto
        return p

    def to_ports(self) -> list[dict[str, Any]]:
        r = self.rnd
        out = []
        for _ in range(r.randint(1, 2)):
            out.append({"ports": [self.port_entry(True) for _ in range(r.randint(1, 2))]})
        return out

    # -- Cilium rules --------------------------------------------------------------------------
    def cidr_rule(self) -> dict[str, Any]:
        cidr = _pick(self.rnd, CIDRS)
        rule: dict[str, Any] = {"cidr": cidr}
        if cidr in EXCEPTS and self.rnd.random() < 0.6:
            rule["except"] = self.rnd.sample(EXCEPTS[cidr], self.rnd.randint(1, len(EXCEPTS[cidr])))
        return rule

    def cilium_rule(self, direction: str, deny: bool, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        pre = "from" if direction == "ingress" else "to"
        kinds = ["Endpoints", "Endpoints", "Endpoints", "Entities", "CIDR", "CIDRSet"]
        if self.node_labels or r.random() < 0.1:  # without the agent's flag the policy is refused
            kinds.append("Nodes")
        if direction == "egress" and not deny:
            kinds.append("FQDNs")
        rule: dict[str, Any] = {}
        x = r.random()
        if x < 0.06:
            return rule  # the empty rule
        chosen: list[str] = []
        if x < 0.2:
            pass  # L4 only
        else:
            chosen.append(_pick(r, kinds))
            if r.random() < 0.08:  # two peer kinds: the agent refuses the policy
                chosen.append(_pick(r, kinds))
        for kind in dict.fromkeys(chosen):
            key = pre + kind
            if r.random() < 0.04:
                rule[key] = []  # explicitly empty: selects no peer
            elif kind == "Endpoints":
                rule[key] = [self.selector(True, peer=True, pods=pods) for _ in range(r.randint(1, 2))]
            elif kind == "Entities":
                rule[key] = r.sample(ENTITIES, r.randint(1, 2))
            elif kind == "CIDR":
                rule[key] = r.sample(CIDRS, r.randint(1, 2))
            elif kind == "CIDRSet":
                rule[key] = [self.cidr_rule() for _ in range(r.randint(1, 2))]
            elif kind == "Nodes":
                rule[key] = [{"matchLabels": {"node-type": _pick(r, ("gpu", "cpu"))}} if r.random() < 0.8 else {}]
            elif kind == "FQDNs":
                rule[key] = [{"matchName": _pick(r, FQDNS)} if r.random() < 0.5 else {"matchPattern": "*.example.com"}]
        if not chosen or r.random() < 0.55:
            if r.random() < 0.06 and not deny:
                rule["icmps"] = [{"fields": [{"type": 8}]}]
            else:
                ports = self.to_ports()
                if not deny and r.random() < 0.08:
                    if direction == "egress" and r.random() < 0.5:
                        ports = [{"ports": [{"port": "53", "protocol": "ANY"}], "rules": {"dns": [{"matchPattern": "*"}]}}]
                    else:
                        ports = [{"ports": [{"port": "80", "protocol": "TCP"}],
                                  "rules": {"http": [{"method": "GET", "path": "/public"}]}}]
                        self.ports_named.add(80)
                rule["toPorts"] = ports
        return rule

    def cilium_spec(self, pods: list[dict[str, Any]], clusterwide: bool) -> dict[str, Any]:
        r = self.rnd
        spec: dict[str, Any] = {"endpointSelector": self.selector(True, pods=pods)}
        for direction in ("ingress", "egress"):
            for deny in (False, True):
                if r.random() < (0.55 if not deny else 0.2):
                    section = direction + ("Deny" if deny else "")
                    spec[section] = [self.cilium_rule(direction, deny, pods) for _ in range(r.randint(1, 2))]
        if not any(k in spec for k in ("ingress", "egress", "ingressDeny", "egressDeny")):
            spec["ingress"] = [self.cilium_rule("ingress", False, pods)]
        if r.random() < 0.15:
            spec["enableDefaultDeny"] = {d: r.random() < 0.4 for d in r.sample(("ingress", "egress"), r.randint(1, 2))}
        return spec

    def cilium_policy(self, i: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        clusterwide = r.random() < 0.3
        kind = "CiliumClusterwideNetworkPolicy" if clusterwide else "CiliumNetworkPolicy"
        meta: dict[str, Any] = {"name": f"cnp-{i}"}
        if not clusterwide and r.random() < 0.95:
            meta["namespace"] = _pick(r, ("ml", "ml", "web"))
        obj: dict[str, Any] = {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": meta}
        if r.random() < 0.12:
            obj["specs"] = [self.cilium_spec(pods, clusterwide) for _ in range(2)]
        else:
            obj["spec"] = self.cilium_spec(pods, clusterwide)
        return obj

    # -- NetworkPolicy -------------------------------------------------------------------------
    def np_peer(self, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        x = r.random()
        if x < 0.15:
            c = self.cidr_rule()
            return {"ipBlock": {"cidr": c["cidr"], **({"except": c["except"]} if "except" in c else {})}}
        peer: dict[str, Any] = {}
        if x < 0.7:
            peer["podSelector"] = self.selector(False, pods=pods)
        if x >= 0.5:
            ns = self.rnd.random()
            peer["namespaceSelector"] = ({} if ns < 0.3 else {"matchLabels": {"team": _pick(r, ("ml", "web"))}}
                                         if ns < 0.7 else {"matchLabels": {"kubernetes.io/metadata.name": _pick(r, NAMESPACES)}})
        return peer

    def np_rule(self, direction: str, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        rule: dict[str, Any] = {}
        if r.random() < 0.8:
            rule["from" if direction == "ingress" else "to"] = [self.np_peer(pods) for _ in range(r.randint(1, 2))]
        if r.random() < 0.6:
            rule["ports"] = [self.port_entry(False) for _ in range(r.randint(1, 2))]
        return rule

    def network_policy(self, i: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        spec: dict[str, Any] = {"podSelector": self.selector(False, pods=pods)}
        has = {}
        for direction in ("ingress", "egress"):
            if r.random() < 0.6:
                spec[direction] = [self.np_rule(direction, pods) for _ in range(r.randint(0, 2))]
                has[direction] = bool(spec[direction])
        x = r.random()
        if x < 0.3:
            pass  # defaulted by the API server
        elif x < 0.75:
            types = [t for t, d in (("Ingress", "ingress"), ("Egress", "egress")) if d in spec]
            spec["policyTypes"] = types or ["Ingress"]
        else:  # the rules and policyTypes disagree
            spec["policyTypes"] = r.sample(["Ingress", "Egress"], r.randint(1, 2))
        return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": f"np-{i}", "namespace": _pick(r, ("ml", "ml", "web"))}, "spec": spec}

    # -- ClusterNetworkPolicy ------------------------------------------------------------------
    def kcnp_peer(self, egress: bool, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        x = r.random()
        if x < 0.4:
            return {"pods": {"namespaceSelector": self.selector(False, empty_ok=True) if r.random() < 0.3 else {},
                             "podSelector": self.selector(False, pods=pods)}}
        if x < 0.8 or not egress:
            y = r.random()
            if y < 0.3:
                return {"namespaces": {}}
            if y < 0.7:
                return {"namespaces": {"matchLabels": {"team": _pick(r, ("ml", "web"))}}}
            op = _pick(r, ("NotIn", "DoesNotExist", "In", "Exists"))
            expr: dict[str, Any] = {"key": _pick(r, ("team", "env", "kubernetes.io/metadata.name")), "operator": op}
            if op in ("In", "NotIn"):
                expr["values"] = [_pick(r, ("ml", "web", "prod"))]
            return {"namespaces": {"matchExpressions": [expr]}}
        return {"networks": [_pick(r, CIDRS)]}

    def kcnp(self, i: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
        r = self.rnd
        tier = _pick(r, ("Admin", "Baseline"))
        spec: dict[str, Any] = {"tier": tier, "priority": r.randint(0, 100)}
        if r.random() < 0.5:
            spec["subject"] = {"namespaces": {} if r.random() < 0.5 else {"matchLabels": {"team": "ml"}}}
        else:
            spec["subject"] = {"pods": {"namespaceSelector": {}, "podSelector": self.selector(False, pods=pods)}}
        actions = ("Accept", "Deny", "Pass") if tier == "Admin" else ("Accept", "Deny")
        for direction in ("ingress", "egress"):
            if r.random() < 0.6:
                rules = []
                for _ in range(r.randint(1, 2)):
                    rule: dict[str, Any] = {"action": _pick(r, actions),
                                            ("from" if direction == "ingress" else "to"):
                                                [self.kcnp_peer(direction == "egress", pods)]}
                    if r.random() < 0.5:
                        port = _pick(r, PORTS)
                        self.ports_named.add(port)
                        rule["protocols"] = [{_pick(r, ("tcp", "udp")): {"destinationPort": {"number": port}}}]
                    rules.append(rule)
                spec[direction] = rules
        if "ingress" not in spec and "egress" not in spec:
            spec["ingress"] = [{"action": "Deny", "from": [{"namespaces": {}}]}]
        return {"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
                "metadata": {"name": f"kcnp-{i}"}, "spec": spec}

    # -- the case --------------------------------------------------------------------------------
    def case(self) -> dict[str, Any]:
        r = self.rnd
        settings = self.settings()
        self.node_labels = bool(settings.get("enableNodeSelectorLabels"))
        pods = self.pods()
        policies: list[dict[str, Any]] = []
        # ClusterNetworkPolicy is read only with the agent's flag: drawn often where it is on.
        kcnp = 0.35 if settings.get("enableK8sClusterNetworkPolicy") else 0.06
        for i in range(r.randint(1, 4)):
            x = r.random()
            if x < 1 - kcnp - 0.32:
                policies.append(self.cilium_policy(i, pods))
            elif x < 1 - kcnp:
                policies.append(self.network_policy(i, pods))
            else:
                policies.append(self.kcnp(i, pods))
        endpoints: list[dict[str, Any]] = []  # besides the pods: entities, addresses, names
        for e in FLOW_ENTITIES:
            ep: dict[str, Any] = {"name": e, "entity": e}
            if e in ("host", "remote-node") and settings.get("enableNodeSelectorLabels"):
                # A node with its labels, named as topogate trace takes it.
                labels = dict(_pick(r, NODE_LABELS))
                ep = {"name": e + "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}",
                      "entity": e, "nodeLabels": labels}
            endpoints.append(ep)
        for a in ADDRESSES:
            endpoints.append({"name": a, "cidr": a})
        if any("toFQDNs" in str(p) for p in policies):
            endpoints += [{"name": f"fqdn:{f}", "fqdn": f} for f in FQDNS]
        pod_eps = [pod_name(p) for p in pods]
        others = [e["name"] for e in endpoints]
        ports = sorted(self.ports_named | set(PORTS))
        flows = []
        for _ in range(r.randint(6, 10)):
            if r.random() < 0.55:
                src, dst = _pick(r, pod_eps), _pick(r, pod_eps)
            elif r.random() < 0.5:
                src, dst = _pick(r, pod_eps), _pick(r, others)
            else:
                src, dst = _pick(r, others), _pick(r, pod_eps)
            port = _pick(r, ports)
            if r.random() < 0.25:
                port = max(1, min(65535, port + _pick(r, (-1, 1))))
            proto = _pick(r, ("TCP", "TCP", "TCP", "UDP", "SCTP"))
            flows.append({"from": src, "to": dst, "port": port, "proto": proto})
        return {"settings": settings, "namespaces": self.namespaces(), "pods": pods,
                "policies": policies, "endpoints": endpoints, "flows": flows}


def pod_name(pod: dict[str, Any]) -> str:
    """A pod as a flow names it: its `topogate trace` spec."""
    return f"{pod['metadata']['namespace']}/Pod/{pod['metadata']['name']}"


def case(seed: int) -> dict[str, Any]:
    return Gen(seed).case()


def oracle_request(c: dict[str, Any]) -> dict[str, Any]:
    """The case as cilium-oracle reads it (FQDN endpoints left out: the oracle cannot resolve one
    without the DNS proxy's state)."""
    return {
        "settings": c["settings"],
        "namespaces": [{"name": n["metadata"]["name"], "labels": n["metadata"].get("labels") or {}}
                       for n in c["namespaces"]],
        "policies": c["policies"],
        "endpoints": [{"name": pod_name(p), "pod": p} for p in c["pods"]]
                     + [e for e in c["endpoints"] if "fqdn" not in e],
        "flows": [f for f in c["flows"] if not f["from"].startswith("fqdn:") and not f["to"].startswith("fqdn:")],
    }


def clone(c: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(c)
