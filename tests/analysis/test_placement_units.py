"""Co-location units whose members' own filters disagree: a unit is placed in one zone, so each
member can only take the unit's zones that its own node filters pass, and members with no zone
in common can never all run.

Each case is also a fixture of the scheduler oracle (tests/oracles/test_scheduler_oracle.py), which
shows the real kube-scheduler agreeing.
"""

from __future__ import annotations

from typing import Any

import pytest
from test_placement import ZK, gpu, one, tpl, zone_affinity

from topogate.analysis.map.cluster import _strand_risks
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


def _strays_case(lead_zones: str, lead_affinity: dict[str, Any] | None) -> dict[str, Any]:
    """A JobSet of three one-pod groups: `follower` follows `lead` on the zone key and fits only
    zone c (local disks), `pinned` fits only zone c and follows nothing, `lead` fits the zones
    its nodeSelector allows."""
    def rjob(name: str, **spec: Any) -> dict[str, Any]:
        return {"name": name, "replicas": 1, "template": {"spec": {"parallelism": 1, "template": tpl(
            {"app": "strays", "role": name}, **spec)}}}

    lead = {"nodeSelector": {"disk": "local"}} if lead_zones == "c" else {}
    if lead_affinity is not None:
        lead["affinity"] = lead_affinity
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "strays", "namespace": "ml"},
            "spec": {"replicatedJobs": [
                rjob("follower", nodeSelector={"disk": "local"}, affinity=zone_affinity({"role": "lead"})),
                rjob("lead", **lead),
                rjob("pinned", nodeSelector={"disk": "local"})]}}


STRAYS = Cluster("strays", "aws", "us-east-1", zones=(
    Zone("us-east-1a", (Pool("cpu", 2, 0, (("node-type", "cpu"),)),)),
    Zone("us-east-1b", (Pool("cpu", 2, 0, (("node-type", "cpu"),)),)),
    Zone("us-east-1c", (Pool("cpu", 2, 0, (("node-type", "cpu"), ("disk", "local"))),)),
))
ON_ITS_OWN_NODE = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
    {"labelSelector": {"matchLabels": {"role": "lead"}}, "topologyKey": "kubernetes.io/hostname"}]}}


@pytest.mark.parametrize("lead_affinity", [None, ON_ITS_OWN_NODE], ids=["no-affinity", "follows-itself"])
def test_a_unit_held_in_a_zone_only_when_all_of_it_starts_is_not_pinned_there(
        lead_affinity: dict[str, Any] | None) -> None:
    # Found by the scheduler oracle (generated case 113 of seed 7575, a TrainJob): `follower` and
    # `lead` are one unit, held in zone c only because `follower` fits nowhere else. The scheduler
    # knows nothing of who follows `lead`: it may bind it in zone a (its affinity, if any, matches
    # only its own pods, so the first one goes anywhere), `follower` then Pending, and `pinned` in
    # zone c. Their bound pods are in two zones: the unit is not pinned to zone c with `pinned`.
    # (`lead` going first is a pending risk: TG111, from the map's first-mover risks.)
    p = _place(_strays_case("abc", lead_affinity), STRAYS)
    assert p.schedulable and not p.colocated
    assert p.may_split_reasons == (
        "follower and pinned are each held only in us-east-1c, but lead can be scheduled first in us-east-1a, "
        "us-east-1b (its pods bound there, the rest of its unit Pending), and no required podAffinity on "
        f"{ZK} ties the two to one zone",)
    risks = [*p.pending_risks, *_strand_risks(one(_strays_case("abc", lead_affinity)), p, ZK)]
    assert "lead may be scheduled first in us-east-1a, where follower cannot run; everything that follows it " \
        "waits Pending" in risks, risks


@pytest.mark.parametrize("lead_affinity", [None, ON_ITS_OWN_NODE], ids=["no-affinity", "follows-itself"])
def test_a_unit_whose_every_member_lands_only_in_one_zone_is_pinned_there(lead_affinity: dict[str, Any] | None) -> None:
    # Passing counterpart: `lead` too fits only zone c, so every pod bound is in zone c.
    p = _place(_strays_case("c", lead_affinity), STRAYS)
    assert p.schedulable and p.colocated and p.may_split_reasons == () and p.pending_risks == ()
    assert {g.name: g.zones for g in p.groups} == {n: ("us-east-1c",) for n in ("follower", "lead", "pinned")}
