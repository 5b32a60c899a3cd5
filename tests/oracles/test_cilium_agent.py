"""The seven classes of issue 35 (and what came with them), one small case each, as Cilium 1.20.2's
engine decides them (tests/oracles/test_cilium_oracle.py holds the same to the engine itself on generated
cases; these name each behaviour and its source)."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from topogate.analysis.netpolicy import Agent, External, PodClass, PolicySet, SourceRef
from topogate.analysis.netpolicy.agent import LabelFilter, agent_for
from topogate.inventory.model import CiliumConfig

A = PodClass("ml", (("app", "a"), ("topology.kubernetes.io/zone", "zone-a")))
B = PodClass("ml", (("app", "b"),))
WORLD = External(entity="world")
API = External(entity="kube-apiserver")


def pset(text: str, agent: Agent | None = None) -> PolicySet:
    docs = [d for d in yaml.safe_load_all(text) if d]
    return PolicySet.from_objects([(d, SourceRef("p.yaml", i + 1, 1)) for i, d in enumerate(docs)],
                                  agent=agent or Agent())


def cnp(spec: str, name: str = "p") -> str:
    return f"apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {{name: {name}, namespace: ml}}\nspec:\n{spec}"


def allowed(ps: PolicySet, src: Any, dst: Any, port: int = 80) -> bool:
    return ps.evaluate(src, dst, port, "TCP").allowed


# 1. identity labels -----------------------------------------------------------------------------

@pytest.mark.parametrize(("key", "kept"), [
    ("app", True), ("topology.kubernetes.io/zone", False), ("kubernetes.io/hostname", False),
    ("failure-domain.beta.kubernetes.io/zone", False), ("pod-template-hash", False), ("node.kubernetes.io/pool", True),
    ("app.kubernetes.io/name", True), ("io.kubernetes.pod.namespace", True),
    ("io.cilium.k8s.namespace.labels.kubernetes.io/metadata.name", True), ("k8s.io/x", False),
    ("statefulset.kubernetes.io/pod-name", False), ("topogate.dev/network-zone", True),
])
def test_the_default_label_filter_of_1_20(key: str, kept: bool) -> None:
    assert LabelFilter().keeps(key) is kept


def test_an_include_entry_makes_an_allow_list_and_the_longest_match_wins() -> None:
    f = LabelFilter(("k8s:app", "k8s:!app.kubernetes.io/name"))  # [source:][!]prefix
    assert (f.keeps("app"), f.keeps("role"), f.keeps("io.kubernetes.pod.namespace")) == (True, False, True)
    assert not f.keeps("app.kubernetes.io/name")  # the ignore matches more than the include
    assert LabelFilter(topology=False).keeps("topology.kubernetes.io/zone")  # 1.18


def test_a_zone_policy_on_the_node_topology_label_selects_nothing() -> None:
    text = cnp("  endpointSelector: {matchLabels: {k8s:topology.kubernetes.io/zone: zone-a}}\n"
               "  egress: [{toEndpoints: [{matchLabels: {app: a}}]}]\n")
    assert allowed(pset(text), A, B)
    assert [u.keys for u in pset(text).unselecting] == [("topology.kubernetes.io/zone",)]
    assert not allowed(pset(text, Agent(labels=("k8s:topology.kubernetes.io/zone", "k8s:app"))), A, B)
    assert not allowed(pset(text, Agent(version="1.18.0")), A, B)


# 2. policies the agent refuses ------------------------------------------------------------------

@pytest.mark.parametrize(("rule", "reason"), [
    ("{toEndpoints: [{}], toCIDR: [10.0.0.0/8]}", "combining ToCIDR and ToEndpoints is not supported yet"),
    ("{toEndpoints: [{}], toEntities: [world]}", "combining ToEndpoints and ToEntities is not supported yet"),
    ("{toNodes: [{}]}", 'FromNodes/ToNodes rules can only be applied when the "enable-node-selector-labels"'),
    ("{toCIDRSet: [{cidr: 10.0.0.0/8, except: [192.168.0.0/16]}]}", "does not contain exclude CIDR prefix"),
    ("{icmps: [{fields: [{type: 8}]}], toPorts: [{ports: [{port: '80'}]}]}", "the ICMPs block may only be present"),
    ("{toPorts: [{ports: [{port: '80', protocol: UDP}], rules: {http: [{method: GET}]}}]}",
     "L7 rules can only apply to TCP (not UDP)"),
])
def test_what_the_agent_refuses_enforces_nothing(rule: str, reason: str) -> None:
    ps = pset(cnp(f"  endpointSelector: {{}}\n  egress:\n  - {rule}\n"))
    (r,) = ps.refused
    assert reason in r.reason and r.path == ("spec", "egress", 0, *r.path[3:])
    assert allowed(ps, B, WORLD, 443)  # no default deny either


# 3. the cluster-mesh entity, 4. reserved: selectors ------------------------------------------------

def test_cluster_mesh_selects_the_cluster() -> None:
    ps = pset(cnp("  endpointSelector: {}\n  egress: [{toEntities: [cluster-mesh]}]\n"))
    assert allowed(ps, A, B) and allowed(ps, A, External(entity="remote-node")) and not allowed(ps, A, WORLD)
    assert pset(cnp("  endpointSelector: {}\n  egress: [{toEntities: [cluster-mesh]}]\n"),
                Agent(version="1.19.0")).refused  # unsupported entity before 1.20


def test_a_reserved_selector_selects_the_reserved_identity() -> None:
    ps = pset(cnp('  endpointSelector: {}\n  ingress: [{fromEndpoints: [{matchLabels: {"reserved:world": ""}}]}]\n'))
    assert allowed(ps, WORLD, A) and not allowed(ps, B, A)
    assert allowed(ps, External(cidr="10.1.2.3/32"), A)  # an address of the world carries its label too


# 5. the kube-apiserver's second identity ----------------------------------------------------------

@pytest.mark.parametrize(("where", "entity", "reaches"), [
    ("remote-node", "remote-node", True), ("remote-node", "world", False), ("world", "world", True),
    ("world", "remote-node", False), ("host", "host", True), ("host", "remote-node", False),
])
def test_the_kube_apiserver_carries_the_identity_of_where_it_runs(where: str, entity: str, reaches: bool) -> None:
    ps = pset(cnp(f"  endpointSelector: {{}}\n  egress: [{{toEntities: [{entity}]}}]\n"), Agent(api_server=where))
    assert allowed(ps, A, API, 443) is reaches


# 6. world vs 0.0.0.0/0 with except ------------------------------------------------------------------

@pytest.mark.parametrize("section", ["egress", "egressDeny"])
def test_0_0_0_0_with_an_except_selects_the_world_in_allow_and_deny_alike(section: str) -> None:
    rule = "{toCIDRSet: [{cidr: 0.0.0.0/0, except: [10.0.0.0/8]}]}"
    spec = f"  endpointSelector: {{}}\n  {section}: [{rule}]\n"
    if section == "egressDeny":
        spec += "  egress: [{toEntities: [all]}]\n"
    ps = pset(cnp(spec))
    deny = section == "egressDeny"
    assert allowed(ps, A, WORLD, 443) is not deny
    assert allowed(ps, A, External(cidr="8.8.8.8/32"), 443) is not deny
    assert allowed(ps, A, External(cidr="10.1.2.3/32"), 443) is deny


# 7. NetworkPolicy rules outside policyTypes -----------------------------------------------------------

def test_networkpolicy_egress_rules_apply_whatever_policytypes_says() -> None:
    ps = pset("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: n, namespace: ml}\n"
              "spec:\n  podSelector: {}\n  policyTypes: [Ingress]\n  egress: [{to: [{podSelector: {matchLabels: {app: b}}}]}]\n")
    assert ps.evaluate(A, B, 80, "TCP").egress.allowed and not allowed(ps, A, WORLD)
    assert any("cilium/cilium#48703" in w for w in ps.warnings)


# what came with them -----------------------------------------------------------------------------------

def test_a_toports_entry_without_ports_admits_nothing() -> None:
    assert not allowed(pset(cnp("  endpointSelector: {}\n  egress: [{toEndpoints: [{}], toPorts: [{}]}]\n")), A, B)
    # an empty toFQDNs list beside toPorts is as if not written: an L4-only rule
    assert allowed(pset(cnp("  endpointSelector: {}\n  egress: [{toFQDNs: [], toPorts: [{ports: [{port: '80'}]}]}]\n")),
                   A, WORLD)


@pytest.mark.parametrize(("mode", "a_to_b", "host_to_a"), [("default", True, True), ("always", False, False),
                                                          ("never", True, True)])
def test_the_enforcement_mode(mode: str, a_to_b: bool, host_to_a: bool) -> None:
    ps = pset(cnp("  endpointSelector: {matchLabels: {app: c}}\n  ingress: [{}]\n"), Agent(enforcement=mode))
    assert allowed(ps, A, B) is a_to_b
    assert allowed(ps, External(entity="host"), A) is host_to_a


def test_allow_localhost_policy_needs_a_rule_for_the_host() -> None:
    text = cnp("  endpointSelector: {}\n  ingress: [{fromEndpoints: [{}]}]\n")
    assert allowed(pset(text), External(entity="host"), A)
    assert not allowed(pset(text, Agent(allow_localhost="policy")), External(entity="host"), A)


def test_the_cluster_name_is_the_agents() -> None:
    text = cnp('  endpointSelector: {}\n  egress: [{toEndpoints: [{matchLabels: {"io.cilium.k8s.policy.cluster": east}}]}]\n')
    assert not allowed(pset(text), A, B)  # the agent's default cluster-name is "default"
    assert allowed(pset(text, Agent(cluster_name="east")), A, B)


def test_agent_for_reads_the_inventory_block() -> None:
    a = agent_for(CiliumConfig(version="v1.20", labels=("k8s:app",), kube_api_server="world"))
    assert (a.version, a.labels, a.api_server) == ("1.20.2", ("k8s:app",), "world")
    assert "kubeAPIServer" not in a.unset and "allowLocalhost" in a.unset
    assert agent_for(None).unset >= {"version", "kubeAPIServer"}
