"""ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) as Cilium 1.20 enforces it with the
hidden enable-k8s-cluster-network-policy (the inventory's cilium.enableK8sClusterNetworkPolicy): the
Admin tier before CiliumNetworkPolicy/NetworkPolicy, the Baseline tier after them, Accept, Deny
and Pass, priorities and rule order; without that flag (its default) not enforced at all and said
so; and the v1alpha1 AdminNetworkPolicy pair, which Cilium does not read, named and left out.

Each case asserts the verdict and the rule that decided it, so a case fails if the flow is
allowed or denied for the wrong reason. The objects are checked against the upstream CRD schema
where the Go module cache can provide it (tests/crd_support.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cilium_support import lab_with_agent
from conftest import invoke
from crd_support import network_policy_api_validator

from topogate.analysis.netpolicy import Agent, External, PodClass, PolicyError, PolicySet, SourceRef, Verdict


def load(text: str) -> list[dict[str, Any]]:
    docs = [d for d in yaml.safe_load_all(text) if d]
    for d in docs:
        validator = network_policy_api_validator(d["kind"], d["apiVersion"])
        if validator is not None:
            errors = sorted(validator.iter_errors(d), key=str)
            assert not errors, f"{d['kind']}/{d['metadata']['name']} is not valid: {errors[0].message}"
    return docs


# The agent that reads ClusterNetworkPolicy: Cilium 1.20 with enable-k8s-cluster-network-policy.
READS_KCNP = Agent(enable_k8s_cluster_network_policy=True)


def pset(text: str, validate: bool = True, agent: Agent = READS_KCNP) -> PolicySet:
    docs = load(text) if validate else [d for d in yaml.safe_load_all(text) if d]
    return PolicySet.from_objects(((d, SourceRef("case.yaml", i + 1, 1)) for i, d in enumerate(docs)), agent=agent)


def pod(ns: str, name: str) -> PodClass:
    return PodClass(ns, (("pod", name),), (("team", ns),))


def decided(v: Verdict) -> str:
    """'allowed' or 'denied', and by which rule of which policy (or by no rule)."""
    for s in (v.egress, v.ingress):
        if not s.allowed:
            r = s.decided_by
            return "denied " + (f"{r.section}[{r.index}] {r.policy}" if r else "by default")
    rules = [s.decided_by for s in (v.egress, v.ingress) if s.decided_by is not None]
    return "allowed " + ", ".join(f"{r.section}[{r.index}] {r.policy}" for r in rules)


XA, XB, YA = pod("x", "a"), pod("x", "b"), pod("y", "a")

ADMIN_DENY_X = """
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: lock-x}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: x}}}
  ingress:
  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
"""

CNP_ALLOW_ALL_TO_XB = """
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: open-b, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: y}}]
  - fromEndpoints: [{}]
"""


def test_an_admin_deny_wins_over_a_cilium_allow() -> None:
    ps = pset(ADMIN_DENY_X + "---" + CNP_ALLOW_ALL_TO_XB)
    assert decided(ps.evaluate(YA, XB, 8080, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/lock-x"
    assert decided(ps.evaluate(XA, XB, 8080, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/lock-x"
    # the subject is namespace x: pods of y are not selected
    assert decided(ps.evaluate(XA, YA, 80, "TCP")) == "allowed "


def test_without_the_cluster_network_policy_the_cilium_allow_decides() -> None:
    ps = pset(CNP_ALLOW_ALL_TO_XB)
    assert decided(ps.evaluate(YA, XB, 8080, "TCP")) == "allowed ingress[0] CiliumNetworkPolicy/x/open-b"


def test_an_agent_without_the_hidden_flag_enforces_no_cluster_network_policy() -> None:
    """1.20.2's default (enable-k8s-cluster-network-policy false, pkg/defaults): the agent does not
    watch ClusterNetworkPolicy, so the Admin deny blocks nothing, and the user is told."""
    ps = pset(ADMIN_DENY_X + "---" + CNP_ALLOW_ALL_TO_XB, agent=Agent())
    assert decided(ps.evaluate(YA, XB, 8080, "TCP")) == "allowed ingress[0] CiliumNetworkPolicy/x/open-b"
    assert any("ClusterNetworkPolicy/lock-x" in w and "enable-k8s-cluster-network-policy" in w
               and "nothing of it is enforced" in w for w in ps.warnings), ps.warnings
    old = pset(ADMIN_DENY_X + "---" + CNP_ALLOW_ALL_TO_XB,
               agent=Agent(version="1.19.0", enable_k8s_cluster_network_policy=True))
    assert decided(old.evaluate(YA, XB, 8080, "TCP")) == "allowed ingress[0] CiliumNetworkPolicy/x/open-b"


def test_an_admin_accept_wins_over_a_cilium_deny_and_over_default_deny() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: monitoring}
spec:
  tier: Admin
  priority: 5
  subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {pod: b}}}}
  ingress:
  - action: Accept
    from: [{namespaces: {matchLabels: {team: y}}}]
    protocols: [{tcp: {destinationPort: {number: 9090}}}]
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: deny-y, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingressDeny:
  - fromEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: y}}]
""")
    assert decided(ps.evaluate(YA, XB, 9090, "TCP")) == "allowed ingress[0] ClusterNetworkPolicy/monitoring"
    # another port, or UDP: the Accept does not match, the Cilium deny decides
    assert decided(ps.evaluate(YA, XB, 9091, "TCP")) == "denied ingressDeny[0] CiliumNetworkPolicy/x/deny-y"
    assert decided(ps.evaluate(YA, XB, 9090, "UDP")) == "denied ingressDeny[0] CiliumNetworkPolicy/x/deny-y"


def test_pass_hands_the_flow_to_the_normal_tier() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: pass-then-deny}
spec:
  tier: Admin
  priority: 1
  subject: {namespaces: {}}
  ingress:
  - {action: Pass, from: [{namespaces: {matchLabels: {team: y}}}]}
  - {action: Deny, from: [{namespaces: {}}]}
---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: b-from-y, namespace: x}
spec:
  endpointSelector: {matchLabels: {pod: b}}
  ingress:
  - fromEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: y}}]
""")
    # rule 0 (Pass) comes first: the CNP allows y
    assert decided(ps.evaluate(YA, XB, 80, "TCP")) == "allowed ingress[0] CiliumNetworkPolicy/x/b-from-y"
    # from x, rule 1 denies
    assert decided(ps.evaluate(XA, XB, 80, "TCP")) == "denied ingress[1] ClusterNetworkPolicy/pass-then-deny"


def test_lower_priority_values_decide_first_and_a_tie_goes_to_deny() -> None:
    def two(p_accept: int, p_deny: int) -> PolicySet:
        return pset(f"""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {{name: accept}}
spec:
  tier: Admin
  priority: {p_accept}
  subject: {{namespaces: {{}}}}
  ingress: [{{action: Accept, from: [{{namespaces: {{}}}}]}}]
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {{name: deny}}
spec:
  tier: Admin
  priority: {p_deny}
  subject: {{namespaces: {{}}}}
  ingress: [{{action: Deny, from: [{{namespaces: {{}}}}]}}]
""")
    assert decided(two(1, 2).evaluate(XA, XB, 80, "TCP")) == "allowed ingress[0] ClusterNetworkPolicy/accept"
    assert decided(two(2, 1).evaluate(XA, XB, 80, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/deny"
    assert decided(two(3, 3).evaluate(XA, XB, 80, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/deny"


BASELINE_DENY = """
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: baseline}
spec:
  tier: Baseline
  priority: 0
  subject: {namespaces: {}}
  ingress:
  - action: Deny
    from: [{namespaces: {}}]
"""


def test_the_baseline_tier_decides_only_what_no_policy_of_the_normal_tier_does() -> None:
    ps = pset(BASELINE_DENY + "---" + CNP_ALLOW_ALL_TO_XB)
    # x/b is selected by a CNP: its allow decides
    assert decided(ps.evaluate(YA, XB, 80, "TCP")) == "allowed ingress[0] CiliumNetworkPolicy/x/open-b"
    # x/a is selected by no policy of the normal tier: the baseline denies
    assert decided(ps.evaluate(YA, XA, 80, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/baseline"


def test_a_baseline_accept_allows_what_a_networkpolicy_isolates() -> None:
    """1.20.2's engine (tests/oracles/test_cilium_oracle.py): default deny is the absence of an allow, so
    the Baseline tier's Accept lets in what a NetworkPolicy isolates with no rule of its own (the
    Kubernetes API would have the NetworkPolicy win)."""
    ps = pset("""
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: isolate, namespace: x}
spec: {podSelector: {}, policyTypes: [Ingress]}
---
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: baseline-accept}
spec:
  tier: Baseline
  priority: 10
  subject: {namespaces: {}}
  ingress:
  - {action: Accept, from: [{namespaces: {}}]}
""")
    assert decided(ps.evaluate(YA, XB, 80, "TCP")) == "allowed ingress[0] ClusterNetworkPolicy/baseline-accept"


def test_a_namespaces_peer_of_notin_alone_selects_every_pod_through_the_aggregate() -> None:
    """1.20.2's engine: a `namespaces` peer gets no cluster label, so a selector of NotIn alone
    matches the cluster's aggregate identity, and the datapath's aggregate lookup applies the rule
    to every pod, the namespace NotIn names included; and to every address (the world aggregate)."""
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: not-x}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: y}}}
  ingress:
  - action: Deny
    from: [{namespaces: {matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [x]}]}}]
""")
    assert decided(ps.evaluate(XA, YA, 80, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/not-x"
    assert decided(ps.evaluate(External(cidr="203.0.113.7/32"), YA, 80, "TCP")) == "denied ingress[0] ClusterNetworkPolicy/not-x"


def test_protocols_narrow_a_rule_to_its_ports() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: no-ssh}
spec:
  tier: Admin
  priority: 0
  subject: {namespaces: {}}
  egress:
  - action: Deny
    to: [{pods: {namespaceSelector: {}, podSelector: {}}}]
    protocols:
    - tcp: {destinationPort: {number: 22}}
    - udp: {destinationPort: {range: {start: 6000, end: 6010}}}
""")
    assert decided(ps.evaluate(XA, YA, 22, "TCP")) == "denied egress[0] ClusterNetworkPolicy/no-ssh"
    assert decided(ps.evaluate(XA, YA, 23, "TCP")) == "allowed "
    assert decided(ps.evaluate(XA, YA, 6010, "UDP")) == "denied egress[0] ClusterNetworkPolicy/no-ssh"
    assert decided(ps.evaluate(XA, YA, 6011, "UDP")) == "allowed "
    assert decided(ps.evaluate(XA, External(entity="world"), 22, "TCP")) == "allowed "
    classes = [(str(r), r.verdict.allowed) for r in ps.port_classes(XA, YA, ("TCP",))]
    assert classes == [("1-21/TCP", True), ("22/TCP", False), ("23-65535/TCP", True)]


def test_networks_and_domain_names_peers() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: egress}
spec:
  tier: Admin
  priority: 0
  subject: {namespaces: {}}
  egress:
  - {action: Accept, to: [{domainNames: ["*.example.com"]}]}
  - {action: Deny, to: [{networks: ["0.0.0.0/0"]}]}
""")
    assert decided(ps.evaluate(XA, External(fqdn="a.b.example.com"), 443, "TCP")) == (
        "allowed egress[0] ClusterNetworkPolicy/egress")
    assert decided(ps.evaluate(XA, External(fqdn="example.com"), 443, "TCP")) == (
        "denied egress[1] ClusterNetworkPolicy/egress")
    assert decided(ps.evaluate(XA, External(cidr="8.8.8.8/32"), 53, "UDP")) == (
        "denied egress[1] ClusterNetworkPolicy/egress")


def test_a_cluster_network_policy_never_switches_default_deny_on() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: one-port}
spec:
  tier: Admin
  priority: 0
  subject: {namespaces: {}}
  ingress: [{action: Accept, from: [{namespaces: {matchLabels: {team: y}}}],
             protocols: [{tcp: {destinationPort: {number: 80}}}]}]
""")
    v = ps.evaluate(XA, XB, 81, "TCP")
    assert v.allowed and not v.ingress.enforced


def test_admin_network_policy_v1alpha1_is_named_and_not_applied() -> None:
    ps = pset("""
apiVersion: policy.networking.k8s.io/v1alpha1
kind: AdminNetworkPolicy
metadata: {name: old}
spec:
  priority: 1
  subject: {namespaces: {}}
  ingress: [{action: Deny, from: [{namespaces: {}}]}]
""", validate=False)
    assert ps.evaluate(XA, XB, 80, "TCP").allowed
    (warning,) = ps.warnings
    assert "AdminNetworkPolicy/old" in warning and "not enforced by Cilium" in warning
    assert "the verdict may be too permissive" in warning


@pytest.mark.parametrize(("spec", "words"), [
    ("{tier: Middle, priority: 1, subject: {namespaces: {}}}", 'spec.tier: Unsupported value: \'Middle\''),
    ("{tier: Admin, priority: 1001, subject: {namespaces: {}}}", "spec.priority: Invalid value: 1001"),
    ("{tier: Admin, priority: 1, subject: {}}", "exactly one of namespaces or pods"),
    ("{tier: Admin, priority: 1, subject: {namespaces: {}}, ingress: [{action: Allow, from: []}]}",
     "action: Unsupported value: 'Allow'"),
])
def test_a_malformed_cluster_network_policy_gets_the_api_servers_words(spec: str, words: str) -> None:
    text = f"apiVersion: policy.networking.k8s.io/v1alpha2\nkind: ClusterNetworkPolicy\nmetadata: {{name: bad}}\nspec: {spec}\n"
    with pytest.raises(PolicyError) as err:
        pset(text, validate=False)
    assert words in str(err.value) and str(err.value).startswith("case.yaml:1:1:")


# ---------------------------------------------------------------------------------------------
# through `check` and `trace`: the lab's generated tree plus one ClusterNetworkPolicy
# ---------------------------------------------------------------------------------------------

REPO = Path(__file__).resolve().parents[2]
LAB = str(REPO / "fixtures" / "lab" / "inventory.yaml")


@pytest.fixture
def lab_kcnp(tmp_path: Path) -> str:
    """A copy of the lab whose cluster runs the agent with enable-k8s-cluster-network-policy;
    `inventory-default.yaml` beside it is the lab's own (no `cilium:` block)."""
    return str(lab_with_agent(tmp_path, "{enableK8sClusterNetworkPolicy: true}"))


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lab_kcnp: str) -> Path:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    assert invoke("generate", lab_kcnp, "-o", str(out)).exit_code == 0
    return out


def extra(tmp_path: Path, text: str) -> Path:
    f = tmp_path / "extra" / "cnp.yaml"
    f.parent.mkdir(exist_ok=True)
    load(text)  # valid against the upstream CRD
    f.write_text(text)
    return f.parent


def check(tree: Path, more: Path, inventory: str) -> tuple[int, list[dict[str, Any]]]:
    r = invoke("check", inventory, str(tree / "clusters" / "lab"), str(more), "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)["findings"]


LOCK_ML_DEMO = """
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: lock-ml-demo}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: ml-demo}}}
  ingress:
  - {name: deny-all, action: Deny, from: [{namespaces: {}}]}
"""


def test_an_admin_deny_of_all_ingress_to_the_jobs_namespace_fails_the_check(tree: Path, tmp_path: Path,
                                                                           lab_kcnp: str) -> None:
    code, fs = check(tree, extra(tmp_path, LOCK_ML_DEMO), lab_kcnp)
    blocked = [x for x in fs if x["rule"] == "TG101"]
    assert code == 1 and blocked, fs
    assert all("ingress rule 0 of ClusterNetworkPolicy/lock-ml-demo" in x["message"] for x in blocked), blocked
    # the deciding rule at its own line: the Deny of the policy's ingress[0]
    assert all("extra/cnp.yaml:10:5" in x["message"] for x in blocked), blocked
    r = invoke("trace", str(tree / "clusters" / "lab"), str(tmp_path / "extra"), "--inventory",
               lab_kcnp, "--from", "ml-demo/PyTorchJob/train/Worker", "--to",
               "ml-demo/PyTorchJob/train/Master", "--port", "23456")
    assert r.exit_code == 1 and "ClusterNetworkPolicy/lock-ml-demo" in r.output, r.output
    # The lab inventory says nothing of the flag: 1.20.2's default agent does not read it.
    code, fs = check(tree, tmp_path / "extra", str(Path(lab_kcnp).with_name("inventory-default.yaml")))
    assert code == 0 and not [x for x in fs if x["rule"] == "TG101"], fs
    assert any(x["rule"] == "TG120" and "enable-k8s-cluster-network-policy" in x["message"] for x in fs), fs


def test_a_baseline_deny_does_not_override_the_generated_policies(tree: Path, tmp_path: Path, lab_kcnp: str) -> None:
    code, fs = check(tree, extra(tmp_path, LOCK_ML_DEMO.replace("Admin", "Baseline")), lab_kcnp)
    assert not [x for x in fs if x["rule"] == "TG101"], fs


def test_an_admin_accept_from_every_namespace_opens_the_boundary(tree: Path, tmp_path: Path, lab_kcnp: str) -> None:
    code, fs = check(tree, extra(tmp_path, """
apiVersion: policy.networking.k8s.io/v1alpha2
kind: ClusterNetworkPolicy
metadata: {name: open-ml-demo}
spec:
  tier: Admin
  priority: 10
  subject: {namespaces: {matchLabels: {kubernetes.io/metadata.name: ml-demo}}}
  ingress:
  - action: Accept
    from: [{namespaces: {matchLabels: {kubernetes.io/metadata.name: tools}}}]
    protocols: [{tcp: {destinationPort: {number: 8080}}}]
"""), lab_kcnp)
    opened = [x for x in fs if x["rule"] in ("TG107", "TG112")]
    assert code == 1 and opened, fs
    assert any("any pod of namespace tools" in x["message"] and "8080/TCP" in x["message"]
               and "ClusterNetworkPolicy/open-ml-demo" in x["message"] for x in opened), opened
