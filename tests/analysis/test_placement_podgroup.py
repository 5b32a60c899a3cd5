"""The Kubernetes Workload API (scheduling.k8s.io/v1beta1, Kubernetes 1.37): pods that name a
PodGroup (`spec.schedulingGroup.podGroupName`) whose `spec.schedulingConstraints.topology[].key`
is the zone key are placed in one zone together, like a Kueue pod-set group; a gang
(`spec.schedulingPolicy.gang.minCount`) admits nothing until that many pods can be placed."""

from __future__ import annotations

from typing import Any

from test_placement import TOLERATE_GPU, ZK, cluster, gpu, tpl

from topogate.analysis.placement import JobPlacement, place_all
from topogate.k8s.jobs import find_jobs
from topogate.k8s.podgroups import read_pod_groups


def pod_group(name: str = "train", key: str | None = ZK, min_count: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": min_count}} if min_count else {"basic": {}}}
    if key:
        spec["schedulingConstraints"] = {"topology": [{"key": key}]}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def job(workers: int = 2, gpus: int = 0, group: str | None = "train") -> dict[str, Any]:
    """A PyTorchJob whose Master (CPU, may use every zone) and GPU Workers name PodGroup `group`."""
    extra: dict[str, Any] = {"schedulingGroup": {"podGroupName": group}} if group else {}
    master = tpl({}, tolerations=TOLERATE_GPU, **extra)
    worker = tpl({}, containers=[gpu(gpus)] if gpus else [{"name": "t"}], tolerations=TOLERATE_GPU, **extra)
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "llama", "namespace": "ml"},
            "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": master},
                                             "Worker": {"replicas": workers, "template": worker}}}}


def _place(*objects: dict[str, Any], gpu_zones: int = 2) -> JobPlacement:
    c = cluster(gpu_zones=gpu_zones, cpu_zones=0, gpu_nodes=2)
    jobs = find_jobs((o, None) for o in objects if o["kind"] != "PodGroup")
    groups = read_pod_groups(objects)
    (p,) = place_all(jobs, lambda _j: c, {}, pod_groups=groups).values()
    return p


def test_read_pod_groups_takes_topology_keys_and_gang_min_count() -> None:
    (g,) = read_pod_groups([pod_group(min_count=3)]).values()
    assert (g.namespace, g.name, g.topology_keys, g.min_count) == ("ml", "train", (ZK,), 3)
    assert read_pod_groups([{**pod_group(), "apiVersion": "example.com/v1"}]) == {}  # another API's PodGroup


def test_pods_of_one_zone_topology_pod_group_are_colocated() -> None:
    assert not _place(job(group=None)).colocated  # without the PodGroup: Master and Workers may part
    p = _place(job(), pod_group())
    assert p.schedulable and p.colocated, p.may_split_reasons


def test_a_pod_group_without_a_zone_topology_does_not_hold_the_job() -> None:
    assert not _place(job(), pod_group(key="example.com/rack")).colocated
    assert not _place(job(), pod_group(key=None)).colocated


def test_a_gang_larger_than_its_pods_never_starts() -> None:
    p = _place(job(workers=2), pod_group(min_count=4))
    assert not p.schedulable
    assert any("minCount 4" in r and "3 pods" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


def test_a_zone_held_gang_must_fit_in_one_zone() -> None:
    # 3 x 8 GPUs, each zone has 2 nodes x 8: the job fits the cluster (32 GPUs), no zone (16).
    p = _place(job(workers=3, gpus=8), pod_group(min_count=4))
    assert not p.schedulable
    assert any("must share one zone" in r for r in p.unschedulable_reasons), p.unschedulable_reasons
    assert _place(job(workers=2, gpus=8), pod_group(min_count=3)).schedulable


def test_a_pod_group_held_in_a_zone_by_one_member_is_pinned_there_with_the_job() -> None:
    # The PodGroup holds `lead` (which fits both zones) and `gpu` (only zone a) in one zone, and
    # the scheduler picks a zone where the whole group fits before binding any pod: zone a.
    # `init` is pinned to zone a by its own nodeSelector: the job is co-located. (Without the
    # PodGroup, `lead` could go first into zone b, `gpu` then Pending: placement.fixpoint.)
    def rjob(name: str, **spec: Any) -> dict[str, Any]:
        return {"name": name, "replicas": 1, "template": {"spec": {"parallelism": 1, "template": tpl(
            {"role": name}, tolerations=TOLERATE_GPU, **spec)}}}

    on_a = {"nodeSelector": {ZK: "us-east-1a"}}
    grouped = {"schedulingGroup": {"podGroupName": "train"}}
    js = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "held", "namespace": "ml"},
          "spec": {"replicatedJobs": [rjob("lead", **grouped),
                                      rjob("gpu", containers=[gpu(1)], **on_a, **grouped),
                                      rjob("init", **on_a)]}}
    p = _place(js, pod_group())
    assert p.schedulable and p.colocated, p.may_split_reasons
    assert {g.name: g.zones for g in p.groups} == {n: ("us-east-1a",) for n in ("lead", "gpu", "init")}
