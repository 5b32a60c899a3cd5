"""cilium-oracle itself (tests/cilium/): Cilium v1.20.2's code answers what that version's own
sources say it does. These pin the harness, so that the property test (test_cilium_oracle.py)
compares topogate against the agent, not against a mistake in how the agent is driven."""

from __future__ import annotations

from typing import Any

from cilium_support import CiliumOracle


def _cnp(name: str, spec: dict[str, Any], ns: str = "ml") -> dict[str, Any]:
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": name, "namespace": ns}, "spec": spec}


def _pod(name: str, labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    return {"name": name, "pod": {"metadata": {"name": name, "namespace": "ml", "labels": labels}, "spec": spec}}


def _ask(oracle: CiliumOracle, policies: list[dict[str, Any]], flows: list[tuple[str, str, int]],
         settings: dict[str, Any] | None = None) -> dict[str, Any]:
    endpoints = [
        _pod("a", {"app": "a", "topology.kubernetes.io/zone": "zone-a"}),
        _pod("b", {"app": "b", "topology.kubernetes.io/zone": "zone-a"},
             containers=[{"name": "c", "ports": [{"name": "rdzv", "containerPort": 23456}]}]),
        {"name": "world", "entity": "world"}, {"name": "api", "entity": "kube-apiserver"},
        {"name": "inside", "cidr": "10.1.2.3"}, {"name": "outside", "cidr": "8.8.8.8"},
    ]
    answer = oracle.ask({"settings": settings or {}, "namespaces": [{"name": "ml", "labels": {"team": "ml"}}],
                         "policies": policies, "endpoints": endpoints,
                         "flows": [{"from": f, "to": t, "port": p, "proto": "TCP"} for f, t, p in flows]})
    assert not answer.get("error"), answer.get("error")
    assert answer["version"] == "v1.20.2"
    return answer


def test_pod_identity_follows_the_label_filter(cilium_oracle: CiliumOracle) -> None:
    got = _ask(cilium_oracle, [], [])
    a = next(e for e in got["endpoints"] if e["name"] == "a")
    assert "k8s:app=a" in a["labels"]
    assert "k8s:io.kubernetes.pod.namespace=ml" in a["labels"]
    assert "k8s:io.cilium.k8s.namespace.labels.team=ml" in a["labels"]
    assert not any("topology.kubernetes.io" in x for x in a["labels"])  # 1.20's default filter drops it
    kept = _ask(cilium_oracle, [], [], {"labels": ["k8s:topology.kubernetes.io/zone"]})
    a = next(e for e in kept["endpoints"] if e["name"] == "a")
    assert "k8s:topology.kubernetes.io/zone=zone-a" in a["labels"]
    assert "k8s:app=a" not in a["labels"]  # an include list keeps only what it names (and the defaults')


def test_a_selector_on_a_filtered_label_selects_nothing(cilium_oracle: CiliumOracle) -> None:
    zone = _cnp("zone", {"endpointSelector": {"matchLabels": {"k8s:topology.kubernetes.io/zone": "zone-a"}},
                         "ingress": [{"fromEndpoints": [{"matchLabels": {"app": "nobody"}}]}]})
    got = _ask(cilium_oracle, [zone], [("a", "b", 80)])
    assert got["flows"][0] == {"egress": "allowed", "ingress": "allowed"}
    got = _ask(cilium_oracle, [zone], [("a", "b", 80)], {"labels": ["k8s:topology.kubernetes.io/zone"]})
    assert got["flows"][0]["ingress"] == "denied"


def test_two_peer_kinds_in_one_rule_are_refused(cilium_oracle: CiliumOracle) -> None:
    bad = _cnp("bad", {"endpointSelector": {}, "egress": [{"toEndpoints": [{}], "toCIDR": ["10.0.0.0/8"]}]})
    got = _ask(cilium_oracle, [bad], [("a", "world", 443)])
    # The agent names the pair in its map's (random) order.
    assert any(f"combining {a} and {b} is not supported yet" in got["policies"][0]["error"]
               for a, b in (("ToCIDR", "ToEndpoints"), ("ToEndpoints", "ToCIDR")))
    assert got["flows"][0]["egress"] == "allowed"  # nothing of it is imported: no default deny


def test_world_is_outside_every_named_cidr(cilium_oracle: CiliumOracle) -> None:
    rule = _cnp("out", {"endpointSelector": {"matchLabels": {"app": "a"}},
                        "egress": [{"toCIDRSet": [{"cidr": "0.0.0.0/0", "except": ["10.0.0.0/8"]}]}]})
    got = _ask(cilium_oracle, [rule], [("a", "world", 443), ("a", "inside", 443), ("a", "outside", 443)])
    assert [f["egress"] for f in got["flows"]] == ["allowed", "denied", "allowed"]
    inside = next(e for e in got["endpoints"] if e["name"] == "inside")
    assert inside["labels"] == ["cidr:10.0.0.0/8", "reserved:world"]


def test_kube_apiserver_identity_by_where_it_runs(cilium_oracle: CiliumOracle) -> None:
    nodes = _cnp("nodes", {"endpointSelector": {"matchLabels": {"app": "a"}}, "egress": [{"toEntities": ["remote-node"]}]})
    flows = [("a", "api", 443)]
    assert _ask(cilium_oracle, [nodes], flows)["flows"][0]["egress"] == "allowed"
    assert _ask(cilium_oracle, [nodes], flows, {"apiServer": "world"})["flows"][0]["egress"] == "denied"
    api = next(e for e in _ask(cilium_oracle, [], [], {"apiServer": "host"})["endpoints"] if e["name"] == "api")
    assert api["identity"] == 1 and "reserved:kube-apiserver" in api["labels"]


def test_named_ports_and_default_deny(cilium_oracle: CiliumOracle) -> None:
    rdzv = _cnp("rdzv", {"endpointSelector": {"matchLabels": {"app": "b"}},
                         "ingress": [{"fromEndpoints": [{"matchLabels": {"app": "a"}}],
                                      "toPorts": [{"ports": [{"port": "rdzv", "protocol": "TCP"}]}]}]})
    got = _ask(cilium_oracle, [rdzv], [("a", "b", 23456), ("a", "b", 23457), ("world", "b", 23456)])
    assert [f["ingress"] for f in got["flows"]] == ["allowed", "denied", "denied"]
    assert got["flows"][2]["egress"] == "none"  # world is no endpoint: no egress policy of its own
