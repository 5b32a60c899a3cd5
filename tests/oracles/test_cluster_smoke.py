"""The real control plane of tests/cluster_support.py answers, and does what the later tests need.

etcd, kube-apiserver and kube-scheduler built from k8s.io/kubernetes v1.37.2 run on 127.0.0.1:
RBAC refuses a ServiceAccount nobody bound, the upstream CRDs are Established, a Node created
through the API keeps its labels, taints and allocatable GPUs, the real scheduler binds pods to
the nodes that fit them (and leaves a pod Pending when none does), and one object of the tree
`topogate generate` writes passes server-side dry-run while a broken copy of it is refused.
"""

from __future__ import annotations

import datetime
import json
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fetch_crds
import pytest
import yaml
from cluster_support import (
    Cluster,
    Scheduler,
    StartFailed,
    _start_control_plane,
    require_binaries,
    wait_for,
    write_kubeconfig,
)
from conftest import FIXTURES, REPO

NS = "topogate-smoke"
ZONE = "topology.kubernetes.io/zone"
GPU = "nvidia.com/gpu"


def node(name: str, zone: str, *, gpus: int = 0, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A Node as a kubelet would report it: Ready, with capacity; no kubelet stands behind it."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    resources = {"cpu": "8", "memory": "32Gi", "pods": "110"}
    if gpus:
        resources[GPU] = str(gpus)
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone,
                                              "node-type": "gpu" if gpus else "cpu"}},
        "spec": {"taints": taints or []},
        "status": {"capacity": resources, "allocatable": resources,
                   "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                   "message": "a Node object only: no kubelet",
                                   "lastHeartbeatTime": now, "lastTransitionTime": now}]},
    }


def pod(name: str, *, gpus: int = 0, tolerate_gpu: bool = False) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "registry.k8s.io/pause:3.10"}
    if gpus:
        container["resources"] = {"limits": {GPU: str(gpus)}}
    spec: dict[str, Any] = {"containers": [container]}
    if tolerate_gpu:
        spec["tolerations"] = [{"key": "gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS}, "spec": spec}


GPU_TAINT = {"key": "gpu", "value": "present", "effect": "NoSchedule"}
NODES = [node("smoke-gpu-1", "zone-a", gpus=4, taints=[GPU_TAINT]), node("smoke-cpu-1", "zone-b")]


@pytest.fixture(scope="module")
def nodes(kube_cluster: Cluster) -> Iterator[list[str]]:
    """Two Nodes in a shared namespace; they and this module's pods are removed afterwards."""
    kube_cluster.ensure_namespace(NS)
    kube_cluster.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": NODES}))
    names = [n["metadata"]["name"] for n in NODES]
    try:
        yield names
    finally:
        # No kubelet confirms a bound pod's graceful deletion: force it.
        kube_cluster.kubectl("delete", "pods", "--all", "-n", NS, "--grace-period=0", "--force")
        kube_cluster.kubectl("delete", "node", *names)


def test_server_is_v1_37_2_and_refuses_an_unbound_service_account(kube_cluster: Cluster) -> None:
    version = json.loads(kube_cluster.kubectl("version", "-o", "json").stdout)["serverVersion"]
    assert version["gitVersion"] == "v1.37.2", version
    assert kube_cluster.server.startswith("https://127.0.0.1:")

    kube_cluster.kubectl("create", "serviceaccount", "nobody", "-n", "default")
    token = kube_cluster.kubectl("create", "token", "nobody", "-n", "default").stdout.strip()
    # The same server and CA, the ServiceAccount's token instead of the admin's certificate.
    as_nobody = write_kubeconfig(kube_cluster.root / "nobody.kubeconfig", kube_cluster.server,
                                 kube_cluster.pki.ca, "nobody", token=token)
    proc = kube_cluster.kubectl("get", "nodes", check=False, kubeconfig=as_nobody)
    assert proc.returncode == 1
    assert 'User "system:serviceaccount:default:nobody" cannot list resource "nodes"' in proc.stderr, proc.stderr


def test_every_locked_crd_is_established(kube_cluster: Cluster) -> None:
    crds = kube_cluster.get("crd")["items"]
    assert isinstance(crds, list)
    established = {c["metadata"]["name"] for c in crds
                   if any(k["type"] == "Established" and k["status"] == "True" for k in c["status"]["conditions"])}
    assert established == set(kube_cluster.crds)
    assert len(kube_cluster.crds) == len(fetch_crds.lock_entries())
    assert "ciliumnetworkpolicies.cilium.io" in established and "pytorchjobs.kubeflow.org" in established


def test_a_node_keeps_its_labels_taints_and_gpus(kube_cluster: Cluster, nodes: list[str]) -> None:
    got = kube_cluster.get("node", "smoke-gpu-1")
    assert got["metadata"]["labels"][ZONE] == "zone-a"  # type: ignore[index]
    assert got["spec"]["taints"] == [GPU_TAINT]  # type: ignore[index]
    assert got["status"]["allocatable"][GPU] == "4"  # type: ignore[index]


def test_the_real_scheduler_binds_pods_where_they_fit(kube_cluster: Cluster, kube_scheduler: Scheduler,
                                                      nodes: list[str]) -> None:
    kube_cluster.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        pod("wants-gpu", gpus=1, tolerate_gpu=True),  # only the GPU node has GPUs
        pod("plain"),  # the GPU node's taint keeps it off
        pod("wants-eight", gpus=8, tolerate_gpu=True),  # no node has 8
    ]}))

    def bound(name: str) -> str:
        return str(kube_cluster.get("pod", "-n", NS, name)["spec"].get("nodeName", ""))  # type: ignore[attr-defined]

    assert wait_for("pod wants-gpu to be bound", lambda: bound("wants-gpu")) == "smoke-gpu-1"
    assert wait_for("pod plain to be bound", lambda: bound("plain")) == "smoke-cpu-1"

    def unschedulable() -> str:
        status: dict[str, Any] = kube_cluster.get("pod", "-n", NS, "wants-eight")["status"]  # type: ignore[assignment]
        cond = [c for c in status.get("conditions", []) if c["type"] == "PodScheduled"]
        return str(cond[0]["message"]) if cond and cond[0].get("reason") == "Unschedulable" else ""

    message = wait_for("pod wants-eight to be marked Unschedulable", unschedulable)
    assert f"Insufficient {GPU}" in message, message
    assert bound("wants-eight") == ""


def _topogate() -> str:
    exe = shutil.which("topogate", path=os.pathsep.join([str(REPO / ".venv" / "bin"), os.environ.get("PATH", "")]))
    if exe is None:
        pytest.fail("topogate not found: run `make install`", pytrace=False)
    return exe


def test_a_generated_policy_passes_server_side_dry_run(kube_cluster: Cluster, tmp_path: Path) -> None:
    out = tmp_path / "out"
    env = {**os.environ, "PATH": os.pathsep.join([str(REPO / ".venv" / "bin"), os.environ.get("PATH", "")])}
    gen = subprocess.run([_topogate(), "generate", str(FIXTURES / "lab" / "inventory.yaml"), "-o", str(out)],
                         capture_output=True, text=True, timeout=120, env=env)
    assert gen.returncode == 0, gen.stderr
    policy = out / "clusters" / "lab" / "workloads" / "ml-demo" / "train" / "ciliumnetworkpolicy.yaml"
    meta = yaml.safe_load(policy.read_text())["metadata"]
    kube_cluster.ensure_namespace(meta["namespace"])
    proc = kube_cluster.kubectl("apply", "--dry-run=server", "-f", str(policy))
    assert proc.stdout == f"ciliumnetworkpolicy.cilium.io/{meta['name']} created (server dry run)\n"
    # A dry run stores nothing.
    gone = kube_cluster.kubectl("get", "ciliumnetworkpolicy", "-n", meta["namespace"], meta["name"],
                                check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr, gone.stderr

    # The server holds the CRD's schema: a selector of the wrong type, or a field the schema
    # does not declare (which a structural schema would otherwise prune silently), is refused.
    obj: dict[str, Any] = yaml.safe_load(policy.read_text())
    cases: list[tuple[str, dict[str, Any], str]] = [
        ("wrong-type", {"endpointSelector": "gpu"}, 'spec.endpointSelector: Invalid value: "string"'),
        ("unknown-field", {"endpointSelectr": {}}, 'unknown field "spec.endpointSelectr"'),
    ]
    for name, change, expected in cases:
        broken = tmp_path / f"{name}.json"
        broken.write_text(json.dumps({**obj, "spec": {**obj["spec"], **change}}))
        refused = kube_cluster.kubectl("apply", "--dry-run=server", "-f", str(broken), check=False)
        assert refused.returncode == 1 and expected in refused.stderr, (name, refused.stderr)


def test_a_failed_start_shows_both_logs_and_a_hung_one_is_bounded(tmp_path: Path) -> None:
    """The real etcd, and a kube-apiserver that dies (then one that never answers): the start
    reports the cause with the tail of every log instead of hanging."""
    real = require_binaries()
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "etcd").symlink_to(real / "etcd")
    fake = bindir / "kube-apiserver"
    fake.write_text("#!/bin/sh\necho 'E0101 run.go:72] \"command failed\" err=\"made to fail\"'\nexit 1\n")
    fake.chmod(0o755)
    with pytest.raises(StartFailed) as died:
        _start_control_plane(tmp_path / "died", bindir)
    text = str(died.value)
    assert "kube-apiserver exited with 1" in text
    assert 'err="made to fail"' in text  # the apiserver's log
    assert "--- etcd (running)" in text  # and etcd's, as it was when the apiserver died

    fake.write_text("#!/bin/sh\nexec sleep 30\n")
    started = time.monotonic()
    with pytest.raises(StartFailed, match=r"/readyz not ready within 2 s"):
        _start_control_plane(tmp_path / "hung", bindir, timeout=2)
    assert time.monotonic() - started < 20
