"""Kueue objects from the inventory: built with the real kubectl kustomize, validated against
the upstream Kueue v1beta2 CRDs (OpenAPI schema AND their CEL rules, with a real CEL engine),
and carrying exactly the inventory's topology, pools and capacity."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from cel_support import crd_rule_errors
from conftest import FIXTURES, crd_errors, kustomize_build

from topogate.generators import kueue, render_tree
from topogate.inventory.model import Inventory, KueueConfig
from topogate.k8s import kueue as kueue_api
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.sources.inventory import load_inventory


def _write(inv: Inventory, out: Path) -> None:
    for rel, data in render_tree(inv, str(out)).items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, Path]:
    src = tmp_path_factory.mktemp("k") / "multi"
    shutil.copytree(FIXTURES / "multi", src)
    inv = load_inventory(str(src / "inventory.yaml"))
    _write(inv, src / "out")
    return inv, src / "out"


def _by_kind(objs: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for o in objs:
        out.setdefault(o["kind"], []).append(o)
    return out


def _valid(o: dict[str, Any]) -> None:
    errs = crd_errors(o)
    assert errs is not None, f"no upstream CRD for {o['kind']}"
    assert errs == [], (o["kind"], o["metadata"]["name"], errs)
    rule_errs, _ = crd_rule_errors(o)
    assert rule_errs == [], (o["kind"], o["metadata"]["name"], rule_errs)


def test_kueue_objects_build_and_validate(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    objs = kustomize_build(out / "clusters/gpu-east/kueue")
    kinds = _by_kind(objs)
    assert sorted(kinds) == ["ClusterQueue", "LocalQueue", "ResourceFlavor", "Topology"]
    evaluated = 0
    for o in objs:
        _valid(o)
        evaluated += crd_rule_errors(o)[1]
    # The CRDs' CEL rules did run (hostname last, tolerations, resources per flavor, ...).
    assert evaluated >= 5
    # gpu-west did not opt in: no Kueue objects there, and its root does not list them.
    assert not (out / "clusters/gpu-west/kueue").exists()
    west = kustomize_build(out / "clusters/gpu-west")
    assert not {o["kind"] for o in west} & set(KUEUE_KINDS)
    # The cluster root carries them, so Argo CD and Flux apply them.
    east = {(o["kind"], o["metadata"]["name"]) for o in kustomize_build(out / "clusters/gpu-east")}
    assert {(o["kind"], o["metadata"]["name"]) for o in objs} <= east


def test_topology_levels(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    (topo,) = _by_kind(kustomize_build(out / "clusters/gpu-east/kueue"))["Topology"]
    assert topo["spec"]["levels"] == [{"nodeLabel": "topology.kubernetes.io/zone"},
                                      {"nodeLabel": "kubernetes.io/hostname"}]


def test_a_flavor_per_pool(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    c = inv.cluster("gpu-east")
    assert c is not None
    flavors = {f["metadata"]["name"]: f["spec"]
               for f in _by_kind(kustomize_build(out / "clusters/gpu-east/kueue"))["ResourceFlavor"]}
    assert sorted(flavors) == sorted(f"{z.name}-{p.name}" for z in c.zones for p in z.pools)
    a100 = flavors["us-east-1b-a100"]
    assert a100["nodeLabels"] == {"node-type": "gpu", "gpu-model": "a100", "capacity-type": "reserved",
                                  "topology.kubernetes.io/zone": "us-east-1b"}
    assert a100["tolerations"] == [
        {"key": "dedicated", "operator": "Equal", "value": "training", "effect": "NoExecute"},
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    assert flavors["us-east-1c-cpu"] == {"nodeLabels": {"node-type": "cpu", "topology.kubernetes.io/zone": "us-east-1c"},
                                         "topologyName": "topogate"}
    assert all(f["topologyName"] == "topogate" for f in flavors.values())


def test_cluster_queue_quotas_from_capacity(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    kinds = _by_kind(kustomize_build(out / "clusters/gpu-east/kueue"))
    (cq,) = kinds["ClusterQueue"]
    assert cq["metadata"]["name"] == "training"
    (rg,) = cq["spec"]["resourceGroups"]
    assert rg["coveredResources"] == ["cpu", "memory", "nvidia.com/gpu"]
    quotas = {f["name"]: {r["name"]: r["nominalQuota"] for r in f["resources"]} for f in rg["flavors"]}
    assert quotas == {
        "us-east-1a-h100": {"cpu": "768", "memory": "7200Gi", "nvidia.com/gpu": "32"},
        "us-east-1b-a100": {"cpu": "192", "memory": "2000Gi", "nvidia.com/gpu": "16"},
        "us-east-1b-cpu-b": {"cpu": "64", "memory": "256Gi", "nvidia.com/gpu": "0"},
        "us-east-1c-cpu": {"cpu": "96", "memory": "384Gi", "nvidia.com/gpu": "0"},
    }
    # Only the namespaces that run Kueue workloads may submit to it.
    assert cq["spec"]["namespaceSelector"] == {"matchExpressions": [
        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["ml-team"]}]}
    lqs = {(q["metadata"]["namespace"], q["metadata"]["name"]): q["spec"] for q in kinds["LocalQueue"]}
    assert lqs == {("ml-team", "mpi"): {"clusterQueue": "training"},
                   ("ml-team", "training"): {"clusterQueue": "training"}}


def test_gpu_only_queue_when_cpu_is_not_declared(tmp_path: Path) -> None:
    # The lab declares no CPU or memory: the queue covers GPUs and invents nothing.
    inv = load_inventory(str(FIXTURES / "lab" / "inventory.yaml"))
    c = dataclasses.replace(inv.clusters[0], kueue=KueueConfig("lab"))
    w = dataclasses.replace(inv.workloads[0], scheduler="kueue")
    inv = dataclasses.replace(inv, clusters=(c,), workloads=(w,))
    files = {f.path: f for f in kueue.render(inv)}
    (cq,) = files["clusters/lab/kueue/clusterqueue.yaml"].docs
    (rg,) = cq["spec"]["resourceGroups"]
    assert rg["coveredResources"] == ["nvidia.com/gpu"]
    assert {f["name"]: f["resources"] for f in rg["flavors"]} == {
        "zone-a-gpu": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}],
        "zone-b-cpu": [{"name": "nvidia.com/gpu", "nominalQuota": "0"}]}
    for f in files.values():
        for d in f.docs:
            if d.get("apiVersion") == kueue_api.API_VERSION:
                _valid(d)


def test_queue_without_workloads_admits_no_namespace(tmp_path: Path) -> None:
    # Kueue's default namespaceSelector (null) admits nothing; `In []` would be invalid.
    inv = load_inventory(str(FIXTURES / "lab" / "inventory.yaml"))
    c = dataclasses.replace(inv.clusters[0], kueue=KueueConfig("lab"))
    inv = dataclasses.replace(inv, clusters=(c,))
    paths = {f.path: f for f in kueue.render(inv)}
    assert "clusters/lab/kueue/localqueues.yaml" not in paths
    (cq,) = paths["clusters/lab/kueue/clusterqueue.yaml"].docs
    assert "namespaceSelector" not in cq["spec"]
    assert paths["clusters/lab/kueue/kustomization.yaml"].docs[0]["resources"] == [
        "topology.yaml", "resourceflavors.yaml", "clusterqueue.yaml"]


@pytest.mark.parametrize("q, n, want", [("96", 4, "384"), ("500m", 3, "1500m"),
                                        ("768Gi", 4, "3072Gi"), ("0", 9, "0"), ("1T", 2, "2T")])
def test_quantity_times_nodes(q: str, n: int, want: str) -> None:
    assert kueue.times(q, n) == want


def test_the_crd_rules_catch_what_the_api_server_would() -> None:
    # The same CEL rules reject broken objects: the check above can fail.
    topo = {"apiVersion": kueue_api.API_VERSION, "kind": "Topology", "metadata": {"name": "t"},
            "spec": {"levels": [{"nodeLabel": "kubernetes.io/hostname"},
                                {"nodeLabel": "topology.kubernetes.io/zone"}]}}
    errs, _ = crd_rule_errors(topo)
    assert any("lowest level" in e for e in errs), errs
    cq = {"apiVersion": kueue_api.API_VERSION, "kind": "ClusterQueue", "metadata": {"name": "q"},
          "spec": {"resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": [
              {"name": "f", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "8"}]}]}]}}
    errs, _ = crd_rule_errors(cq)
    assert errs, "a flavor that lists fewer resources than the group covers must be refused"
