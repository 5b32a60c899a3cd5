"""`topogate import`: recorded node lists (EKS + Karpenter, GKE, AKS).

Against the real kube-apiserver, with the nodes created in it through the API (and the
in-cluster service account, 401, 403, TLS): tests/oracles/test_cluster_live.py. A 5xx, which a real
server cannot be made to answer, on the stand-in of tests/live_support.py.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from topogate.inventory.model import Inventory
from topogate.sources.inventory import load_inventory

pytest.register_assert_rewrite("live_support")
pytest_plugins = ["live_support"]
from live_support import LIVE, REPO, TOKEN, StandIn, run, write_kubeconfig  # noqa: E402

EKS = LIVE / "eks-nodes.json"


def pools(inv: Inventory) -> dict[tuple[str, str], tuple[int, int, dict[str, str], list[str]]]:
    """(zone, pool) -> (nodes, gpusPerNode, labels, taints as key=value:effect)."""
    return {(z.name, p.name): (p.nodes, p.gpus_per_node, p.label_map,
                               [f"{t.key}={t.value}:{t.effect}" for t in p.taints])
            for c in inv.clusters for z in c.zones for p in z.pools}


def test_eks_with_karpenter_and_unlabelled_nodes(tmp_path: Path) -> None:
    out = tmp_path / "inventory.yaml"
    code, stdout, stderr = run("import", "--from-file", str(EKS), "-o", str(out))
    assert (code, stderr) == (0, "")
    text = out.read_text()
    assert text.startswith("# yaml-language-server: $schema=")
    schema = (out.parent / text.split("$schema=", 1)[1].split("\n", 1)[0]).resolve()
    assert schema == (Path.cwd() / ".topogate" / "inventory.schema.json").resolve()
    inv = load_inventory(out)
    (c,) = inv.clusters
    assert (c.name, c.provider, c.region) == ("eks", "aws", "us-east-1")
    assert [z.name for z in c.zones] == ["us-east-1a", "us-east-1b", "us-east-1c"]
    assert inv.workloads == ()
    got = pools(inv)
    # every label the pool's nodes share, GPU Feature Discovery's included (a job may select
    # its GPU model by nvidia.com/gpu.product), not only those of a person's own domains
    gpu = {"eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": "gpu-p4d",
           "node-type": "gpu", "node.kubernetes.io/instance-type": "p4d.24xlarge",
           "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}
    assert got[("us-east-1a", "gpu-p4d")] == (2, 8, gpu, ["nvidia.com/gpu=present:NoSchedule"])
    assert got[("us-east-1b", "gpu-p4d")] == (2, 8, gpu, ["nvidia.com/gpu=present:NoSchedule"])
    spot = got[("us-east-1c", "gpu-spot")]
    assert spot[:2] == (2, 4) and spot[3] == ["nvidia.com/gpu=:NoSchedule"]
    assert {"karpenter.sh/nodepool": "gpu-spot", "node-type": "gpu-spot", "karpenter.sh/capacity-type": "spot",
            "karpenter.k8s.aws/instance-gpu-name": "a10g"}.items() <= spot[2].items()
    # left out, and said why: per node, stated elsewhere, assumed, deprecated twins, volatile
    assert not {"kubernetes.io/hostname", "topology.k8s.aws/zone-id", "kubernetes.io/os", "karpenter.sh/registered",
                "beta.kubernetes.io/instance-type", "topology.kubernetes.io/region"} & set(spot[2])
    head = text.split("apiVersion:", 1)[0].replace("\n# ", " ")
    for said in ("kubernetes.io/hostname (one per node)", "topology.kubernetes.io/region (the cluster's region)",
                 "karpenter.sh/initialized, karpenter.sh/registered (change with every upgrade)",
                 "(deprecated twins of their GA labels)", "(linux and amd64, which topogate assumes of every node)"):
        assert said in head, said
    # the cordoned system node's node.kubernetes.io/unschedulable taint is state, not the pool's
    system = (1, 0, {"eks.amazonaws.com/capacityType": "ON_DEMAND", "eks.amazonaws.com/nodegroup": "system",
                     "node-role": "system", "node.kubernetes.io/instance-type": "m6i.xlarge"}, [])
    assert all(got[(z, "system")] == system for z in ("us-east-1a", "us-east-1b", "us-east-1c"))
    assert got[("us-east-1c", "cpu-batch")] == (
        2, 0, {"node-type": "cpu-batch", "node.kubernetes.io/instance-type": "c6i.8xlarge"}, [])
    assert "- name: cpu-batch  # no node-pool label: grouped by identical labels and taints" in text
    assert ("note: 2 node(s) carry no node-pool label (EKS, Karpenter, GKE, AKS or --pool-label): "
            "grouped by identical labels and taints as pool cpu-batch: ip-10-0-3-120.ec2.internal, "
            "ip-10-0-3-121.ec2.internal") in stdout
    assert stdout.startswith(f"wrote {out}: cluster eks, 3 zones, 4 pools, 11 nodes\n")


def test_gke_and_aks_label_variants(tmp_path: Path) -> None:
    assert run("import", "--from-file", str(LIVE / "gke-nodes.json"), "-o", str(tmp_path / "g.yaml"))[0] == 0
    gke = load_inventory(tmp_path / "g.yaml")
    assert (gke.clusters[0].provider, gke.clusters[0].region) == ("gcp", "us-central1")
    a100 = pools(gke)[("us-central1-b", "a100-pool")]
    assert (a100[0], a100[1], a100[3]) == (2, 8, ["nvidia.com/gpu=present:NoSchedule"])
    assert {"cloud.google.com/gke-nodepool": "a100-pool", "team": "research",
            "cloud.google.com/gke-accelerator": "nvidia-tesla-a100"}.items() <= a100[2].items()
    assert run("import", "--from-file", str(LIVE / "aks-nodes.json"), "-o", str(tmp_path / "a.yaml"),
               "--cluster-name", "ML_AKS")[0] == 0
    aks = load_inventory(tmp_path / "a.yaml")
    assert aks.clusters[0].name == "ml-aks" and aks.clusters[0].provider == "azure"
    got = pools(aks)
    # AMD GPUs count like NVIDIA ones
    assert got[("eastus-1", "mi300")][:2] == (2, 8)
    assert got[("eastus-1", "mi300")][3] == ["amd.com/gpu=present:NoSchedule"]
    assert got[("eastus-3", "system")] == (
        1, 0, {"agentpool": "system", "kubernetes.azure.com/agentpool": "system", "kubernetes.azure.com/mode": "system",
               "kubernetes.azure.com/os-sku": "Ubuntu", "kubernetes.azure.com/role": "agent",
               "node.kubernetes.io/instance-type": "Standard_D8ds_v5"},
        ["CriticalAddonsOnly=true:NoSchedule"])


def test_pool_label_option(tmp_path: Path) -> None:
    code, stdout, _ = run("import", "--from-file", str(EKS), "-o", str(tmp_path / "i.yaml"),
                          "--pool-label", "node-type")
    assert code == 0
    got = pools(load_inventory(tmp_path / "i.yaml"))
    assert {p for _, p in got} == {"gpu", "gpu-spot", "cpu-batch", "system"}
    # nodes without node-type (the system node group) are the ones grouped and reported
    assert "as pool system: ip-10-0-1-10.ec2.internal, ip-10-0-2-10.ec2.internal, " \
           "ip-10-0-3-10.ec2.internal" in stdout


def test_never_overwrites_without_force(tmp_path: Path) -> None:
    out = tmp_path / "inventory.yaml"
    out.write_text("mine\n")
    code, stdout, stderr = run("import", "--from-file", str(EKS), "-o", str(out))
    assert (code, stdout) == (2, "")
    assert stderr == f"topogate import: {out} exists; pass --force to replace it [exit 2]\n"
    assert out.read_text() == "mine\n"
    assert run("import", "--from-file", str(EKS), "-o", str(out), "--force")[0] == 0
    assert "kind: Inventory" in out.read_text()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inventory.yaml"]  # no temp file left


def test_inside_a_git_work_tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The user's repository: import's check that its output loads back reads its own
    # temporary file, which git does not track; the tracked-only rule for inputs refused it.
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True, timeout=60)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "clusters").mkdir()
    code, stdout, stderr = run("import", "--from-file", str(EKS), "-o", "clusters/eks.yaml")
    assert (code, stderr) == (0, "")
    assert stdout.startswith("wrote clusters/eks.yaml: cluster eks, 3 zones, 4 pools, 11 nodes\n")
    out = tmp_path / "clusters" / "eks.yaml"
    assert out.read_text().startswith("# yaml-language-server: $schema=../.topogate/inventory.schema.json\n")
    assert [p.name for p in out.parent.iterdir()] == ["eks.yaml"]  # no temp file left
    # as an input the written file is still held to the rule until it is tracked
    subprocess.run(["git", "add", "-N", "clusters/eks.yaml"], check=True, timeout=60)
    assert [c.name for c in load_inventory(out).clusters] == ["eks"]


@pytest.mark.parametrize(("content", "words"), [
    ("{]", "neither JSON nor YAML"),
    ('{"kind": "List", "items": []}', "holds no Node"),
    ("[1, 2]", "not a Kubernetes object or List"),
])
def test_bad_files_exit_2_with_a_position(tmp_path: Path, content: str, words: str) -> None:
    f = tmp_path / "nodes.json"
    f.write_text(content)
    code, _, stderr = run("import", "--from-file", str(f), "-o", str(tmp_path / "i.yaml"))
    assert code == 2 and stderr.startswith(f"topogate import: {f}:1:") and words in stderr
    assert not (tmp_path / "i.yaml").exists()


def test_import_round_trips_through_generate_and_check(tmp_path: Path) -> None:
    """Done-when of issue 13: an import of the recorded 3-zone node list, finished by a person
    (a network zone and a job added), generates and checks clean."""
    inv = tmp_path / "inventory.yaml"
    assert run("import", "--from-file", str(EKS), "-o", str(inv))[0] == 0
    shutil.copytree(REPO / "fixtures" / "lab" / "bases", tmp_path / "bases")
    inv.write_text(inv.read_text().replace("workloads: []\n", (
        "workloads:\n"
        "- {name: train, namespace: ml-demo, cluster: eks, kind: PyTorchJob, base: bases/train,\n"
        "   networkZone: us-east-1a, placement: pin}\n")))
    code, stdout, _ = run("generate", str(inv), "-o", str(tmp_path / "out"))
    assert code == 0, stdout
    assert "PyTorchJob/ml-demo/train in us-east-1a: pinned to us-east-1a" in stdout
    patch = (tmp_path / "out/clusters/eks/workloads/ml-demo/train/placement-patch.yaml").read_text()
    assert "key: nvidia.com/gpu" in patch  # the imported taint became the job's toleration
    code, stdout, _ = run("check", str(inv), "--rendered", str(tmp_path / "out"))
    assert code == 0, stdout
    assert "PyTorchJob/ml-demo/train (cluster eks): colocated, schedulable" in stdout
    assert stdout.endswith("ok: 0 errors, 0 warnings in 1 workload\n")


# STAND-IN: a 5xx on demand, which a real API server cannot be made to answer (401, 403, TLS and
# the in-cluster service account against the real one: tests/oracles/test_cluster_live.py).
@pytest.mark.parametrize(("status", "code"), [(500, 75)])
def test_live_import_errors(standin: StandIn, tmp_path: Path, status: int, code: int) -> None:
    standin.serve_file("eks-nodes.json")
    standin.faults["/api/v1/nodes"] = [status]
    kc = write_kubeconfig(tmp_path / "kubeconfig", standin.url)
    rc, stdout, stderr = run("import", "--kubeconfig", str(kc), "-o", str(tmp_path / "i.yaml"))
    assert (rc, stdout) == (code, "")
    assert stderr.count("\n") == 1 and stderr.endswith(f"[exit {code}]\n") and TOKEN not in stderr
    assert not (tmp_path / "i.yaml").exists()


def test_from_file_with_context_is_a_usage_error(tmp_path: Path) -> None:
    code, _, stderr = run("import", "--from-file", str(EKS), "--context", "x", "-o", str(tmp_path / "i"))
    assert code == 2 and "--from-file reads no cluster" in stderr


def test_import_fills_the_cilium_block_from_the_agents_config(tmp_path: Path) -> None:
    """The ConfigMap kube-system/cilium-config and the cilium DaemonSet's image become the
    cluster's `cilium:` block; only the keys that change a verdict are read."""
    import json

    nodes = json.loads(EKS.read_text())
    secretish = "do-not-copy-this-value"
    nodes["items"] += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
         "data": {"labels": "k8s:app  k8s:io.kubernetes.pod.namespace k8s:topology.kubernetes.io/zone",
                  "policy-cidr-match-mode": "nodes", "enable-node-selector-labels": "true",
                  "allow-localhost": "policy", "enable-policy": "default", "cluster-name": "east-1",
                  "enable-k8s-cluster-network-policy": "false", "clustermesh-config": secretish}},
        {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "cilium", "namespace": "kube-system"},
         "spec": {"template": {"spec": {"containers": [
             {"name": "cilium-agent", "image": "quay.io/cilium/cilium:v1.20.2@sha256:" + "0" * 64}]}}}},
        # another namespace's ConfigMap of that name is not the agent's
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "default"},
         "data": {"cluster-name": "wrong"}},
    ]
    snap = tmp_path / "cluster.json"
    snap.write_text(json.dumps(nodes))
    out = tmp_path / "inventory.yaml"
    code, stdout, stderr = run("import", "--from-file", str(snap), "-o", str(out))
    assert (code, stderr) == (0, "")
    text = out.read_text()
    assert secretish not in text and secretish not in stdout
    (c,) = load_inventory(out).clusters
    assert c.cilium is not None
    assert (c.cilium.version, c.cilium.labels, c.cilium.policy_cidr_match_mode) == (
        "1.20.2", ("k8s:app", "k8s:io.kubernetes.pod.namespace", "k8s:topology.kubernetes.io/zone"), ("nodes",))
    assert (c.cilium.enable_node_selector_labels, c.cilium.allow_localhost, c.cilium.policy_enforcement,
            c.cilium.cluster_name, c.cilium.enable_k8s_cluster_network_policy) == (True, "policy", "default",
                                                                                 "east-1", False)
    assert c.cilium.kube_api_server == "world"  # EKS: the control plane runs outside the nodes
    assert "kubeAPIServer: world  # a managed control plane (aws's nodes say so)" in text
    assert "cilium: version 1.20.2, labels k8s:app" in stdout
    # Without the agent's objects the block is left out: the defaults decide.
    code, _, _ = run("import", "--from-file", str(EKS), "-o", str(tmp_path / "plain.yaml"))
    assert code == 0 and load_inventory(tmp_path / "plain.yaml").clusters[0].cilium is None


GFD_JOB = """apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: train}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
    Worker:
      replicas: 2
      template:
        spec:
          nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB}
          tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
          containers: [{name: pytorch, image: x, resources: {limits: {nvidia.com/gpu: 1}}}]
"""


def test_a_job_selecting_its_gpu_model_runs_on_the_imported_pools(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A job that picks its GPU model by GPU Feature Discovery's label: on the imported inventory
    it is schedulable; on one whose pools lack the label, TG103 names the inventory as the fix."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bases" / "train").mkdir(parents=True)
    (tmp_path / "bases" / "train" / "kustomization.yaml").write_text("resources: [job.yaml]\n")
    (tmp_path / "bases" / "train" / "job.yaml").write_text(GFD_JOB)
    assert run("import", "--from-file", str(EKS), "-o", "inventory.yaml")[0] == 0
    text = (tmp_path / "inventory.yaml").read_text().replace("workloads: []", (
        "workloads:\n- {name: train, namespace: ml, cluster: eks, kind: PyTorchJob, base: bases/train,\n"
        "   networkZone: us-east-1a, placement: pin}"))
    (tmp_path / "inventory.yaml").write_text(text)
    code, out, _ = run("check", "inventory.yaml", "--format", "json")
    assert code == 0, out
    # the same inventory without GPU Feature Discovery's label, as import wrote it before
    (tmp_path / "inventory.yaml").write_text(text.replace(
        ", nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB", ""))
    code, out, _ = run("check", "inventory.yaml")
    assert code == 1
    assert ("If the nodes carry nvidia.com/gpu.product, the inventory is what is missing: declare it "
            "under the pool's `labels:`") in out
