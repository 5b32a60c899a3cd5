"""Required podAntiAffinity on the hostname key with the group's own pods: one pod per node, so
the group needs as many nodes as pods among the pools it fits (in one zone when it is held in
one). Also a fixture of the scheduler oracle (tests/oracles/test_scheduler_oracle.py)."""

from __future__ import annotations

from typing import Any

from test_placement import TOLERATE_GPU, ZK, gpu, tpl, zone_affinity, zone_anti

from topogate.analysis.placement import JobPlacement, place_job
from topogate.inventory.model import Cluster, Pool, Taint, Zone
from topogate.k8s.jobs import find_jobs

HOST = "kubernetes.io/hostname"


def gpu_cluster(nodes_a: int, nodes_b: int = 0) -> Cluster:
    zones = [Zone("us-east-1a", (Pool("gpu", nodes_a, 8, (("node-type", "gpu"),), (Taint("gpu", "NoSchedule", "present"),)),)),
             Zone("us-east-1c", (Pool("cpu", 2, 0, (("node-type", "cpu"),)),))]
    if nodes_b:
        zones.insert(1, Zone("us-east-1b", (Pool("gpu", nodes_b, 8, (("node-type", "gpu"),),
                                                 (Taint("gpu", "NoSchedule", "present"),)),)))
    return Cluster("host", "aws", "us-east-1", zones=tuple(zones))


def one_per_node_job(workers: int, *, follow: bool = False) -> dict[str, Any]:
    """`workers` 1-GPU pods that refuse to share a node (and, with `follow`, one zone)."""
    aff: dict[str, Any] = zone_anti({"app": "w"}, key=HOST)
    if follow:
        aff.update(zone_affinity({"app": "w"}))
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "one-per-node", "namespace": "ml"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                "parallelism": workers, "completions": workers,
                "template": tpl({"app": "w"}, containers=[gpu(1)], tolerations=TOLERATE_GPU, affinity=aff,
                                nodeSelector={"node-type": "gpu"})}}}]}}


def _place(obj: dict[str, Any], c: Cluster) -> JobPlacement:
    (job,) = find_jobs([(obj, None)])
    return place_job(job, c)


def test_four_pods_one_per_node_on_three_gpu_nodes_are_unschedulable() -> None:
    p = _place(one_per_node_job(4), gpu_cluster(3))
    assert not p.schedulable
    assert any("one pod per node" in r and "3 nodes" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


def test_three_pods_one_per_node_on_three_gpu_nodes_fit() -> None:
    p = _place(one_per_node_job(3), gpu_cluster(3))
    assert p.schedulable and p.colocated


def test_one_per_node_held_in_one_zone_counts_the_nodes_of_one_zone() -> None:
    # 2 + 2 GPU nodes hold 4 pods, but podAffinity on the zone keeps them in one zone of 2 nodes.
    assert _place(one_per_node_job(4), gpu_cluster(2, 2)).schedulable
    p = _place(one_per_node_job(4, follow=True), gpu_cluster(2, 2))
    assert not p.schedulable
    assert any("one pod per node" in r and "2 nodes" in r for r in p.unschedulable_reasons), p.unschedulable_reasons
    assert ZK  # the zone key of test_placement is the one podAffinity uses


def test_self_following_on_the_hostname_puts_every_pod_on_one_node() -> None:
    # Found by the scheduler oracle (generated case 38 of seed 2026): 3 x 2-GPU pods that follow
    # each other on the hostname key all run on the first pod's node, so only a node of 6 GPUs or
    # more holds them: zone-c's 8-GPU node, not zone-d's 4-GPU ones.
    c = Cluster("one-node", "aws", "us-east-1", zones=(
        Zone("us-east-1c", (Pool("gpu", 1, 8, (("node-type", "gpu"),)),)),
        Zone("us-east-1d", (Pool("gpu", 3, 4, (("node-type", "gpu"),)),)),
    ))
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "w"}}, "topologyKey": HOST}]}}
    obj = one_per_node_job(3)
    tpl_spec = obj["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    tpl_spec["affinity"] = aff
    tpl_spec["containers"] = [gpu(2)]
    p = _place(obj, c)
    w = p.group("w")
    assert w is not None and w.zones == ("us-east-1c",)
    assert p.schedulable and p.colocated
    # The first pod may still land on a 4-GPU node, where the third cannot join it.
    assert any("one node" in r and "us-east-1d" in r for r in p.pending_risks), p.pending_risks
