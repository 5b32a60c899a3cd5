"""Co-location units whose members' own filters disagree: a unit is placed in one zone, so each
member can only take the unit's zones that its own node filters pass, and members with no zone
in common can never all run.

Each case is also a fixture of the scheduler oracle (tests/oracles/test_scheduler_oracle.py), which
shows the real kube-scheduler agreeing.
"""

from __future__ import annotations

from typing import Any

from test_placement import ZK, gpu, tpl, zone_affinity

from topogate.analysis.placement import JobPlacement, place_job
from topogate.inventory.model import Cluster, Pool, Zone
from topogate.k8s.jobs import find_jobs


def _cluster(b_gpus: int) -> Cluster:
    """zone a: 2 nodes x 8 GPUs, zone b: 1 node x `b_gpus` GPUs, zone c: CPU nodes only."""
    return Cluster("units", "aws", "us-east-1", zones=(
        Zone("us-east-1a", (Pool("gpu", 2, 8, (("node-type", "gpu"),)),)),
        Zone("us-east-1b", (Pool("gpu", 1, b_gpus, (("node-type", "gpu"),)),)),
        Zone("us-east-1c", (Pool("cpu", 3, 0, (("node-type", "cpu"),)),)),
    ))


def mutual_set_job(cpu_selector: dict[str, str] | None = None) -> dict[str, Any]:
    """Two replicated jobs whose pods all follow `team: x` on the zone key (a mutual set: the first
    pod picks the zone, the rest must find a `team: x` pod there): 2 x 8-GPU pods and 2 CPU pods."""
    aff = zone_affinity({"team": "x"})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "mutual", "namespace": "ml"},
            "spec": {"replicatedJobs": [
                {"name": "a-gpu", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2, "template": tpl(
                    {"team": "x"}, containers=[gpu(8)], affinity=aff)}}},
                {"name": "b-cpu", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2, "template": tpl(
                    {"team": "x"}, nodeSelector=cpu_selector or {"node-type": "cpu"}, affinity=aff)}}},
            ]}}


def _place(obj: dict[str, Any], c: Cluster) -> JobPlacement:
    (job,) = find_jobs([(obj, None)])
    return place_job(job, c)


def test_a_gpu_unit_gives_no_member_a_zone_its_own_filters_exclude() -> None:
    # The GPU pods fit together only in zone a; the CPU pods fit only in zone c. Zone a must not
    # be handed to the CPU group, whose nodeSelector excludes it: it has no zone left.
    p = _place(mutual_set_job(), _cluster(b_gpus=8))
    for g in p.groups:
        assert set(g.zones) <= set(g.node_zones), (g.name, g.zones, g.node_zones)
    cpu = p.group("b-cpu")
    assert cpu is not None and cpu.zones == () and cpu.node_zones == ("us-east-1c",)
    assert not p.schedulable


def test_unit_members_with_no_zone_in_common_never_all_run() -> None:
    # The GPU pods fit only zone a, the CPU pods only zone c: the first pod picks one of them and
    # the other group waits Pending for a `team: x` pod in its own zone.
    p = _place(mutual_set_job(), _cluster(b_gpus=1))
    assert not p.schedulable
    assert any("a-gpu, b-cpu" in r and "no zone in common" in r for r in p.unschedulable_reasons), \
        p.unschedulable_reasons


def test_unit_members_sharing_a_zone_are_colocated_there() -> None:
    # Passing counterpart: the CPU pods may use every zone (no nodeSelector on the node type).
    p = _place(mutual_set_job(cpu_selector={ZK: "us-east-1a"}), _cluster(b_gpus=8))
    assert p.schedulable and p.colocated
    assert {g.name: g.zones for g in p.groups} == {"a-gpu": ("us-east-1a",), "b-cpu": ("us-east-1a",)}


def test_a_group_that_may_crowd_out_the_zones_of_one_repelling_it_is_a_pending_risk() -> None:
    # Found by the scheduler oracle (generated case 34 of seed 2026): g1's two pods each need a
    # zone of their own without g0; g0's three pods need no constraint and the scheduler spreads
    # them over every GPU zone, leaving g1 nowhere. A placement exists (g0 all in zone a), so it
    # is schedulable, with the risk named.
    c = Cluster("crowd", "aws", "us-east-1", zones=(
        Zone("us-east-1a", (Pool("gpu", 3, 8, (("node-type", "gpu"),)),)),
        Zone("us-east-1b", (Pool("gpu", 1, 4, (("node-type", "gpu"),)),)),
        Zone("us-east-1d", (Pool("gpu", 1, 8, (("node-type", "gpu"),)),)),
    ))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "g1"}}, "topologyKey": ZK},
        {"labelSelector": {"matchLabels": {"role": "g0"}}, "topologyKey": ZK}]}}
    obj = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "crowd", "namespace": "ml"},
           "spec": {"replicatedJobs": [
               {"name": "g0", "replicas": 1, "template": {"spec": {"parallelism": 3, "completions": 3, "template": tpl(
                   {"role": "g0"}, containers=[gpu(4)])}}},
               {"name": "g1", "replicas": 1, "template": {"spec": {"parallelism": 2, "completions": 2, "template": tpl(
                   {"role": "g1"}, containers=[gpu(4)], affinity=anti)}}},
           ]}}
    p = _place(obj, c)
    assert p.schedulable and not p.colocated
    assert any("g0" in r and "g1" in r and "Pending" in r for r in p.pending_risks), p.pending_risks


def test_groups_held_together_that_repel_each_other_never_all_run() -> None:
    # Found by the scheduler oracle (generated case 76 of seed 2026): the Workers follow the
    # Master onto its node (podAffinity on the hostname), the Master repels the Workers on the
    # zone key: the Workers can never run, however the pods are ordered.
    c = Cluster("repel", "aws", "us-east-1", zones=(
        Zone("us-east-1b", (Pool("gpu", 1, 8, (("node-type", "gpu"),)),)),
        Zone("us-east-1c", (Pool("gpu", 1, 4, (("node-type", "gpu"),)),)),
    ))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "worker"}}, "topologyKey": ZK}]}}
    follow = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"role": "master"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "repel", "namespace": "ml"},
           "spec": {"pytorchReplicaSpecs": {
               "Master": {"replicas": 1, "template": tpl({"role": "master"}, affinity=anti)},
               "Worker": {"replicas": 2, "template": tpl({"role": "worker"}, containers=[gpu(1)], affinity=follow)}}}}
    p = _place(obj, c)
    assert not p.schedulable
    assert any("Master" in r and "Worker" in r and "repel" in r for r in p.unschedulable_reasons), p.unschedulable_reasons
