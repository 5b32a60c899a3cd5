"""podAffinity peers are the pods of any pod template among the manifests (a Deployment, a
StatefulSet), not only of training jobs: a job that follows a feature store's pods follows them
into the zones those pods can land in. Also a fixture of the scheduler oracle."""

from __future__ import annotations

from typing import Any

from test_placement import TOLERATE_GPU, ZK, cluster, gpu, tpl, zone_affinity

from topogate.analysis.placement import JobPlacement, place_all
from topogate.k8s.jobs import find_jobs


def feature_store(replicas: int = 1, zone: str | None = "us-east-1b") -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "fs"}]}
    if zone:
        spec["nodeSelector"] = {ZK: zone}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "feature-store", "namespace": "ml"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "feature-store"}},
                     "template": {"metadata": {"labels": {"app": "feature-store"}}, "spec": spec}}}


def follower(pods: int = 2) -> dict[str, Any]:
    """A JobSet whose pods follow the feature store's on the zone key (CPU pods, no GPU)."""
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "reader", "namespace": "ml"},
            "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
                "parallelism": pods, "completions": pods,
                "template": tpl({"app": "reader"}, affinity=zone_affinity({"app": "feature-store"}))}}}]}}


def _place(*objects: dict[str, Any]) -> JobPlacement:
    c = cluster(gpu_zones=1, cpu_zones=2, tainted=True)
    jobs = find_jobs((o, None) for o in objects)
    (p,) = place_all(jobs, lambda _j: c, {}, others=objects).values()
    return p


def test_a_job_following_a_deployments_pods_is_held_in_their_zone() -> None:
    p = _place(follower(), feature_store())
    assert p.schedulable, p.unschedulable_reasons
    assert p.colocated and p.zones == ("us-east-1b",)


def test_following_a_deployment_spread_over_zones_may_split() -> None:
    p = _place(follower(), feature_store(replicas=2, zone=None))
    assert p.schedulable and not p.colocated
    assert p.zones == ("us-east-1b", "us-east-1c")  # not the tainted GPU zone the store cannot use


def test_a_deployment_scaled_to_zero_has_no_pods_to_follow() -> None:
    p = _place(follower(), feature_store(replicas=0))
    assert not p.schedulable
    assert any("do not exist" in r for r in p.unschedulable_reasons)
    assert TOLERATE_GPU and gpu(1)  # shared helpers of test_placement
