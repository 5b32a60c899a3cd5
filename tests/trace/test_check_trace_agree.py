"""`check` and `trace` agree on every (witness or pod class, pod class, port class) of every case
(proof issue, "Done when").

For each case (the lab's generated tree, alone and with one hand-written policy of each shape the
proof issue names, and the incident's broken and fixed trees), this takes every pod class of every
managed job and every witness the proofs ask about it (analysis.proofs.witness.witness_members:
the pods and endpoints every allow rule's peers describe, as check places them), cuts each pair
into check's port classes over TCP, UDP and SCTP, and asks `trace` (its own endpoint resolution
from a spec, over the same objects) about the first and the last port of each class. Every answer
must be check's. Witnesses trace cannot name from a spec (a node of a pool, whose labels a spec
cannot carry; a pod whose namespace labels no Namespace object declares) are counted, not asked.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import invoke

from topogate.analysis.map.cluster import ClusterMap
from topogate.analysis.map.pods import pod_class
from topogate.analysis.netpolicy import External, Peer, PolicySet
from topogate.analysis.proofs.witness import Managed, witness_members
from topogate.k8s.objects import K8sObject
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import collect
from topogate.trace import evaluate as trace_evaluate

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "fixtures" / "lab" / "inventory.yaml"
MASTER = {"matchLabels": {"topogate.dev/workload": "train", "topogate.dev/replica-group": "Master"}}
NS_META = "kubernetes.io/metadata.name"


def _cnp(spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "extra", "namespace": "ml-demo"}, "spec": spec}


EXTRA: dict[str, list[dict[str, Any]]] = {
    "namespace-tools": [_cnp({"endpointSelector": MASTER, "ingress": [
        {"fromEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "tools"}}]}]})],
    "dashboard-of-data": [_cnp({"endpointSelector": MASTER, "ingress": [
        {"fromEndpoints": [{"matchLabels": {"app": "dashboard", "k8s:io.kubernetes.pod.namespace": "data"}}],
         "toPorts": [{"ports": [{"port": "8265", "protocol": "TCP"}]}]}]})],
    "egress-to-tools": [_cnp({"endpointSelector": {"matchLabels": {"topogate.dev/workload": "train"}}, "egress": [
        {"toEndpoints": [{"matchExpressions": [{"key": "k8s:io.kubernetes.pod.namespace", "operator": "In",
                                                "values": ["tools"]}, {"key": "tier", "operator": "NotIn",
                                                                       "values": ["db"]}]}]}]})],
    "entities-and-cidr": [_cnp({"endpointSelector": MASTER, "egress": [
        {"toEntities": ["world"], "toPorts": [{"ports": [{"port": "443", "protocol": "TCP"}]}]},
        {"toCIDR": ["10.9.0.0/16"]}], "ingress": [{"fromEntities": ["cluster"],
                                                   "toPorts": [{"ports": [{"port": "9090"}]}]}]})],
    "network-policy": [{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                        "metadata": {"name": "np", "namespace": "ml-demo"},
                        "spec": {"podSelector": {}, "policyTypes": ["Ingress"], "ingress": [
                            {"from": [{"namespaceSelector": {"matchLabels": {NS_META: "tools"}},
                                       "podSelector": {"matchLabels": {"app": "ui"}}}],
                             "ports": [{"port": 7000, "endPort": 7010}]}]}}],
    "cluster-network-policy": [{"apiVersion": "policy.networking.k8s.io/v1alpha2", "kind": "ClusterNetworkPolicy",
                                "metadata": {"name": "admin"},
                                "spec": {"tier": "Admin", "priority": 3,
                                         "subject": {"namespaces": {"matchLabels": {NS_META: "ml-demo"}}},
                                         "ingress": [
                                             {"action": "Deny", "from": [{"namespaces": {"matchLabels": {NS_META: "x"}}}]},
                                             {"action": "Accept", "from": [{"namespaces": {"matchLabels": {NS_META: "tools"}}}],
                                              "protocols": [{"tcp": {"destinationPort": {"range": {"start": 80, "end": 90}}}}]}]}}],
    "to-nodes": [_cnp({"endpointSelector": MASTER, "egress": [
        {"toNodes": [{"matchLabels": {"node-type": "cpu"}}]}, {"toNodes": [{}]}]})],
    "namespace-objects": [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tools", "labels": {"team": "platform"}}},
        _cnp({"endpointSelector": MASTER, "ingress": [
            {"fromEndpoints": [{"matchLabels": {"k8s:io.cilium.k8s.namespace.labels.team": "platform"}}]}]})],
}


# Cases asked together (one tree each, so the suite stays short): every Cilium and NetworkPolicy
# shape, named apart; the tiered kind with Namespace objects.
CASES = {
    "generated": [],
    "cilium-and-network-policy-shapes": [
        {**o, "metadata": {**o["metadata"], "name": name}}
        for name in ("namespace-tools", "dashboard-of-data", "egress-to-tools", "entities-and-cidr",
                     "network-policy", "to-nodes") for o in EXTRA[name]],
    "cluster-network-policy-and-namespaces": [*EXTRA["cluster-network-policy"], *EXTRA["namespace-objects"]],
}


@pytest.fixture(scope="module")
def lab_tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("agree") / "out"
    r = invoke("generate", str(LAB), "-o", str(out))
    assert r.exit_code == 0, r.output
    return out / "clusters" / "lab"


def _spec(peer: Peer, pset: PolicySet) -> str | None:
    """How trace names this peer, or None when no spec can."""
    if isinstance(peer, External):
        if peer.labels:
            return None  # a node of a pool: a spec carries no node labels
        if peer.fqdn:
            return f"fqdn:{peer.fqdn}"
        return peer.cidr or peer.entity or "world"
    declared = dict(pset.namespace_labels(peer.namespace))
    extra = {k: v for k, v in peer.namespace_labels if k != NS_META and declared.get(k) != v}
    if extra:
        return None  # namespace labels only a Namespace object could give it
    return f"{peer.namespace}:" + ",".join(f"{k}={v}" for k, v in peer.labels)


def _asked(cm: ClusterMap) -> Iterator[tuple[str, Peer, str, Peer]]:
    """(spec, peer) pairs check's proofs ask: each job's classes among themselves and with every
    witness of their allow rules, both directions."""
    namespaces = sorted({o.name for o in cm.objects if o.kind == "Namespace"} | {j.namespace for j in cm.jobs})
    for job in cm.jobs:
        _, classes, _ = cm.job_map(job)
        specs = {g: f"{job.namespace}/{job.kind}/{job.name}/{g}" for g in classes}
        for g, p in classes.items():
            for h, q in classes.items():
                yield specs[g], p, specs[h], q
            # an unlabelled pod of every namespace the objects know, as check classes it
            for ns in namespaces:
                empty = pod_class(ns, {}, {}, cm.pset)
                yield f"{ns}:", empty, specs[g], p
                yield specs[g], p, f"{ns}:", empty
            for direction in ("ingress", "egress"):
                for w in witness_members(cm.pset, p, direction, Managed(())):
                    ws = _spec(w.peer, cm.pset)
                    if ws is None:
                        yield "", w.peer, "", p  # counted as not askable
                    elif direction == "ingress":
                        yield ws, w.peer, specs[g], p
                    else:
                        yield specs[g], p, ws, w.peer


def _disagreements(objects: list[K8sObject]) -> tuple[list[str], int, int]:
    inv = load_inventory(str(LAB))
    cm = ClusterMap(inv, inv.clusters[0], objects, [])
    bad: list[str] = []
    asked = skipped = 0
    seen: set[tuple[str, str]] = set()
    for s_spec, src, d_spec, dst in _asked(cm):
        if not s_spec:
            skipped += 1
            continue
        if (s_spec, d_spec) in seen or (isinstance(src, External) and isinstance(dst, External)):
            continue
        seen.add((s_spec, d_spec))
        # trace without --port answers TCP and UDP in port classes of its own; SCTP port by port
        traced = trace_evaluate.trace(objects, s_spec, d_spec, None, str(LAB)).classes
        for pr in cm.pset.port_classes(src, dst, ("TCP", "UDP", "SCTP")):
            for port in {pr.start, pr.end}:
                if pr.protocol == "SCTP":
                    got = trace_evaluate.trace(objects, s_spec, d_spec, f"{port}/SCTP", str(LAB)).classes[0]
                else:
                    (got,) = [c for c in traced if c.protocol == pr.protocol and c.start <= port <= c.end]
                asked += 1
                if got.verdict.allowed != pr.verdict.allowed:
                    bad.append(f"{s_spec} -> {d_spec} {port}/{pr.protocol}: check says "
                               f"{pr.verdict.allowed}, trace {got.verdict.allowed}")
    return bad, asked, skipped


@pytest.mark.parametrize("case", sorted(CASES))
def test_check_and_trace_agree_on_every_witness_and_port_class(case: str, lab_tree: Path, tmp_path: Path) -> None:
    paths = [str(lab_tree)]
    if CASES[case]:
        f = tmp_path / "extra.yaml"
        f.write_text(yaml.safe_dump_all(CASES[case]))
        paths.append(str(f))
    objects = collect(paths, also_inside=[str(LAB)])
    bad, asked, skipped = _disagreements(objects)
    print(f"{case}: {asked} ports asked, {skipped} witnesses trace cannot name")
    assert bad == [], "\n".join(bad[:20])
    assert asked >= 20, (asked, skipped)


@pytest.mark.parametrize("tree", ["broken", "fixed"])
def test_check_and_trace_agree_on_the_incident(tree: str) -> None:
    objects = collect([str(REPO / "fixtures" / "incident" / tree)])
    bad, asked, _ = _disagreements(objects)
    assert bad == [] and asked >= 10, "\n".join(bad[:20])
