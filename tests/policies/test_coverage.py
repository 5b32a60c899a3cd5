"""A gate that analysed nothing does not pass (issue 9, item 3): ungrouped pod templates are
listed, a run without any training job fails, PATHs without a Kubernetes object are exit 2,
and the other Kubeflow v1 kinds are analysed with their controllers' labels and ports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import invoke

from topogate.k8s import kinds
from topogate.k8s.jobs import find_jobs

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
INCIDENT = ROOT / "fixtures" / "incident"


def check(*args: str) -> tuple[int, dict[str, Any], str]:
    r = invoke("check", str(LAB), *args, "--format", "json")
    data = json.loads(r.stdout) if r.exit_code != 2 else {}
    return r.exit_code, data, r.stderr


def _without_group_label(src: Path, dst: Path) -> Path:
    dst.mkdir()
    for f in sorted(src.iterdir()):
        text = "\n".join(line for line in f.read_text().splitlines() if "topogate.dev/group" not in line)
        (dst / f.name).write_text(text + "\n")
    return dst


@pytest.mark.parametrize("strict", [False, True], ids=["default", "strict"])
def test_incident_without_group_label_fails(tmp_path: Path, strict: bool) -> None:
    d = _without_group_label(INCIDENT / "broken", tmp_path / "incident")
    code, data, _ = check(str(d), *(["--strict"] if strict else []))
    assert code == 1
    rules = sorted(f["rule"] for f in data["findings"])
    assert rules == ["TG005", "TG006"]  # once per namespace, each template named with its line
    (ungrouped,) = [f for f in data["findings"] if f["rule"] == "TG005"]
    assert ungrouped["object"] == "Namespace/ml-demo"
    assert "2 pod templates" in ungrouped["message"]
    assert "Deployment/ml-demo/coordinator (" in ungrouped["message"] and "Job/ml-demo/gpu-workers (" in ungrouped["message"]
    assert all("topogate.dev/group" in f["message"] for f in data["findings"])
    assert data["workloads"] == []


def test_empty_directory_is_a_usage_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = check(str(tmp_path / "empty"))
    assert code == 2
    assert f"{tmp_path / 'empty'}:1:1: no Kubernetes object found" in err


def test_every_path_without_objects_is_named(tmp_path: Path) -> None:
    (tmp_path / "values.yaml").write_text("replicas: 3\n")
    (tmp_path / "empty").mkdir()
    code, _, err = check(str(INCIDENT / "fixed"), str(tmp_path / "values.yaml"), str(tmp_path / "empty"))
    assert code == 2
    assert "values.yaml:1:1" in err and "empty:1:1" in err


def test_policies_alone_are_objects_not_a_usage_error(tmp_path: Path) -> None:
    shutil.copy(INCIDENT / "fixed" / "policies.yaml", tmp_path / "policies.yaml")
    code, data, _ = check(str(tmp_path / "policies.yaml"))
    # Policies alone are checked (dangling selectors, the boundary probe): not a usage error,
    # but the inventory declares a job and none is among the PATHs: the run fails (TG006).
    assert code == 1 and {f["rule"] for f in data["findings"]} == {"TG109", "TG006"}


def test_daemonset_and_unknown_kinds_are_listed(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text("""\
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: ml-demo}
spec:
  template:
    metadata: {labels: {topogate.dev/group: train}}
    spec: {containers: [{name: a, image: x}]}
---
apiVersion: ray.io/v1
kind: RayJob
metadata: {name: ray, namespace: ml-demo}
spec:
  rayClusterSpec:
    workerGroupSpecs:
    - groupName: gpu
      template:
        spec: {containers: [{name: w, image: x}]}
""")
    code, data, _ = check(str(tmp_path / "m.yaml"))
    assert code == 1
    (f,) = [f for f in data["findings"] if f["rule"] == "TG005"]
    assert "one pod per node" in f["message"] and "does not read RayJob" in f["message"]
    assert "RayJob/ml-demo/ray (" in f["message"] and "m.yaml:17:" in f["message"]  # inside workerGroupSpecs


def _v1_job(kind: str, groups: dict[str, int]) -> dict[str, Any]:
    key = kinds.REPLICA_SPECS[kind]
    return {"apiVersion": "kubeflow.org/v1", "kind": kind, "metadata": {"name": "j", "namespace": "ml"},
            "spec": {key: {g: {"replicas": n, "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}
                           for g, n in groups.items()}}}


@pytest.mark.parametrize(("kind", "groups", "operator", "master", "port"), [
    ("TFJob", {"Chief": 1, "PS": 2, "Worker": 4, "Evaluator": 1}, "tfjob-controller", "Chief", 2222),
    ("XGBoostJob", {"Master": 1, "Worker": 3}, "xgboostjob-controller", "Master", 9999),
    ("PaddleJob", {"Master": 1, "Worker": 2}, "paddlejob-controller", "Master", 36543),
    ("JAXJob", {"Worker": 4}, "jaxjob-controller", None, 6666),
])
def test_kubeflow_v1_kinds_are_training_jobs(kind: str, groups: dict[str, int], operator: str,
                                             master: str | None, port: int) -> None:
    (job,) = find_jobs([(_v1_job(kind, groups), None)])
    assert job.object_id == f"{kind}/ml/j"
    assert {g.name: g.pods for g in job.groups} == groups
    for g in job.groups:
        labels = g.label_map
        assert labels["training.kubeflow.org/operator-name"] == operator
        assert labels["training.kubeflow.org/replica-type"] == g.name.lower()
        assert labels["training.kubeflow.org/job-name"] == "j"
        assert (labels.get("training.kubeflow.org/job-role") == "master") == (g.name == master)
    assert kinds.TRAINING_KINDS[kind].rendezvous_port == port


def test_tfjob_is_analysed_by_check(tmp_path: Path) -> None:
    job = _v1_job("TFJob", {"Chief": 1, "Worker": 2})
    (tmp_path / "tf.yaml").write_text(yaml.safe_dump(job))
    code, data, _ = check(str(tmp_path / "tf.yaml"))
    (w,) = data["workloads"]
    assert w["object"] == "TFJob/ml/j"
    assert not any(f["rule"] in ("TG005", "TG006") for f in data["findings"])


# --- what the inventory names is known; runtimes the cluster has ---

TG005_FAIL = ROOT / "fixtures" / "rules" / "TG005-ungrouped-pods" / "fail" / "manifests.yaml"
TG122_FAIL = ROOT / "fixtures" / "rules" / "TG122-runtime-missing" / "fail" / "manifests.yaml"


def _lab_with(tmp_path: Path, extra: str, cluster_extra: str = "") -> str:
    lab = tmp_path / "lab"
    shutil.copytree(LAB.parent, lab)
    inv = lab / "inventory.yaml"
    text = inv.read_text()
    if cluster_extra:
        text = text.replace("  networkZones:\n", cluster_extra + "  networkZones:\n", 1)
    inv.write_text(text + extra)
    return str(inv)


def _check_with(inv: str, *paths: Path | str, strict: bool = False) -> tuple[int, list[dict[str, Any]]]:
    r = invoke("check", inv, *map(str, paths), "--format", "json",
               *(["--strict"] if strict else []))
    return r.exit_code, json.loads(r.stdout)["findings"]


def test_the_service_a_door_leads_to_is_known_not_ungrouped(tmp_path: Path) -> None:
    # Before: the door's target has to be among PATHs for the door to be traced, and was then
    # a TG005 warning on every run (with --strict, a failed gate).
    assert [f["rule"] for f in _check_with(str(LAB), TG005_FAIL, strict=True)[1]] == ["TG005"]
    inv = _lab_with(tmp_path, "doors:\n- name: tracking\n  cluster: lab\n  from: {workloads: [train]}\n"
                              "  to: {namespace: ml-demo, labels: {app: tracking}}\n  ports: [{port: 5000}]\n")
    code, fs = _check_with(inv, TG005_FAIL, strict=True)
    assert "TG005" not in [f["rule"] for f in fs], fs


def test_pods_of_a_scraping_namespace_are_known(tmp_path: Path) -> None:
    inv = _lab_with(tmp_path, "")
    text = Path(inv).read_text().replace("  placement: pin\n", "  placement: pin\n  metrics: {port: 9090, namespace: ml-demo}\n", 1)
    Path(inv).write_text(text)
    assert "TG005" not in [f["rule"] for f in _check_with(inv, TG005_FAIL)[1]]


def test_a_runtime_the_inventory_says_the_cluster_has_is_no_warning(tmp_path: Path) -> None:
    assert "TG122" in [f["rule"] for f in _check_with(str(LAB), TG122_FAIL)[1]]
    inv = _lab_with(tmp_path, "", "  trainingRuntimes: [torch-distributed]\n")
    assert "TG122" not in [f["rule"] for f in _check_with(inv, TG122_FAIL)[1]]
    other = _lab_with(tmp_path / "o", "", "  trainingRuntimes: [deepspeed]\n")
    assert "TG122" in [f["rule"] for f in _check_with(other, TG122_FAIL)[1]]  # another runtime
