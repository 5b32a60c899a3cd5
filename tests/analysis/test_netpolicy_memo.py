"""What the evaluator remembers by the units selecting a pod, and the open ports it remembers by
the shape of a pair's two sides, answer exactly what a policy set that remembers nothing
answers.

The boundary proof and a job's flows ask the same questions of many pod classes: a job's Master
and Workers differ only by their replica-group label, and every job's own policy holds a copy
of the same rule to kube-dns. `SideVerdicts` keys a side's rules, signature and shape by the
selecting units (not by pod class) and `PolicySet.open_spans` keys the open ports by the shape
of both sides (not by which rules hold them). Here one policy set is asked every pair, in a
drawn order, so its memory is reused wherever a key allows, and each answer is held equal to
that of a fresh policy set built from the same objects, which has nothing to reuse.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.analysis.netpolicy import External, PodClass, PolicySet, SourceRef
from topogate.analysis.netpolicy.model import DIRECTION_EGRESS, DIRECTION_INGRESS

NAMESPACES = ("a", "b")
LABELS = {"app": ("x", "y"), "role": ("m", "w")}
ENTITIES = ("host", "world", "remote-node", "cluster", "all")


def _labels(draw: Any) -> dict[str, str]:
    return draw(st.dictionaries(st.sampled_from(sorted(LABELS)), st.sampled_from(("x", "y", "m", "w")), max_size=2))


port_entries = st.lists(st.one_of(
    st.builds(lambda p, proto: {"port": str(p), "protocol": proto},
              st.sampled_from((53, 80, 443, 8080)), st.sampled_from(("TCP", "UDP", "SCTP", "ANY"))),
    st.builds(lambda lo, n, proto: {"port": str(lo), "endPort": lo + n, "protocol": proto},
              st.sampled_from((1, 80, 1000)), st.sampled_from((0, 20, 9000)), st.sampled_from(("TCP", "UDP"))),
    st.builds(lambda name: {"port": name, "protocol": "TCP"}, st.sampled_from(("http", "metrics"))),
), min_size=1, max_size=3)


@st.composite
def cilium_rule(draw: Any, direction: str, deny: bool) -> dict[str, Any]:
    peer = "fromEndpoints" if direction == "ingress" else "toEndpoints"
    entities = "fromEntities" if direction == "ingress" else "toEntities"
    rule: dict[str, Any] = {}
    if draw(st.booleans()):
        rule[entities] = draw(st.lists(st.sampled_from(ENTITIES), min_size=1, max_size=2, unique=True))
    else:
        sel: dict[str, Any] = {"matchLabels": _labels(draw)}
        if draw(st.booleans()):
            sel["matchLabels"]["k8s:io.kubernetes.pod.namespace"] = draw(st.sampled_from(NAMESPACES))
        rule[peer] = [sel]
    if draw(st.booleans()):
        ports = draw(port_entries)
        if deny:  # deny rules take numbers only
            ports = [p for p in ports if p["port"].isdigit()] or [{"port": "80", "protocol": "TCP"}]
        rule["toPorts"] = [{"ports": ports}]
    return rule


@st.composite
def cilium_policy(draw: Any, i: int) -> dict[str, Any]:
    clusterwide = draw(st.booleans())
    meta: dict[str, Any] = {"name": f"p{i}"}
    if not clusterwide:
        meta["namespace"] = draw(st.sampled_from(NAMESPACES))
    spec: dict[str, Any] = {"endpointSelector": {"matchLabels": _labels(draw)}}
    for section, direction, deny in (("ingress", "ingress", False), ("egress", "egress", False),
                                     ("ingressDeny", "ingress", True), ("egressDeny", "egress", True)):
        n = draw(st.integers(0, 2 if not deny else 1))
        if n:
            spec[section] = [draw(cilium_rule(direction, deny)) for _ in range(n)]
    if draw(st.integers(0, 4)) == 0:
        spec["enableDefaultDeny"] = {"ingress": draw(st.booleans()), "egress": draw(st.booleans())}
    kind = "CiliumClusterwideNetworkPolicy" if clusterwide else "CiliumNetworkPolicy"
    return {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": meta, "spec": spec}


@st.composite
def network_policy(draw: Any, i: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"podSelector": {"matchLabels": _labels(draw)}, "policyTypes": ["Ingress", "Egress"]}
    for section, peer in (("ingress", "from"), ("egress", "to")):
        rules = []
        for _ in range(draw(st.integers(0, 2))):
            rule: dict[str, Any] = {peer: [{"podSelector": {"matchLabels": _labels(draw)}}]}
            if draw(st.booleans()):
                rule["ports"] = [{"port": p, "protocol": "TCP"} for p in
                                 draw(st.lists(st.sampled_from((80, 443, "http")), min_size=1, max_size=2))]
            rules.append(rule)
        spec[section] = rules
    meta = {"name": f"np{i}", "namespace": draw(st.sampled_from(NAMESPACES))}
    return {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta, "spec": spec}


@st.composite
def objects(draw: Any) -> list[tuple[dict[str, Any], SourceRef]]:
    out = []
    for i in range(draw(st.integers(0, 5))):
        obj = draw(network_policy(i)) if draw(st.integers(0, 3)) == 0 else draw(cilium_policy(i))
        out.append((obj, SourceRef("p.yaml", i + 1, 1)))
    return out


# Pods that policies tell apart by one label only (a Master and a Worker), or not at all but for
# their named ports: the keys that stand for a pod must keep what a rule reads of it.
pods = st.builds(
    lambda ns, labels, ports: PodClass(ns, tuple(sorted(labels.items())), (), ports),
    st.sampled_from(NAMESPACES),
    st.dictionaries(st.sampled_from(sorted(LABELS)), st.sampled_from(("x", "y", "m", "w")), max_size=2),
    st.sampled_from(((), (("http", 8080, "TCP"),), (("http", 9090, "TCP"), ("metrics", 9100, "TCP")))),
)
peers = st.one_of(pods, st.builds(External, entity=st.sampled_from(("host", "world", "remote-node"))))


def _runs(ps: PolicySet, src: Any, dst: Any,
          protocols: tuple[str, ...] = ("TCP", "UDP", "SCTP")) -> tuple[tuple[str, int, int], ...]:
    """The open ports of open_ranges, joined where they touch: open_spans without its memory."""
    runs: list[tuple[str, int, int]] = []
    for r in ps.open_ranges(src, dst, protocols):
        if runs and runs[-1][0] == r.protocol and runs[-1][2] + 1 >= r.start:
            runs[-1] = (r.protocol, runs[-1][1], r.end)
        else:
            runs.append((r.protocol, r.start, r.end))
    return tuple(runs)


@settings(max_examples=120, deadline=None)
@given(objects(), st.lists(peers, min_size=2, max_size=6), st.randoms(use_true_random=False))
def test_remembered_answers_are_the_fresh_answers(objs: list[tuple[dict[str, Any], SourceRef]],
                                                  ends: list[Any], rnd: Any) -> None:
    shared = PolicySet.from_objects(objs)
    pairs = list(itertools.product(ends, ends))
    rnd.shuffle(pairs)
    for src, dst in pairs:
        fresh = PolicySet.from_objects(objs)
        assert shared.open_spans(src, dst) == _runs(fresh, src, dst), (src, dst)
        assert shared.open_spans(src, dst, ("TCP",)) == _runs(PolicySet.from_objects(objs), src, dst, ("TCP",))
        for port, proto in ((53, "UDP"), (80, "TCP"), (8080, "TCP"), (9100, "TCP"), (5000, "SCTP")):
            got = shared.evaluate(src, dst, port, proto)
            want = PolicySet.from_objects(objs).evaluate(src, dst, port, proto)
            assert (got, got.reason) == (want, want.reason), (src, dst, port, proto)
        if isinstance(src, PodClass):
            assert shared.closed(src, dst, dst, DIRECTION_EGRESS) == fresh.closed(src, dst, dst, DIRECTION_EGRESS)
            assert shared.allow_matchers(src, DIRECTION_EGRESS) == fresh.allow_matchers(src, DIRECTION_EGRESS)
        if isinstance(dst, PodClass):
            assert shared.closed(dst, src, dst, DIRECTION_INGRESS) == fresh.closed(dst, src, dst, DIRECTION_INGRESS)
        assert list(shared.port_classes(src, dst)) == list(PolicySet.from_objects(objs).port_classes(src, dst))


def test_a_jobs_groups_share_one_answer_and_other_jobs_share_its_shape() -> None:
    """Two jobs, each with its own policy (the generated one's shape): the Worker is answered
    from what the Master's question left, and the second job's kube-dns question from the
    first job's open ports, by shape; a third job whose rule to kube-dns opens one more port
    gets its own answer."""
    def job(name: str, dns_ports: tuple[str, ...]) -> dict[str, Any]:
        return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                "metadata": {"name": name, "namespace": "a"},
                "spec": {"endpointSelector": {"matchLabels": {"job": name}},
                         "ingress": [{"fromEndpoints": [{"matchLabels": {"job": name}}]}],
                         "egress": [{"toEndpoints": [{"matchLabels": {"job": name}}]},
                                    {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                                      "k8s-app": "kube-dns"}}],
                                     "toPorts": [{"ports": [{"port": p, "protocol": "ANY"} for p in dns_ports]}]}]}}

    objs = [(job("j1", ("53",)), SourceRef("p.yaml", 1, 1)), (job("j2", ("53",)), SourceRef("p.yaml", 2, 1)),
            (job("j3", ("53", "5353")), SourceRef("p.yaml", 3, 1))]
    ps = PolicySet.from_objects(objs)
    dns = PodClass("kube-system", (("k8s-app", "kube-dns"),))
    master, worker = (PodClass("a", (("group", g), ("job", "j1"))) for g in ("Master", "Worker"))
    assert ps.selection.units_for(master) is ps.selection.units_for(worker)
    calls: list[object] = []
    real = ps.open_ranges

    def counted(src: Any, dst: Any, protocols: Any = ("TCP", "UDP", "SCTP")) -> Any:
        calls.append((src, dst))
        return real(src, dst, protocols)

    ps.open_ranges = counted  # type: ignore[method-assign]
    want = (("TCP", 53, 53), ("UDP", 53, 53), ("SCTP", 53, 53))
    assert ps.open_spans(master, dns) == want
    assert ps.open_spans(worker, dns) == want
    assert ps.open_spans(PodClass("a", (("group", "Master"), ("job", "j2"))), dns) == want
    assert len(calls) == 1  # the Worker and the other job's copy of the rule: by shape
    wider = ps.open_spans(PodClass("a", (("job", "j3"),)), dns)
    assert wider == (("TCP", 53, 53), ("TCP", 5353, 5353), ("UDP", 53, 53), ("UDP", 5353, 5353),
                     ("SCTP", 53, 53), ("SCTP", 5353, 5353))
    assert len(calls) == 2
