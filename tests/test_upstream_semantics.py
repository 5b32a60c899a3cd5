"""Semantics the upstream examples exposed (issue 9, item 7), each as our own small case:
not-modelled constructs are warnings in check (TG120), invalid selector operators are refused,
DNS is judged from UDP/53, kubeflow.org/v1 MPIJob pods carry the v1 controller's labels, an
empty JobSet is not split, and a TrainJob without its runtime is a finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from topogate.analysis.jobs import find_jobs
from topogate.cli import main

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
JOB = (ROOT / "fixtures" / "rules" / "TG110-unprotected-job" / "pass" / "manifests.yaml").read_text()
JOB_ONLY = JOB.split("---\napiVersion: cilium.io/v2")[0]


def check(*paths: Path) -> tuple[int, list[dict[str, Any]], str]:
    r = CliRunner().invoke(main, ["check", str(LAB), *map(str, paths), "--format", "json"])
    return r.exit_code, (json.loads(r.stdout)["findings"] if r.exit_code != 2 else []), r.stderr


def policy(tmp: Path, spec: str, name: str = "p.yaml") -> Path:
    f = tmp / name
    f.write_text("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata:\n  name: p\n"
                 "  namespace: ml-demo\nspec:\n" + spec)
    return f


def with_job(tmp: Path) -> Path:
    (tmp / "job.yaml").write_text(JOB_ONLY)
    return tmp / "job.yaml"


DNS_EGRESS = """\
  - toEndpoints:
    - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
    toPorts:
    - ports: [PORTS]
"""


@pytest.mark.parametrize(("spec", "construct", "bound"), [
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
     "    toPorts:\n    - ports: [{port: '8080'}]\n      rules: {http: [{method: GET}]}\n",
     "L7 rules (http)", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  egress:\n  - toServices: [{k8sService: {serviceName: db, namespace: ml-demo}}]\n",
     "toServices", "too strict"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
     "    fromRequires: [{matchLabels: {env: prod}}]\n", "fromRequires", "too permissive"),
    ("  nodeSelector: {matchLabels: {node-type: gpu}}\n  ingress:\n  - fromEntities: [cluster]\n",
     "nodeSelector", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromNodes: [{matchLabels: {node-type: gpu}}]\n",
     "fromNodes", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
     "    authentication: {mode: required}\n", "authentication.mode", "too permissive"),
])
def test_check_warns_about_what_it_does_not_model(tmp_path: Path, spec: str, construct: str, bound: str) -> None:
    f = policy(tmp_path, spec)
    code, fs, _ = check(with_job(tmp_path), f)
    hits = [x for x in fs if x["rule"] == "TG120"]
    assert len(hits) == 1, fs
    assert construct in hits[0]["message"] and bound in hits[0]["message"]
    assert hits[0]["file"] == str(f) and hits[0]["line"] > 6  # at the construct, not the policy's start


def test_invalid_operator_is_refused_with_its_position(tmp_path: Path) -> None:
    f = policy(tmp_path, "  endpointSelector:\n    matchExpressions:\n    - {key: app, operator: in, values: [train]}\n"
                         "  ingress:\n  - {}\n")
    code, _, err = check(with_job(tmp_path), f)
    assert code == 2 and f"{f}:1:1:" in err and "operator 'in'" in err
    r = CliRunner().invoke(main, ["trace", str(f), "--from", "ml-demo:app=train", "--to", "world"])
    assert r.exit_code == 2 and "operator 'in'" in r.stderr


def _dns_case(tmp: Path, ports: str) -> list[dict[str, Any]]:
    spec = ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
            "  egress:\n  - toEndpoints: [{matchLabels: {app: train}}]\n" + DNS_EGRESS.replace("PORTS", ports))
    _, fs, _ = check(with_job(tmp), policy(tmp, spec))
    return [x for x in fs if x["rule"] == "TG108"]


def test_dns_is_judged_from_udp(tmp_path: Path) -> None:
    assert _dns_case(tmp_path, "{port: '53', protocol: UDP}") == []  # only TCP/53 closed
    (tmp_path / "b").mkdir()
    closed = _dns_case(tmp_path / "b", "{port: '53', protocol: TCP}")  # only UDP/53 closed
    assert closed and all("53/UDP" in x["message"] for x in closed)


def test_mpijob_v1_pods_carry_the_v1_controller_labels() -> None:
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "m", "namespace": "ml"},
           "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {}},
                                        "Worker": {"replicas": 2, "template": {}}}}}
    (job,) = find_jobs([(obj, None)])
    launcher = job.group("Launcher")
    assert launcher is not None
    assert launcher.label_map == {
        "training.kubeflow.org/job-name": "m", "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/replica-type": "launcher", "training.kubeflow.org/job-role": "master"}
    obj["apiVersion"] = "kubeflow.org/v2beta1"
    (v2,) = find_jobs([(obj, None)])
    assert v2.group("Launcher").label_map["training.kubeflow.org/operator-name"] == "mpi-operator"  # type: ignore[union-attr]


def test_empty_jobset_is_not_split(tmp_path: Path) -> None:
    f = tmp_path / "js.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                 "metadata": {"name": "e", "namespace": "ml-demo"}, "spec": {"replicatedJobs": []}}))
    code, fs, _ = check(f)
    assert [x["rule"] for x in fs] == ["TG121"]
    assert not any("split across zones ()" in x["message"] for x in fs)
