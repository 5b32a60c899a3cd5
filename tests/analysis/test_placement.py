"""Placement semantics: zones per group, co-location, splits, capacity, zone pairs.

Each test fails if the rule it names is simplified away. Pages:
https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity
https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/
"""

from __future__ import annotations

import copy
from typing import Any

from topogate.analysis.placement import JobPlacement, place_all, place_job
from topogate.inventory.model import Cluster, Pool, Taint, Zone
from topogate.k8s.jobs import TrainingJob, find_jobs

ZK = "topology.kubernetes.io/zone"
GPU_TAINT = Taint("gpu", "NoSchedule", "present")
TOLERATE_GPU = [{"key": "gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]


def cluster(gpu_zones: int = 1, cpu_zones: int = 1, gpu_nodes: int = 4, tainted: bool = True) -> Cluster:
    """GPU zones us-east-1a.. (tainted, 8 GPUs/node), then CPU zones."""
    zones = []
    names = iter("abcdef")
    for _ in range(gpu_zones):
        zones.append(Zone(f"us-east-1{next(names)}", (Pool(
            "gpu", gpu_nodes, 8, (("node-type", "gpu"),), (GPU_TAINT,) if tainted else ()),)))
    for _ in range(cpu_zones):
        zones.append(Zone(f"us-east-1{next(names)}", (Pool("cpu", 3, 0, (("node-type", "cpu"),)),)))
    return Cluster("gpu-east", "aws", "us-east-1", zones=tuple(zones))


def gpu(n: int) -> dict[str, Any]:
    return {"name": "t", "resources": {"limits": {"nvidia.com/gpu": n}}}


def tpl(labels: dict[str, str], **spec: Any) -> dict[str, Any]:
    spec.setdefault("containers", [{"name": "t"}])
    return {"metadata": {"labels": labels}, "spec": spec}


def pytorchjob(master: dict[str, Any], worker: dict[str, Any], workers: int = 4, name: str = "llama") -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": master},
                                             "Worker": {"replicas": workers, "template": worker}}}}


def jobset(template: dict[str, Any], pods: int = 4, name: str = "js") -> dict[str, Any]:
    return {"kind": "JobSet", "metadata": {"name": name, "namespace": "ml"}, "spec": {"replicatedJobs": [
        {"name": "w", "replicas": 1, "template": {"spec": {"parallelism": pods, "template": template}}}]}}


def one(obj: dict[str, Any]) -> TrainingJob:
    (job,) = find_jobs([(obj, None)])
    return job


def place(obj: dict[str, Any], c: Cluster | None = None) -> JobPlacement:
    return place_job(one(obj), c or cluster())


def zone_affinity(labels: dict[str, str]) -> dict[str, Any]:
    return {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": ZK}]}}


def zone_anti(labels: dict[str, str], key: str = ZK) -> dict[str, Any]:
    return {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}}


def spread(labels: dict[str, str], when: str = "DoNotSchedule", skew: int = 1, **extra: Any) -> list[dict[str, Any]]:
    return [{"maxSkew": skew, "topologyKey": ZK, "whenUnsatisfiable": when,
             "labelSelector": {"matchLabels": labels}, **extra}]


CPU = dict(nodeSelector={"node-type": "cpu"})


# --- node filters feed zones ------------------------------------------------------------------


def test_zones_and_pools_and_removal_reasons_per_group():
    p = place(pytorchjob(tpl({}), tpl({}, containers=[gpu(8)], tolerations=TOLERATE_GPU)))
    m, w = p.group("Master"), p.group("Worker")
    assert m is not None and w is not None
    assert m.zones == ("us-east-1b",)  # the GPU zone is tainted and the master does not tolerate it
    assert m.removed[("us-east-1a", "gpu")] == "taint gpu=present:NoSchedule not tolerated"
    assert w.zones == ("us-east-1a",) and w.pools == (("us-east-1a", ("gpu",)),)
    assert "GPUs on one node" in w.removed[("us-east-1b", "cpu")]


# --- the motivating incident ------------------------------------------------------------------


def incident(fixed: bool) -> list[tuple[dict[str, Any], None]]:
    coord_spec: dict[str, Any] = {"containers": [{"name": "c"}]}
    if fixed:
        coord_spec["nodeSelector"] = {ZK: "us-east-1a"}
        coord_spec["tolerations"] = TOLERATE_GPU
    coordinator = {"kind": "Deployment", "metadata": {"name": "coordinator", "namespace": "ml"}, "spec": {
        "replicas": 1, "template": {"metadata": {"labels": {"topogate.dev/group": "llama", "role": "coord"}},
                                    "spec": coord_spec}}}
    workers = {"kind": "Job", "metadata": {"name": "workers", "namespace": "ml"}, "spec": {
        "parallelism": 4, "template": {"metadata": {"labels": {"topogate.dev/group": "llama"}}, "spec": {
            "nodeSelector": {ZK: "us-east-1a"}, "tolerations": TOLERATE_GPU, "containers": [gpu(8)]}}}}
    return [(coordinator, None), (workers, None)]


def test_incident_coordinator_without_affinity_or_toleration_splits_from_gpu_workers():
    (job,) = find_jobs(incident(fixed=False))
    p = place_job(job, cluster())
    assert p.schedulable
    assert not p.colocated
    assert p.group("Deployment/coordinator").zones == ("us-east-1b",)  # type: ignore[union-attr]
    assert p.group("Job/workers").zones == ("us-east-1a",)  # type: ignore[union-attr]
    assert any("only in us-east-1b" in r and "only in us-east-1a" in r for r in p.may_split_reasons)
    assert p.zone_pairs("Job/workers", "Deployment/coordinator") == {("us-east-1a", "us-east-1b")}


def test_incident_fixed_coordinator_pinned_and_tolerating_is_colocated():
    (job,) = find_jobs(incident(fixed=True))
    p = place_job(job, cluster())
    assert p.schedulable and p.colocated and p.may_split_reasons == ()
    assert p.zone_pairs("Job/workers", "Deployment/coordinator") == {("us-east-1a", "us-east-1a")}


# --- podAffinity ------------------------------------------------------------------------------


def test_self_matching_pod_affinity_colocates_but_does_not_pin():
    # The first pod of a self-matching set may go anywhere it fits; the rest follow it.
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(jobset(tpl({"app": "t"}, affinity=zone_affinity({"app": "t"}))), c)
    w = p.group("w")
    assert w is not None
    assert w.zones == ("us-east-1a", "us-east-1b")  # not pinned
    assert p.colocated
    assert p.zone_pairs("w", "w") == {("us-east-1a", "us-east-1a"), ("us-east-1b", "us-east-1b")}


def test_without_affinity_a_multi_pod_group_may_split():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(jobset(tpl({"app": "t"})), c)
    assert not p.colocated
    assert ("us-east-1a", "us-east-1b") in p.zone_pairs("w", "w")
    assert any("not held in one zone" in r for r in p.may_split_reasons)


def test_pod_affinity_to_single_pod_coordinator_colocates():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(pytorchjob(tpl({"role": "master"}), tpl({}, affinity=zone_affinity({"role": "master"}))), c)
    assert p.colocated and p.schedulable
    assert p.zone_pairs("Worker", "Master") == {("us-east-1a", "us-east-1a"), ("us-east-1b", "us-east-1b")}
    assert p.zone_pairs("Worker", "Worker") == {("us-east-1a", "us-east-1a"), ("us-east-1b", "us-east-1b")}


def test_following_a_multi_pod_group_that_may_split_is_not_colocation():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(pytorchjob(tpl({"role": "master"}), tpl({}, affinity=zone_affinity({"role": "master"}))), c)
    assert p.colocated
    obj = pytorchjob(tpl({"role": "master"}), tpl({}, affinity=zone_affinity({"role": "master"})))
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    assert not place(obj, c).colocated


def test_job_wide_selector_on_every_group_colocates_all_groups():
    c = cluster(gpu_zones=0, cpu_zones=2)
    aff = zone_affinity({"training.kubeflow.org/job-name": "llama"})
    obj = pytorchjob(tpl({}, affinity=aff), tpl({}, affinity=aff))
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2
    p = place(obj, c)
    assert p.colocated
    assert p.zone_pairs("Master", "Worker") == {("us-east-1a", "us-east-1a"), ("us-east-1b", "us-east-1b")}


def test_follow_a_coordinator_that_cannot_reach_the_gpu_zone_is_unschedulable():
    # Classic follow-mode mistake: workers follow a coordinator that lacks the GPU toleration.
    worker = tpl({}, containers=[gpu(8)], tolerations=TOLERATE_GPU, affinity=zone_affinity({"role": "master"}))
    p = place(pytorchjob(tpl({"role": "master"}), worker))
    assert not p.schedulable
    w = p.group("Worker")
    assert w is not None and w.zones == ()
    assert any("Worker has no zone left" in r for r in p.unschedulable_reasons)


def test_follow_a_tolerating_coordinator_colocates_and_warns_it_may_land_elsewhere():
    master = tpl({"role": "master"}, tolerations=TOLERATE_GPU)
    worker = tpl({}, containers=[gpu(8)], tolerations=TOLERATE_GPU, affinity=zone_affinity({"role": "master"}))
    p = place(pytorchjob(master, worker))
    assert p.schedulable and p.colocated
    assert p.group("Master").zones == ("us-east-1a",)  # type: ignore[union-attr]
    assert any("Master can be scheduled in us-east-1b" in r for r in p.pending_risks)


def test_affinity_matching_no_pod_is_unschedulable():
    p = place(jobset(tpl({"app": "t"}, affinity=zone_affinity({"app": "nobody"}))))
    assert not p.schedulable
    assert any("no pod matches" in r for r in p.unschedulable_reasons)


def test_mutual_affinity_without_self_match_deadlocks():
    obj = pytorchjob(tpl({"role": "master"}, affinity=zone_affinity({"role": "worker"})),
                     tpl({"role": "worker"}, affinity=zone_affinity({"role": "master"})))
    p = place(obj, cluster(gpu_zones=0, cpu_zones=1))
    assert not p.schedulable
    assert any("none of them ever starts" in r for r in p.unschedulable_reasons)


def test_affinity_namespaces_scope_the_match():
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": ZK, "namespaces": ["other"]}]}}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), cluster(gpu_zones=0, cpu_zones=2))
    assert not p.schedulable  # its own pods are in "ml", not in "other"


def test_preferred_pod_affinity_constrains_nothing():
    aff = {"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "podAffinityTerm": {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": ZK}}]}}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), cluster(gpu_zones=0, cpu_zones=2))
    assert not p.colocated


def test_hostname_affinity_colocates_zones_too():
    # Same node implies same zone: a self-matching hostname term keeps the group in one zone.
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), cluster(gpu_zones=0, cpu_zones=2))
    assert p.colocated


def test_region_affinity_does_not_tie_zones():
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": "topology.kubernetes.io/region"}]}}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), cluster(gpu_zones=0, cpu_zones=2))
    assert p.schedulable and not p.colocated


def test_affinity_terms_target_pods_matching_all_of_them():
    # The scheduler counts existing pods that match every required term: two terms whose only
    # common match is the single master make the workers follow it, though the first term alone
    # would also match the workers themselves.
    c = cluster(gpu_zones=0, cpu_zones=2)
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": ZK},
        {"labelSelector": {"matchLabels": {"role": "master"}}, "topologyKey": ZK}]}}
    obj = pytorchjob(tpl({"app": "t", "role": "master"}), tpl({"app": "t"}, affinity=aff))
    p = place(obj, c)
    assert p.colocated
    obj["spec"]["pytorchReplicaSpecs"]["Master"]["replicas"] = 2  # a master set that may split
    assert not place(obj, c).colocated


def test_custom_topology_key_missing_on_a_pool_removes_it():
    c = cluster(gpu_zones=0, cpu_zones=2)
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "t"}}, "topologyKey": "example.com/rack"}]}}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), c)
    assert not p.schedulable


def test_peer_of_another_job_is_followed_across_jobs():
    c = cluster(gpu_zones=1, cpu_zones=1, tainted=False)
    coord = {"kind": "Deployment", "metadata": {"name": "coord", "namespace": "ml"}, "spec": {"template": {
        "metadata": {"labels": {"topogate.dev/group": "svc", "app": "coord"}},
        "spec": {"nodeSelector": {ZK: "us-east-1b"}, "containers": [{}]}}}}
    follower = jobset(tpl({"app": "t"}, affinity=zone_affinity({"app": "coord"})))
    jobs = find_jobs([(coord, None), (follower, None)])
    alone = place_job(next(j for j in jobs if j.kind == "JobSet"), c)
    assert not alone.schedulable  # without peers the coordinator is unknown
    placed = place_all(jobs, lambda _j: c)
    js = placed["JobSet/ml/js"]
    assert js.schedulable and js.group("w").zones == ("us-east-1b",)  # type: ignore[union-attr]


# --- podAntiAffinity --------------------------------------------------------------------------


def test_self_anti_affinity_on_zone_splits_each_pod_into_its_own_zone():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(jobset(tpl({"app": "t"}, affinity=zone_anti({"app": "t"})), pods=2), c)
    w = p.group("w")
    assert w is not None and w.splits and p.schedulable and not p.colocated
    assert p.zone_pairs("w", "w") == {("us-east-1a", "us-east-1b"), ("us-east-1b", "us-east-1a")}
    too_many = place(jobset(tpl({"app": "t"}, affinity=zone_anti({"app": "t"})), pods=3), c)
    assert not too_many.schedulable


def test_anti_affinity_between_groups_never_shares_a_zone():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(pytorchjob(tpl({"role": "master"}), tpl({}, affinity=zone_anti({"role": "master"})), workers=1), c)
    pairs = p.zone_pairs("Worker", "Master")
    assert pairs == {("us-east-1a", "us-east-1b"), ("us-east-1b", "us-east-1a")}
    assert not p.colocated


def test_anti_affinity_against_a_pinned_group_removes_its_zone():
    c = cluster(gpu_zones=0, cpu_zones=2)
    master = tpl({"role": "master"}, nodeSelector={ZK: "us-east-1a"})
    p = place(pytorchjob(master, tpl({}, affinity=zone_anti({"role": "master"}))), c)
    assert p.group("Worker").zones == ("us-east-1b",)  # type: ignore[union-attr]


def test_hostname_anti_affinity_does_not_split_zones():
    c = cluster(gpu_zones=0, cpu_zones=2)
    aff = {**zone_anti({"app": "t"}, key="kubernetes.io/hostname"), **zone_affinity({"app": "t"})}
    p = place(jobset(tpl({"app": "t"}, affinity=aff)), c)
    assert p.colocated


# --- topology spread --------------------------------------------------------------------------


def test_spread_do_not_schedule_on_zone_splits_the_group():
    c = cluster(gpu_zones=0, cpu_zones=2)
    p = place(jobset(tpl({"app": "t"}, topologySpreadConstraints=spread({"app": "t"}))), c)
    assert not p.colocated and p.schedulable
    assert any("spread constraint DoNotSchedule" in r and "4 pods, maxSkew 1, 2 eligible zones" in r
               for r in p.may_split_reasons)
    assert p.group("w").splits  # type: ignore[union-attr]


def test_spread_schedule_anyway_constrains_nothing():
    c = cluster(gpu_zones=0, cpu_zones=2)
    t = tpl({"app": "t"}, affinity=zone_affinity({"app": "t"}),
            topologySpreadConstraints=spread({"app": "t"}, when="ScheduleAnyway"))
    p = place(jobset(t), c)
    assert p.colocated and p.schedulable


def test_spread_with_pods_not_above_max_skew_does_not_split():
    c = cluster(gpu_zones=0, cpu_zones=2)
    t = tpl({"app": "t"}, affinity=zone_affinity({"app": "t"}), topologySpreadConstraints=spread({"app": "t"}, skew=4))
    assert place(jobset(t), c).colocated


def test_spread_plus_self_affinity_is_a_conflict():
    c = cluster(gpu_zones=0, cpu_zones=2)
    t = tpl({"app": "t"}, affinity=zone_affinity({"app": "t"}), topologySpreadConstraints=spread({"app": "t"}))
    p = place(jobset(t), c)
    assert not p.schedulable
    assert any("stay Pending" in r for r in p.unschedulable_reasons)


def test_node_affinity_policy_honor_counts_only_allowed_zones_ignore_counts_all():
    c = cluster(gpu_zones=0, cpu_zones=2)
    pinned = {"nodeSelector": {ZK: "us-east-1a"}}
    honor = place(jobset(tpl({"app": "t"}, topologySpreadConstraints=spread({"app": "t"}), **pinned)), c)
    assert honor.schedulable and honor.colocated  # one eligible zone: no skew to keep
    ignore = place(jobset(tpl({"app": "t"}, topologySpreadConstraints=spread(
        {"app": "t"}, nodeAffinityPolicy="Ignore"), **pinned)), c)
    # us-east-1b is a domain the pods can never reach: at most maxSkew of them run in us-east-1a.
    assert not ignore.schedulable
    assert any("at most 1 of the 4 pods" in r for r in ignore.unschedulable_reasons)


def test_node_taints_policy_ignore_by_default_honor_on_request():
    c = cluster(gpu_zones=1, cpu_zones=2)  # a: tainted GPU zone, b and c: CPU
    default = place(jobset(tpl({"app": "t"}, topologySpreadConstraints=spread({"app": "t"}))), c)
    # The tainted zone counts as an empty domain: 2 reachable zones x maxSkew 1 = 2 of 4 pods.
    assert not default.schedulable
    honor = place(jobset(tpl({"app": "t"}, topologySpreadConstraints=spread({"app": "t"}, nodeTaintsPolicy="Honor"))), c)
    assert honor.schedulable and not honor.colocated


def test_spread_whose_selector_misses_the_group_does_not_split_it():
    c = cluster(gpu_zones=0, cpu_zones=2)
    t = tpl({"app": "t"}, affinity=zone_affinity({"app": "t"}), topologySpreadConstraints=spread({"app": "other"}))
    assert place(jobset(t), c).colocated


# --- GPUs and capacity ------------------------------------------------------------------------


def test_gpu_per_node_fit():
    p = place(jobset(tpl({}, containers=[gpu(16)], tolerations=TOLERATE_GPU)))
    assert not p.schedulable
    assert p.group("w").zones == ()  # type: ignore[union-attr]
    assert any("needs 16 GPUs on one node" in r for r in p.unschedulable_reasons)


def test_capacity_over():
    p = place(jobset(tpl({}, containers=[gpu(8)], tolerations=TOLERATE_GPU), pods=5))  # 40 GPUs, zone has 32
    assert not p.schedulable
    assert not p.capacity.fits and (p.capacity.requested, p.capacity.available) == (40, 32)
    ok = place(jobset(tpl({}, containers=[gpu(8)], tolerations=TOLERATE_GPU), pods=4))
    assert ok.schedulable and ok.capacity.fits and ok.capacity.zone == "us-east-1a"


def test_capacity_counts_whole_gpus_per_node():
    # 3 GPUs per pod on 8-GPU nodes: two pods per node, 4 nodes hold 8 pods (24 of 32 GPUs).
    p = place(jobset(tpl({}, containers=[gpu(3)], tolerations=TOLERATE_GPU), pods=9))
    assert not p.schedulable and p.capacity.fits  # GPU total fits, node packing does not
    assert any("hold 8 such pods" in r for r in p.unschedulable_reasons)


def test_colocated_job_must_fit_in_a_single_zone():
    c = cluster(gpu_zones=2, cpu_zones=0)  # two GPU zones of 32 GPUs each
    base = tpl({"app": "t"}, containers=[gpu(8)], tolerations=TOLERATE_GPU)
    spread_out = place(jobset(base, pods=6), c)
    assert spread_out.schedulable and not spread_out.colocated
    together = copy.deepcopy(base)
    together["spec"]["affinity"] = zone_affinity({"app": "t"})
    p = place(jobset(together, pods=6), c)
    assert not p.schedulable
    assert any("must share one zone" in r for r in p.unschedulable_reasons)


# --- results ----------------------------------------------------------------------------------


def test_all_groups_pinned_to_the_same_single_zone_are_colocated_and_output_is_sorted():
    c = cluster(gpu_zones=0, cpu_zones=3)
    pin = {ZK: "us-east-1b"}
    p = place(pytorchjob(tpl({}, nodeSelector=pin), tpl({}, nodeSelector=pin)), c)
    assert p.colocated and p.zones == ("us-east-1b",)
    unpinned = place(pytorchjob(tpl({}), tpl({})), c)
    assert unpinned.group("Master").zones == ("us-east-1a", "us-east-1b", "us-east-1c")  # type: ignore[union-attr]
    assert place(pytorchjob(tpl({}), tpl({})), c) == unpinned  # deterministic


def test_unknown_groups_have_no_pairs():
    p = place(jobset(tpl({})))
    assert p.zone_pairs("w", "nope") == frozenset()


def test_zero_replica_group_is_ignored():
    obj = pytorchjob(tpl({}, **CPU), tpl({}, containers=[gpu(64)]), workers=0)
    p = place(obj)
    assert p.schedulable and p.colocated
