"""Small cases the property tests reach only by chance."""

from __future__ import annotations

import jsonpatch

from topogate.generators import kustomize
from topogate.generators.jsonpatch import PatchBuilder, escape
from topogate.inventory.model import Cluster, Inventory, NetworkZone, ReplicaGroup, Workload, Zone


def test_pointer_escaping() -> None:
    assert escape("topogate.dev/workload") == "topogate.dev~1workload"
    assert escape("a~b/c") == "a~0b~1c"


def test_patch_builder_creates_missing_parents_in_one_op_and_appends_otherwise() -> None:
    doc = {"spec": {"tolerations": [{"key": "x"}]}}
    pb = PatchBuilder(doc)
    pb.merge_map(("metadata", "labels"), {"a/b": "1"})
    pb.merge_map(("metadata", "labels"), {"c": "2"})
    pb.extend_list(("spec", "tolerations"), [{"key": "x"}, {"key": "y"}])
    assert pb.ops == [
        {"op": "add", "path": "/metadata", "value": {"labels": {"a/b": "1"}}},
        {"op": "add", "path": "/metadata/labels/c", "value": "2"},
        {"op": "add", "path": "/spec/tolerations/-", "value": {"key": "y"}},
    ]
    assert doc == {"spec": {"tolerations": [{"key": "x"}]}}  # the caller's document is untouched
    assert jsonpatch.apply_patch(doc, pb.ops) == pb.doc


def _inv(job: dict, groups: tuple[ReplicaGroup, ...]) -> tuple[Inventory, Workload]:
    c = Cluster("c", "aws", "r", zones=(Zone("z1"),), network_zones=(NetworkZone("n", ("z1",)),))
    w = Workload("j", "ns", "c", "TrainJob", "b", "n", "pin", "z1", groups=groups, base_dir="/b",
                 base_docs=(job,))
    return Inventory("i", "i.yaml", (c,), (w,)), w


def test_trainjob_entry_is_replaced_not_duplicated_and_other_managers_kept() -> None:
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "j"},
           "spec": {"runtimeRef": {"name": "rt"},
                    "runtimePatches": [{"manager": "kueue"}, {"manager": kustomize.TRAINJOB_MANAGER}]}}
    inv, w = _inv(job, (ReplicaGroup("node", 2),))
    ops = kustomize.placement_ops(inv, w)
    assert [o["op"] for o in ops] == ["replace"] and ops[0]["path"] == "/spec/runtimePatches/1"
    out = jsonpatch.apply_patch(job, ops)
    assert [e["manager"] for e in out["spec"]["runtimePatches"]] == ["kueue", kustomize.TRAINJOB_MANAGER]


def test_trainjob_patches_every_replicated_job_of_a_runtime_in_the_base() -> None:
    job = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "metadata": {"name": "j"},
           "spec": {"runtimeRef": {"name": "rt"}}}
    rt = {"kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"}, "spec": {"template": {"spec": {
        "replicatedJobs": [{"name": "dataset-initializer"}, {"name": "node"}]}}}}
    inv, w = _inv(job, ())
    ops = kustomize.placement_ops(inv, w, (job, rt))
    rjs = ops[0]["value"][0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
    assert [r["name"] for r in rjs] == ["dataset-initializer", "node"]


def test_dump_never_writes_anchors_for_shared_objects() -> None:
    from topogate.generators.base import dump_yaml

    shared = {"key": "gpu", "effect": "NoSchedule"}
    text = dump_yaml([{"a": [shared], "b": [shared]}])
    assert "&" not in text and "*" not in text
    assert text.count("key: gpu") == 2


def test_follow_offers_only_zones_where_the_whole_job_fits() -> None:
    # A Master without GPUs could otherwise go first to the CPU zone and strand the Workers.
    from topogate.inventory import model as m

    C, Inv, NZ, P, RG, W, Z = m.Cluster, m.Inventory, m.NetworkZone, m.Pool, m.ReplicaGroup, m.Workload, m.Zone
    cluster = C("c", "aws", "r", zones=(
        Z("za", (P("gpu", 2, 4),)), Z("zb", (P("cpu", 2, 0),)), Z("zc", (P("small", 1, 2),))),
        network_zones=(NZ("all", ("za", "zb", "zc")),))
    w = W("pt", "ml", "c", "PyTorchJob", "b", "all", "follow",
          groups=(RG("Master", 1, 0), RG("Worker", 3, 1)))
    inv = Inv("i", "inventory.yaml", (cluster,), (w,))
    assert inv.pin_zones(w) == ("za",)  # zb has no GPU node, zc only 2 GPUs for a 3-GPU job
    bigger = W("pt", "ml", "c", "PyTorchJob", "b", "all", "follow", groups=(RG("Worker", 2, 1),))
    assert inv.pin_zones(bigger) == ("za", "zc")


def test_tolerations_only_for_pools_the_job_can_use() -> None:
    from topogate.generators.kustomize import tolerations
    from topogate.inventory import model as m

    gpu = m.Pool("gpu", 2, 8, taints=(m.Taint("gpu", "NoSchedule", "present"),))
    reserved = m.Pool("db", 2, 0, taints=(m.Taint("dedicated", "NoExecute", "db"),))
    cluster = m.Cluster("c", "aws", "r", zones=(m.Zone("za", (gpu, reserved)),))
    assert [t["key"] for t in tolerations(cluster, ["za"], gpus_per_pod=1)] == ["gpu"]
    # a job without GPUs may use every pool of its zones
    assert [t["key"] for t in tolerations(cluster, ["za"], gpus_per_pod=0)] == ["dedicated", "gpu"]


def test_empty_node_selector_term_stays_empty() -> None:
    # An empty term matches no node; ANDing the zone into it would let pods onto any node there.
    from topogate.generators.kustomize import placement_ops
    from topogate.inventory import model as m

    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "pt"},
           "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 1, "template": {"spec": {
               "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                   "nodeSelectorTerms": [{"matchExpressions": []},
                                         {"matchExpressions": [{"key": "cap", "operator": "In",
                                                                "values": ["od"]}]}]}}},
               "containers": [{"name": "c", "image": "i"}]}}}}}}
    cluster = m.Cluster("c", "aws", "r", zones=(m.Zone("za", (m.Pool("p", 1, 0),)),),
                        network_zones=(m.NetworkZone("nz", ("za",)),))
    w = m.Workload("pt", "ml", "c", "PyTorchJob", "b", "nz", "pin", groups=(m.ReplicaGroup("Worker", 1, 0),),
                   base_dir="/b", base_docs=(job,))
    inv = m.Inventory("i", "inventory.yaml", (cluster,), (w,))
    ops = placement_ops(inv, w)
    term_ops = [o["path"] for o in ops if "nodeSelectorTerms/" in o["path"]]
    assert term_ops == ["/spec/pytorchReplicaSpecs/Worker/template/spec/affinity/nodeAffinity/"
                        "requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms/1/matchExpressions/-"]
