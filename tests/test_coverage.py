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
from click.testing import CliRunner

from topogate.cli.app import main
from topogate.k8s import kinds
from topogate.k8s.jobs import find_jobs

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
INCIDENT = ROOT / "fixtures" / "incident"


def check(*args: str) -> tuple[int, dict[str, Any], str]:
    r = CliRunner().invoke(main, ["check", str(LAB), *args, "--format", "json"])
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
    assert rules == ["TG005", "TG005", "TG006"]
    listed = {f["object"] for f in data["findings"] if f["rule"] == "TG005"}
    assert listed == {"Deployment/ml-demo/coordinator", "Job/ml-demo/gpu-workers"}
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
    by = {f["object"]: f for f in data["findings"] if f["rule"] == "TG005"}
    assert "one pod per node" in by["DaemonSet/ml-demo/agent"]["message"]
    assert "does not read RayJob" in by["RayJob/ml-demo/ray"]["message"]
    assert by["RayJob/ml-demo/ray"]["line"] == 17  # the template inside workerGroupSpecs


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
