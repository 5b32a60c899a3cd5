"""An ok is a proof over every pod (proof issue, section 1): the proofs ask the witnesses every
peer selector of the deciding rules describes, not a fixed set of stand-in pods.

Each example of the issue: the lab's generated tree (boundary policies and the job's policy)
plus one hand-written policy, checked through the CLI with the real kustomize. Each used to
pass ("ok") while `topogate trace` on the same files said ALLOWED; now each is a finding that
names the witness in words, the exact ports and the opening rule, and trace agrees.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cilium_support import lab_with_agent
from conftest import invoke

from topogate.analysis.netpolicy import PolicySet, witnesses

REPO = Path(__file__).resolve().parents[2]
LAB = str(REPO / "fixtures" / "lab" / "inventory.yaml")


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert invoke("generate", LAB, "-o", str(out)).exit_code == 0
    return out


def policy(tmp_path: Path, spec: dict) -> Path:  # type: ignore[type-arg]
    f = tmp_path / "extra" / "policy.yaml"
    f.parent.mkdir(exist_ok=True)
    f.write_text(yaml.safe_dump({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                                 "metadata": {"name": "extra", "namespace": "ml-demo"}, "spec": spec}))
    return f


def findings(tree: Path, extra: Path, inventory: str = LAB) -> tuple[int, list[dict]]:  # type: ignore[type-arg]
    r = invoke("check", inventory, str(tree / "clusters" / "lab"), str(extra.parent),
               "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)["findings"]


def trace(tree: Path, extra: Path, src: str, dst: str, port: str) -> int:
    r = invoke("trace", str(tree / "clusters" / "lab"), str(extra.parent),
               "--inventory", LAB, "--from", src, "--to", dst, "--port", port)
    assert r.exit_code in (0, 1), r.output
    return r.exit_code


MASTER = {"matchLabels": {"topogate.dev/workload": "train", "topogate.dev/replica-group": "Master"}}


def test_every_pod_of_a_namespace_named_by_a_rule(tree: Path, tmp_path: Path) -> None:
    f = policy(tmp_path, {"endpointSelector": MASTER, "ingress": [
        {"fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "tools"}}]}]})
    code, fs = findings(tree, f)
    opened = [x for x in fs if x["rule"] == "TG112"]
    assert code == 1 and opened, fs
    msg = opened[0]["message"]
    assert "any pod of namespace tools can connect" in msg and "1-65535/TCP" in msg
    assert "ingress rule 0 of CiliumNetworkPolicy/ml-demo/extra" in msg
    assert opened[0]["file"].endswith("extra/policy.yaml")
    # pods of tools may run in any zone: the boundary of network zone gpu is open for them too
    boundary = [x for x in fs if x["rule"] == "TG107"]
    assert any("any pod of namespace tools can reach PyTorchJob/ml-demo/train (Master" in x["message"]
               for x in boundary), boundary
    assert trace(tree, f, "tools:app=x", "ml-demo/PyTorchJob/train/Master", "8080") == 0


def test_labelled_pods_of_another_namespace_on_one_port(tree: Path, tmp_path: Path) -> None:
    f = policy(tmp_path, {"endpointSelector": MASTER, "ingress": [
        {"fromEndpoints": [{"matchLabels": {"app": "dashboard", "k8s:io.kubernetes.pod.namespace": "data"}}],
         "toPorts": [{"ports": [{"port": "8265", "protocol": "TCP"}]}]}]})
    code, fs = findings(tree, f)
    (opened,) = [x for x in fs if x["rule"] == "TG112"]
    assert code == 1
    assert "on 8265/TCP: pods app=dashboard in namespace data can connect" in opened["message"]
    assert trace(tree, f, "data:app=dashboard", "ml-demo/PyTorchJob/train/Master", "8265") == 0
    assert trace(tree, f, "data:app=dashboard", "ml-demo/PyTorchJob/train/Master", "8266") == 1


def test_the_jobs_own_egress_to_an_unmanaged_namespace(tree: Path, tmp_path: Path) -> None:
    f = policy(tmp_path, {"endpointSelector": {"matchLabels": {"topogate.dev/workload": "train"}},
                          "egress": [{"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "tools"}}]}]})
    code, fs = findings(tree, f)
    boundary = [x for x in fs if x["rule"] == "TG107"]
    assert code == 1 and boundary, fs
    assert any(x["message"].startswith("PyTorchJob/ml-demo/train (")
               and "can reach any pod of namespace tools on 1-65535/TCP, 1-65535/UDP, 1-65535/SCTP" in x["message"]
               and "egress rule 0 of CiliumNetworkPolicy/ml-demo/extra" in x["message"] for x in boundary), boundary
    assert trace(tree, f, "ml-demo/PyTorchJob/train/Worker", "tools:app=x", "5432") == 0


def test_the_generated_tree_alone_stays_clean(tree: Path) -> None:
    r = invoke("check", LAB, "--rendered", str(tree), str(tree / "clusters" / "lab"),
               "--format", "json")
    assert (r.exit_code, json.loads(r.stdout)["findings"]) == (0, [])


@pytest.mark.parametrize("selector,words", [
    ({"matchLabels": {"k8s:io.kubernetes.pod.namespace": "tools"}}, "any pod of namespace tools"),
    ({"matchLabels": {"app": "dashboard", "io.kubernetes.pod.namespace": "data"}},
     "pods app=dashboard in namespace data"),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]},
                           {"key": "x", "operator": "Exists"}, {"key": "y", "operator": "DoesNotExist"}]},
     "pods tier=a,x=topogate-witness in namespace ml-demo"),
    ({"matchLabels": {"io.cilium.k8s.namespace.labels.team": "ops"}},
     "any pod of any namespace labelled team=ops"),  # naming namespace labels lifts the scope
])
def test_a_witness_meets_its_selector(selector: dict, words: str) -> None:  # type: ignore[type-arg]
    obj = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
           "metadata": {"name": "p", "namespace": "ml-demo"},
           "spec": {"endpointSelector": {}, "ingress": [{"fromEndpoints": [selector]}]}}
    ps = PolicySet.from_objects([(obj, None)], cluster_name="lab")
    from topogate.analysis.netpolicy import PodClass

    (m,) = ps.allow_matchers(PodClass("ml-demo", ()), "ingress")
    (w,) = witnesses(m)
    assert w.words == words
    assert ps.matches_peer(m, w.peer)  # the witness is one of the peers the selector admits


def test_an_unsatisfiable_selector_has_no_witness() -> None:
    obj = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
           "metadata": {"name": "p", "namespace": "ml-demo"},
           "spec": {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{"matchExpressions": [
               {"key": "a", "operator": "In", "values": ["1"]}, {"key": "a", "operator": "NotIn", "values": ["1"]}]}]}]}}
    ps = PolicySet.from_objects([(obj, None)], cluster_name="lab")
    from topogate.analysis.netpolicy import PodClass

    (m,) = ps.allow_matchers(PodClass("ml-demo", ()), "ingress")
    assert witnesses(m) == []


def test_to_nodes_selects_the_pools_its_labels_name(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # toNodes needs the agent's enable-node-selector-labels (else it refuses the policy: TG125)
    inv = str(lab_with_agent(tmp_path, "{enableNodeSelectorLabels: true}"))
    monkeypatch.chdir(tmp_path)
    tree = tmp_path / "out"
    assert invoke("generate", inv, "-o", str(tree)).exit_code == 0
    # to the nodes of the cpu pool, which are in the other network zone: the boundary opens
    f = policy(tmp_path, {"endpointSelector": MASTER, "egress": [
        {"toNodes": [{"matchLabels": {"node-type": "cpu"}}], "toPorts": [{"ports": [{"port": "9100", "protocol": "TCP"}]}]}]})
    default = str(Path(inv).with_name("inventory-default.yaml"))
    code, fs = findings(tree, f, default)
    refused = [x for x in fs if x["rule"] == "TG125"]
    assert code == 1 and refused and "enable-node-selector-labels" in refused[0]["message"], fs
    assert not [x for x in fs if x["rule"] == "TG107" and "9100" in x["message"]], fs
    code, fs = findings(tree, f, inv)
    boundary = [x for x in fs if x["rule"] == "TG107"]
    assert code == 1 and any("nodes of pool cpu (zone zone-b)" in x["message"] and "9100/TCP" in x["message"]
                             for x in boundary), fs
    assert not [x for x in fs if x["rule"] == "TG120"], fs  # modelled now: no not-modelled warning
    # to the gpu pool's nodes, in the job's own network zone: no boundary is crossed
    (tmp_path / "extra").joinpath("policy.yaml").unlink()
    f = policy(tmp_path, {"endpointSelector": MASTER, "egress": [
        {"toNodes": [{"matchLabels": {"node-type": "gpu"}}], "toPorts": [{"ports": [{"port": "9100", "protocol": "TCP"}]}]}]})
    code, fs = findings(tree, f, inv)
    assert not [x for x in fs if x["rule"] == "TG107" and "9100" in x["message"]], fs


def test_node_selectors_match_node_labels() -> None:
    from topogate.analysis.netpolicy import Agent, External, PodClass, SourceRef

    objs = [({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy", "metadata": {"name": "n", "namespace": "x"},
              "spec": {"endpointSelector": {}, "egress": [{"toNodes": [{"matchLabels": {"node-type": "cpu"}}]}]}},
             SourceRef("p.yaml", 1, 1))]
    ps = PolicySet.from_objects(objs, agent=Agent(enable_node_selector_labels=True))
    pod = PodClass("x", (("app", "a"),))
    assert ps.evaluate(pod, External(entity="remote-node", labels=(("node-type", "cpu"),)), 22, "TCP").allowed
    assert not ps.evaluate(pod, External(entity="remote-node", labels=(("node-type", "gpu"),)), 22, "TCP").allowed
    # a node of unknown labels may be one of them; the local host never is (reserved:remote-node)
    assert ps.evaluate(pod, External(entity="remote-node"), 22, "TCP").allowed
    assert not ps.evaluate(pod, External(entity="host", labels=(("node-type", "cpu"),)), 22, "TCP").allowed
    assert not ps.warnings
    # The agent's default refuses the policy: nothing of it, default deny included, is enforced.
    refused = PolicySet.from_objects(objs)
    assert [r.reason for r in refused.refused] == [
        'FromNodes/ToNodes rules can only be applied when the "enable-node-selector-labels" flag is set']
    assert refused.evaluate(pod, External(entity="world"), 22, "TCP").allowed


def test_a_reserved_selector_stands_for_its_entity() -> None:
    """`fromEndpoints: [{matchLabels: {reserved:world: ""}}]` selects the world identity (the agent
    leaves a reserved: selector unscoped): its witness is the entity, which the rule admits."""
    from topogate.analysis.netpolicy import External, PodClass, SourceRef

    obj = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy", "metadata": {"name": "w", "namespace": "x"},
           "spec": {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{"matchLabels": {"reserved:world": ""}}]}]}}
    ps = PolicySet.from_objects([(obj, SourceRef("p.yaml", 1, 1))])
    pod = PodClass("x", (("app", "a"),))
    (m,) = ps.allow_matchers(pod, "ingress")
    assert [w.peer for w in witnesses(m)] == [External(entity="world")]
    assert ps.evaluate(External(entity="world"), pod, 80, "TCP").allowed
    assert not ps.evaluate(PodClass("x", (("app", "b"),)), pod, 80, "TCP").allowed
