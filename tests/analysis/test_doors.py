"""Declared doors: generated on both sides, open exactly as declared, and nothing wider."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml
from conftest import crd_errors, invoke

from topogate.generators import render_tree
from topogate.generators.cilium import complement_ports
from topogate.inventory.model import PortSpec
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

ROOT = Path(__file__).resolve().parents[2]
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"


def _tree(tmp: str) -> dict[str, list[Any]]:
    inv = load_inventory(MULTI)
    return {path: list(yaml.safe_load_all(text)) for path, text in render_tree(inv, tmp).items()}


def test_complement_leaves_out_exactly_the_door_ports() -> None:
    got = complement_ports([PortSpec(8443), PortSpec(9000, "TCP", 9010), PortSpec(53, "UDP")])
    assert got == [
        {"port": "1", "endPort": 8442, "protocol": "TCP"},
        {"port": "8444", "endPort": 8999, "protocol": "TCP"},
        {"port": "9011", "endPort": 65535, "protocol": "TCP"},
        {"port": "1", "endPort": 52, "protocol": "UDP"},
        {"port": "54", "endPort": 65535, "protocol": "UDP"},
        {"port": "1", "endPort": 65535, "protocol": "SCTP"},
    ]
    assert complement_ports([PortSpec(1, "TCP", 65535), PortSpec(1, "UDP", 65535),
                             PortSpec(1, "SCTP", 65535)]) == []


def test_both_sides_are_generated_and_valid(tmp_path: Path) -> None:
    tree = _tree(str(tmp_path))
    (svc,) = tree["clusters/gpu-east/network/doors/datasets.yaml"]
    assert svc["kind"] == "CiliumNetworkPolicy" and svc["metadata"]["namespace"] == "storage"
    assert svc["spec"]["endpointSelector"] == {"matchLabels": {"k8s:app": "s3-gateway"}}
    assert svc["spec"]["enableDefaultDeny"] == {"ingress": False, "egress": False}
    (rule,) = svc["spec"]["ingress"]
    assert rule["fromEndpoints"] == [{"matchLabels": {
        "k8s:topogate.dev/workload": "llama-ft", "k8s:topogate.dev/network-zone": "fabric",
        "k8s:io.kubernetes.pod.namespace": "ml-team"}}]
    assert rule["toPorts"] == [{"ports": [{"port": "9000", "protocol": "TCP"}]}]
    (job,) = tree["clusters/gpu-east/workloads/ml-team/llama-ft/ciliumnetworkpolicy.yaml"]
    assert {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "storage",
                                             "k8s:app": "s3-gateway"}}],
            "toPorts": [{"ports": [{"port": "9000", "protocol": "TCP"}]}]} in job["spec"]["egress"]
    # a job the door does not name gets no such rule
    (other,) = tree["clusters/gpu-east/workloads/ml-team/bert-mpi/ciliumnetworkpolicy.yaml"]
    assert "storage" not in json.dumps(other)
    # the zone door: the boundary of ops denies train-a on every port but 8443
    (ops,) = tree["clusters/gpu-west/network/ops.yaml"]
    carved = [r for r in ops["spec"]["ingressDeny"] if "toPorts" in r]
    assert [r["fromEndpoints"] for r in carved] == [[{"matchLabels": {"k8s:topogate.dev/network-zone": "train-a"}}]]
    assert {"port": "8444", "endPort": 65535, "protocol": "TCP"} in carved[0]["toPorts"][0]["ports"]
    (nzpol,) = tree["clusters/gpu-west/network/train-b.yaml"]
    assert "toPorts" not in json.dumps(nzpol["spec"]["ingressDeny"])  # untouched by the door
    for path, docs in tree.items():
        if "/network/" in path and path.endswith(".yaml") and "kustomization" not in path:
            for d in docs:
                assert crd_errors(d) == [], (path, crd_errors(d))
    kust = tree["clusters/gpu-west/network/kustomization.yaml"][0]
    assert kust["resources"][-1] == "doors"


def _rendered_with(extra: str) -> tuple[int, list[dict[str, object]]]:
    # outside the checkout: extra.yaml is written by hand, and git would not track it there
    out = Path(tempfile.mkdtemp(prefix="topogate-doors-")) / "out"
    try:
        writer.write_tree(str(out), render_tree(load_inventory(MULTI), str(out)))
        # the TrainJob's runtime is installed by the platform team: pass it like a user would
        paths = [str(out / "clusters"), str(MULTI.parent / "platform" / "torch-distributed.yaml")]
        if extra:  # a PATH holding no object is a usage error (exit 2), so none is passed
            f = out / "extra.yaml"
            f.write_text(extra)
            paths.append(str(f))
        r = invoke("check", str(MULTI), *paths, "--format", "json")
        return r.exit_code, json.loads(r.stdout)["findings"]
    finally:
        shutil.rmtree(out.parent)


def test_generated_doors_are_open_and_nothing_wider() -> None:
    code, fs = _rendered_with("")
    assert (code, fs) == (0, [])


def test_wider_than_the_door_is_found() -> None:
    # The door names the gateway's pods on 9000; this opens the whole storage namespace.
    wide = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "llama-storage", "namespace": "ml-team"},
            "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/workload": "llama-ft"}},
                     "egress": [{"toEndpoints": [{"matchLabels": {
                         "k8s:io.kubernetes.pod.namespace": "storage"}}]}]}}
    code, fs = _rendered_with(yaml.safe_dump(wide))
    msgs = [str(f["message"]) for f in fs if f["rule"] == "TG107"]
    assert code == 1 and msgs, fs
    # one finding per opening rule: the gateway itself, open beyond the declared 9000/TCP
    (gw,) = msgs
    assert "can reach the service of door datasets (storage/{app=s3-gateway})" in gw
    assert "on 1-8999/TCP, 9001-65535/TCP, 1-65535/UDP, 1-65535/SCTP" in gw, gw
    assert "egress rule 0 of CiliumNetworkPolicy/ml-team/llama-storage" in gw


def _properties(node: Any, out: list[tuple[str, Any]]) -> None:
    if isinstance(node, dict):
        for k, v in (node.get("properties") or {}).items():
            out.append((k, v))
        for v in node.values():
            _properties(v, out)
    elif isinstance(node, list):
        for v in node:
            _properties(v, out)


def test_every_inventory_field_is_described_and_documented() -> None:
    schema = json.loads((ROOT / "topogate/schemas/inventory.schema.json").read_text())
    props: list[tuple[str, Any]] = []
    _properties(schema, props)
    assert len(props) > 60
    assert [k for k, v in props if not v.get("description")] == []
    doc = (ROOT / "docs/inventory.md").read_text()
    assert sorted({k for k, _ in props if f"{k}:" not in doc}) == []


def _golden_policies(cluster: str) -> Any:
    from topogate.analysis.netpolicy import PolicySet, SourceRef

    root = ROOT / "fixtures/golden/multi/clusters" / cluster
    objs = []
    for f in sorted(root.rglob("*.yaml")):
        for d in yaml.safe_load_all(f.read_text()):
            if isinstance(d, dict) and str(d.get("kind", "")).startswith("Cilium"):
                objs.append((d, SourceRef(str(f), 1, 1)))
    return PolicySet.from_objects(objs, cluster_name=cluster)


def test_zone_door_opens_its_port_only_and_only_for_its_source() -> None:
    from topogate.analysis.netpolicy import PodClass

    ps = _golden_policies("gpu-west")

    def pod(ns: str, nz: str, wl: str | None = None) -> PodClass:
        labels = {"topogate.dev/network-zone": nz, **({"topogate.dev/workload": wl} if wl else {})}
        return PodClass(ns, tuple(sorted(labels.items())), ps.namespace_labels(ns))

    resnet, ops = pod("vision", "train-a", "resnet"), pod("ops-team", "ops")
    assert ps.evaluate(resnet, ops, 8443, "TCP").allowed
    assert not ps.evaluate(resnet, ops, 8444, "TCP").allowed
    assert not ps.evaluate(resnet, ops, 8443, "UDP").allowed
    assert not ps.evaluate(ops, resnet, 8443, "TCP").allowed  # a door opens one way
    gpt = pod("llm", "train-b", "gpt-sft")
    assert not ps.evaluate(gpt, ops, 8443, "TCP").allowed  # train-b has no door


def test_service_door_reaches_the_gateway_and_nothing_else_there() -> None:
    from topogate.analysis.netpolicy import PodClass

    ps = _golden_policies("gpu-east")

    def pod(ns: str, labels: dict[str, str]) -> PodClass:
        return PodClass(ns, tuple(sorted(labels.items())), ps.namespace_labels(ns))

    llama = pod("ml-team", {"topogate.dev/network-zone": "fabric", "topogate.dev/workload": "llama-ft"})
    bert = pod("ml-team", {"topogate.dev/network-zone": "fabric", "topogate.dev/workload": "bert-mpi"})
    gateway, other = pod("storage", {"app": "s3-gateway"}), pod("storage", {"app": "postgres"})
    assert ps.evaluate(llama, gateway, 9000, "TCP").allowed
    assert not ps.evaluate(llama, gateway, 9001, "TCP").allowed
    assert not ps.evaluate(llama, other, 9000, "TCP").allowed
    assert not ps.evaluate(bert, gateway, 9000, "TCP").allowed


def test_single_network_zone_door_is_checked_too(tmp_path: Path) -> None:
    lab = ROOT / "fixtures/lab/inventory.yaml"
    text = lab.read_text().replace("  - {name: general, zones: [zone-b]}\n", "")
    text += ("doors:\n- name: gw\n  cluster: lab\n  from: {workloads: [train]}\n"
             "  to: {namespace: storage, labels: {app: gw}}\n  ports: [{port: 9000}]\n")
    # an untracked file of the checkout is never read: a scratch copy of the lab, outside git
    inv = shutil.copytree(lab.parent, tmp_path / "lab") / "inventory.yaml"
    inv.write_text(text)
    r = invoke("check", str(inv), "--format", "json")
    assert (r.exit_code, json.loads(r.stdout)["findings"]) == (0, [])
    deny = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
            "metadata": {"name": "no-storage"},
            "spec": {"endpointSelector": {}, "egressDeny": [{"toEndpoints": [
                {"matchLabels": {"k8s:io.kubernetes.pod.namespace": "storage"}}]}]}}
    f = tmp_path / "deny.yaml"
    f.write_text(yaml.safe_dump(deny))
    out = tmp_path / "out"
    writer.write_tree(str(out), render_tree(load_inventory(inv), str(out)))
    r = invoke("check", str(inv), str(out / "clusters"), str(f), "--format", "json")
    rules = [x["rule"] for x in json.loads(r.stdout)["findings"]]
    assert r.exit_code == 1 and "TG113" in rules, rules
