"""Finding training jobs among manifests: shapes, labels, TrainJob runtimes, group workloads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from topogate.k8s.jobs import find_jobs


@dataclass(frozen=True)
class Src:
    file: str
    line: int
    column: int


def gpu(n: int) -> dict[str, Any]:
    return {"resources": {"limits": {"nvidia.com/gpu": n}}}


PYTORCHJOB = {
    "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
    "metadata": {"name": "llama", "namespace": "ml"},
    "spec": {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": {"metadata": {"labels": {"app": "llama"}},
                                               "spec": {"containers": [{"name": "pytorch"}]}}},
        "Worker": {"replicas": 3, "template": {"spec": {"containers": [{"name": "pytorch", **gpu(8)}]}}},
    }},
}


def test_pytorchjob_groups_labels_gpus_and_positions():
    located: list[tuple[Any, ...]] = []

    def locate(path: tuple[Any, ...]) -> Src:
        located.append(path)
        return Src("job.yaml", 10 + len(located), 7)

    (job,) = find_jobs([(PYTORCHJOB, Src("job.yaml", 1, 1), locate)])
    assert job.object_id == "PyTorchJob/ml/llama"
    assert [(g.name, g.pods, g.gpus_per_pod) for g in job.groups] == [("Master", 1, 0), ("Worker", 3, 8)]
    master = job.group("Master")
    assert master is not None
    assert master.label_map["app"] == "llama"
    assert master.label_map["training.kubeflow.org/job-name"] == "llama"
    assert master.label_map["training.kubeflow.org/replica-type"] == "master"
    assert master.template_path == ("spec", "pytorchReplicaSpecs", "Master", "template")
    assert master.source == Src("job.yaml", 11, 7)
    assert job.gpus == 24


def test_without_locate_groups_point_at_the_object_and_namespace_defaults():
    obj = {**PYTORCHJOB, "metadata": {"name": "llama"}}
    (job,) = find_jobs([(obj, Src("a.yaml", 3, 1))])
    assert job.namespace == "default"
    assert all(g.source == Src("a.yaml", 3, 1) for g in job.groups)


def test_mpijob_and_jobset_shapes():
    mpi = {"kind": "MPIJob", "metadata": {"name": "m"}, "spec": {"mpiReplicaSpecs": {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [{}]}}},
        "Worker": {"replicas": 2, "template": {"spec": {"containers": [{**gpu(4)}]}}}}}}
    js = {"kind": "JobSet", "metadata": {"name": "js", "namespace": "t"}, "spec": {"replicatedJobs": [
        {"name": "workers", "replicas": 2, "template": {"spec": {"parallelism": 4, "template": {
            "spec": {"containers": [gpu(1)]}}}}}]}}
    jobs = {j.object_id: j for j in find_jobs([(mpi, None), (js, None)])}
    assert [(g.name, g.pods) for g in jobs["MPIJob/default/m"].groups] == [("Launcher", 1), ("Worker", 2)]
    w = jobs["JobSet/t/js"].groups[0]
    assert (w.name, w.pods, w.gpus_per_pod) == ("workers", 8, 1)
    assert w.label_map["jobset.sigs.k8s.io/jobset-name"] == "js"
    assert w.label_map["jobset.sigs.k8s.io/replicatedjob-name"] == "workers"


RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {"replicatedJobs": [
        {"name": "dataset-initializer", "template": {"spec": {"template": {"spec": {
            "containers": [{"name": "dataset-initializer"}]}}}}},
        {"name": "node", "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"metadata": {"labels": {"rt": "yes"}}, "spec": {
                "containers": [{"name": "node", "image": "pytorch"}]}}}}},
    ]}}},
}

TRAINJOB = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
    "metadata": {"name": "ft", "namespace": "ml"},
    "spec": {
        "runtimeRef": {"name": "torch-distributed"},
        "trainer": {"numNodes": 4, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 8}}},
        "runtimePatches": [{"manager": "topogate.dev", "trainingRuntimeSpec": {"template": {"spec": {
            "replicatedJobs": [{"name": "node", "template": {"spec": {"template": {
                "metadata": {"labels": {"team": "ml"}},
                "spec": {"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1a"},
                         "tolerations": [{"key": "gpu", "operator": "Exists"}]}}}}}]}}}}],
    },
}


def test_trainjob_resolves_runtime_num_nodes_resources_and_patches():
    (job,) = find_jobs([(TRAINJOB, Src("t.yaml", 1, 1)), (RUNTIME, Src("rt.yaml", 1, 1))])
    assert job.object_id == "TrainJob/ml/ft" and job.runtime == "ClusterTrainingRuntime/torch-distributed"
    assert job.problems == ()
    node = job.group("node")
    init = job.group("dataset-initializer")
    assert node is not None and init is not None
    assert (node.pods, node.gpus_per_pod) == (4, 8)
    assert node.spec["nodeSelector"] == {"topology.kubernetes.io/zone": "us-east-1a"}
    assert node.spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]
    assert node.label_map["rt"] == "yes" and node.label_map["team"] == "ml"
    assert node.label_map["jobset.sigs.k8s.io/jobset-name"] == "ft"
    # The patch targets only "node"; the initializer keeps the runtime's spec.
    assert "tolerations" not in init.spec and init.pods == 1
    # The runtime's template is where the group is written, and the runtime is not mutated.
    assert node.source == Src("rt.yaml", 1, 1) and node.owner == "ClusterTrainingRuntime/torch-distributed"
    assert "nodeSelector" not in RUNTIME["spec"]["template"]["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]


def test_trainjob_uses_namespaced_training_runtime_and_flags_a_missing_one():
    rt = {**RUNTIME, "kind": "TrainingRuntime", "metadata": {"name": "torch-distributed", "namespace": "ml"}}
    tj = {**TRAINJOB, "spec": {**TRAINJOB["spec"], "runtimeRef": {"name": "torch-distributed", "kind": "TrainingRuntime"}}}
    (job,) = find_jobs([(tj, None), (rt, None)])
    assert not job.problems and job.group("node") is not None
    other_ns = {**rt, "metadata": {"name": "torch-distributed", "namespace": "elsewhere"}}
    (missing,) = find_jobs([(tj, None), (other_ns, None)])
    assert missing.problems and "not among the manifests" in missing.problems[0]
    assert [g.name for g in missing.groups] == ["node"]


def test_trainjob_older_pod_spec_overrides_apply_to_target_jobs():
    tj = {**TRAINJOB, "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2},
                               "podSpecOverrides": [{"targetJobs": [{"name": "node"}],
                                                     "tolerations": [{"operator": "Exists"}]}]}}
    (job,) = find_jobs([(tj, None), (RUNTIME, None)])
    node = job.group("node")
    assert node is not None and node.spec["tolerations"] == [{"operator": "Exists"}] and node.pods == 2


def test_group_label_gathers_plain_workloads_into_one_job():
    dep = {"kind": "Deployment", "metadata": {"name": "coordinator", "namespace": "ml"},
           "spec": {"replicas": 1, "template": {"metadata": {"labels": {"topogate.dev/group": "train", "app": "c"}},
                                                "spec": {"containers": [{}]}}}}
    job = {"kind": "Job", "metadata": {"name": "workers", "namespace": "ml"},
           "spec": {"parallelism": 4, "completions": 4, "template": {
               "metadata": {"labels": {"topogate.dev/group": "train"}}, "spec": {"containers": [gpu(8)]}}}}
    loner = {"kind": "Deployment", "metadata": {"name": "web", "namespace": "ml"},
             "spec": {"template": {"metadata": {"labels": {"app": "web"}}, "spec": {}}}}
    (found,) = find_jobs([(job, None), (dep, None), (loner, None)])
    assert found.object_id == "Group/ml/train"
    assert [(g.name, g.pods, g.gpus_per_pod) for g in found.groups] == [
        ("Deployment/coordinator", 1, 0), ("Job/workers", 4, 8)]
    w = found.group("Job/workers")
    c = found.group("Deployment/coordinator")
    assert w is not None and c is not None
    assert w.label_map["batch.kubernetes.io/job-name"] == "workers" and w.label_map["job-name"] == "workers"
    assert c.label_map == {"topogate.dev/group": "train", "app": "c"}
    assert w.template_path == ("spec", "template") and w.owner == "Job/ml/workers"


def test_job_pod_count_is_min_of_parallelism_and_completions():
    job = {"kind": "Job", "metadata": {"name": "w"}, "spec": {"parallelism": 8, "completions": 2, "template": {
        "metadata": {"labels": {"topogate.dev/group": "g"}}, "spec": {}}}}
    (found,) = find_jobs([(job, None)])
    assert found.groups[0].pods == 2


def test_duplicates_keep_the_first_and_output_is_sorted():
    other = {**PYTORCHJOB, "metadata": {"name": "alpha", "namespace": "ml"}}
    jobs = find_jobs([(PYTORCHJOB, Src("first.yaml", 1, 1)), (PYTORCHJOB, Src("second.yaml", 1, 1)), (other, None)])
    assert [j.object_id for j in jobs] == ["PyTorchJob/ml/alpha", "PyTorchJob/ml/llama"]
    assert jobs[1].source == Src("first.yaml", 1, 1)


def test_non_dicts_and_unrelated_kinds_are_ignored():
    assert find_jobs([("text", None), ({"kind": "ConfigMap"}, None), (None,)]) == ()  # type: ignore[list-item]
