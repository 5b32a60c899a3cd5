"""`import`, `drift` and `check --live` against the real kube-apiserver of tests/cluster_support.py.

The recorded EKS cluster of fixtures/live/ is created in the real server through the API: its 11
Nodes (labels, taints, allocatable GPUs, one cordoned), the generated network policies as custom
resources, the PyTorchJob, and that job's pods as its operator would create them, which the real
kube-scheduler binds (or leaves Pending with its own message). The commands then read it with
the `kubernetes` client as they would any cluster, through the kubeconfigs a real cluster hands
out: the admin's client certificate, a ServiceAccount bound to examples/rbac-topogate-live.yaml,
a ServiceAccount bound to nothing (403), a wrong token (401), a CA that did not sign the server's
certificate, an address that is no API server's root (404).

Faults the real server cannot be made to show on demand (a continue token that expires in the
middle of a list, 5xx, 429, endless continue tokens) stay on the stand-in of tests/live_support.py.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_support import Cluster, Pki, Scheduler, wait_for, write_kubeconfig
from conftest import REPO
from live_support import run

INV = "fixtures/live/eks/inventory.yaml"
NODES = "fixtures/live/eks-nodes.json"
DRIFTED = "fixtures/live/eks-nodes-drifted.json"
OK = "fixtures/live/eks/live-ok.json"
BROKEN = "fixtures/live/eks/live-broken.json"
NS = "ml-demo"
LIVE_RULES = ("TG206", "TG207", "TG208", "TG209")
SERVER_FIELDS = ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields")


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # findings name the inventory as given: relative to the repo


def _items(name: str, *kinds: str) -> list[dict[str, Any]]:
    doc = json.loads((REPO / name).read_text())
    return [_fresh(o) for o in doc["items"] if o["kind"] in kinds]


def _fresh(obj: dict[str, Any]) -> dict[str, Any]:
    """A recorded object as a client creates it: without what the server sets (uid, versions,
    and the status of everything but Nodes, whose status a kubelet writes on registration)."""
    out = copy.deepcopy(obj)
    for f in SERVER_FIELDS:
        out["metadata"].pop(f, None)
    if out["kind"] != "Node":
        out.pop("status", None)
    return out


def _create(cluster: Cluster, objects: list[dict[str, Any]]) -> None:
    cluster.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))


def _pods_of(job: dict[str, Any], uid: str) -> list[dict[str, Any]]:
    """The pods the PyTorchJob operator creates: one per replica, from the replica's template,
    with its labels and the job as controller owner. No nodeName: the scheduler places them."""
    pods = []
    for rtype, spec in job["spec"]["pytorchReplicaSpecs"].items():
        for i in range(int(spec["replicas"])):
            template = copy.deepcopy(spec["template"])
            labels = {**template["metadata"].get("labels", {}),
                      "training.kubeflow.org/job-name": job["metadata"]["name"],
                      "training.kubeflow.org/operator-name": "pytorchjob-controller",
                      "training.kubeflow.org/replica-type": rtype.lower(),
                      "training.kubeflow.org/replica-index": str(i)}
            pods.append({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": f"{job['metadata']['name']}-{rtype.lower()}-{i}", "namespace": NS,
                             "labels": labels,
                             "ownerReferences": [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                                  "name": job["metadata"]["name"], "uid": uid,
                                                  "controller": True, "blockOwnerDeletion": True}]},
                "spec": {**template["spec"], "restartPolicy": spec.get("restartPolicy", "OnFailure")},
            })
    return pods


def _node_of(cluster: Cluster, pod: str) -> str:
    return str(cluster.get("pod", "-n", NS, pod)["spec"].get("nodeName") or "")  # type: ignore[attr-defined]


def _bound(cluster: Cluster, pods: list[str]) -> dict[str, str]:
    where = {p: _node_of(cluster, p) for p in pods}
    return where if all(where.values()) else {}


@pytest.fixture(scope="module")
def eks(kube_cluster: Cluster, kube_scheduler: Scheduler) -> Iterator[dict[str, Any]]:
    """The recorded EKS cluster running the generated tree, built through the API; removed after."""
    assert kube_scheduler.component.proc.poll() is None
    kube_cluster.ensure_namespace(NS)
    kube_cluster.ensure_namespace("kube-system")
    nodes = _items(NODES, "Node")
    _create(kube_cluster, nodes)
    policies = _items(OK, "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy")
    (job,) = _items(OK, "PyTorchJob")
    _create(kube_cluster, [*policies, job])
    uid = str(kube_cluster.get("pytorchjob", "-n", NS, "train")["metadata"]["uid"])  # type: ignore[index]
    pods = _pods_of(job, uid)
    _create(kube_cluster, pods)
    names = [p["metadata"]["name"] for p in pods]
    placed = wait_for("the job's pods to be bound by kube-scheduler", lambda: _bound(kube_cluster, names))
    try:
        yield {"nodes": [n["metadata"]["name"] for n in nodes], "pods": placed, "job": job, "uid": uid}
    finally:
        # No kubelet confirms a bound pod's graceful deletion: force it.
        kube_cluster.kubectl("delete", "pods", "--all", "-n", NS, "--grace-period=0", "--force")
        kube_cluster.kubectl("delete", "pytorchjobs,ciliumnetworkpolicies,networkpolicies", "--all", "-n", NS)
        kube_cluster.kubectl("delete", "networkpolicies", "--all", "-n", "kube-system")
        kube_cluster.kubectl("delete", "ciliumclusterwidenetworkpolicies", "--all")
        kube_cluster.kubectl("delete", "nodes", "--ignore-not-found", *(n["metadata"]["name"] for n in nodes))


def _kubeconfig(cluster: Cluster, path: Path, user: str, token: str, *, ca: Path | None = None,
                server: str | None = None) -> Path:
    return write_kubeconfig(path, server or cluster.server, ca or cluster.pki.ca, user, token=token)


def _token_of(cluster: Cluster, namespace: str, account: str) -> str:
    cluster.ensure_namespace(namespace)
    cluster.apply({"apiVersion": "v1", "kind": "ServiceAccount",
                   "metadata": {"name": account, "namespace": namespace}})
    return cluster.kubectl("create", "token", account, "-n", namespace).stdout.strip()


def _live_findings(out: str) -> list[tuple[str, str]]:
    return [(f["rule"], f["object"]) for f in json.loads(out)["findings"] if f["rule"] in LIVE_RULES]


def test_import_reads_the_nodes_created_through_the_api(kube_cluster: Cluster, eks: dict[str, Any],
                                                        tmp_path: Path) -> None:
    # Three nodes a page: the real server's continue tokens, followed to the end.
    code, out, err = run("import", "--kubeconfig", str(kube_cluster.kubeconfig), "--chunk-size", "3",
                         "--cluster-name", "eks", "-o", str(tmp_path / "live.yaml"))
    assert (code, err) == (0, "")
    assert out.startswith(f"wrote {tmp_path / 'live.yaml'}: cluster eks, 3 zones, 4 pools, 11 nodes\n")
    assert run("import", "--from-file", NODES, "--cluster-name", "eks", "-o", str(tmp_path / "file.yaml"))[0] == 0
    # The same inventory as from the recorded list, but for the line naming the source.
    live = (tmp_path / "live.yaml").read_text().split("\n", 3)[3]
    assert live == (tmp_path / "file.yaml").read_text().split("\n", 3)[3]
    assert "gpusPerNode: 8" in live and "taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]" in live


def test_import_reads_the_agents_config_through_the_api(kube_cluster: Cluster, eks: dict[str, Any],
                                                       tmp_path: Path) -> None:
    """kube-system/cilium-config and the cilium DaemonSet, read with a GET each: the cilium: block."""
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "cilium", "namespace": "kube-system"},
          "spec": {"selector": {"matchLabels": {"k8s-app": "cilium"}},
                   "template": {"metadata": {"labels": {"k8s-app": "cilium"}}, "spec": {"containers": [
                       {"name": "cilium-agent", "image": "quay.io/cilium/cilium:v1.19.3"}]}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cilium-config", "namespace": "kube-system"},
          "data": {"cluster-name": "eks-east", "enable-policy": "always"}}
    kube_cluster.apply(cm, ds)
    try:
        code, out, err = run("import", "--kubeconfig", str(kube_cluster.kubeconfig), "--cluster-name", "eks",
                             "-o", str(tmp_path / "live.yaml"))
        assert (code, err) == (0, ""), out
        text = (tmp_path / "live.yaml").read_text()
        block = yaml.safe_load(text)["clusters"][0]["cilium"]
        assert block == {"version": "1.19.3", "policyEnforcement": "always", "clusterName": "eks-east",
                         "kubeAPIServer": "world"}
        assert "could not read" not in out
    finally:
        kube_cluster.kubectl("delete", "-n", "kube-system", "configmap/cilium-config", "daemonset/cilium",
                             "--wait=false")


def test_drift_is_clean_against_the_nodes_it_was_imported_from(kube_cluster: Cluster, eks: dict[str, Any]) -> None:
    code, out, err = run("drift", INV, "--kubeconfig", str(kube_cluster.kubeconfig))
    assert (code, err) == (0, "")
    assert out == (f"drift of cluster eks against live:{kube_cluster.server}: 11 nodes in 3 zones compared "
                   "with 7 pools in 3 zones\n\nok: 0 errors, 0 warnings in 0 workloads\n")


def test_check_live_sees_the_pods_where_the_scheduler_bound_them(kube_cluster: Cluster,
                                                                  eks: dict[str, Any]) -> None:
    # The generated placement held: every pod on a GPU node of us-east-1a.
    assert set(eks["pods"].values()) <= {"ip-10-0-1-41.ec2.internal", "ip-10-0-1-42.ec2.internal"}, eks["pods"]
    code, out, err = run("check", INV, "--live", "--kubeconfig", str(kube_cluster.kubeconfig))
    assert (code, err) == (0, ""), out
    assert out.startswith(f"live check of cluster eks against live:{kube_cluster.server}: 1 training job(s) "
                          "with 5 pod(s) on 11 nodes; 4 network policies in scope compared with 4 generated; "
                          # the test server installs no ClusterNetworkPolicy CRD: said, not an error
                          "not served by the cluster: clusternetworkpolicies.policy.networking.k8s.io\n")
    assert ("PyTorchJob/ml-demo/train (cluster eks): colocated, schedulable\n"
            "  master x1 (1 GPU/pod): us-east-1a\n  worker x4 (1 GPU/pod): us-east-1a\n") in out
    # Online and offline agree: the recorded export of the same cluster gives the same report.
    online = json.loads(run("check", INV, "--live", "--kubeconfig", str(kube_cluster.kubeconfig),
                            "--format", "json")[1])
    offline = json.loads(run("check", INV, "--live", "--from-file", OK, "--format", "json")[1])
    assert online["findings"] == offline["findings"] == []
    assert online["workloads"] == offline["workloads"]


def test_check_live_reports_what_was_changed_in_the_server(kube_cluster: Cluster, eks: dict[str, Any]) -> None:
    """The incident of live-broken.json, made with API calls: the job's policy edited by hand, a
    boundary policy deleted, a debugging policy applied, a worker moved to us-east-1b, one more
    worker asking for more GPUs than any node has. The scheduler binds and refuses for real."""
    cnp = kube_cluster.get("ciliumnetworkpolicy", "-n", NS, "topogate-train")
    ingress = cnp["spec"]["ingress"]  # type: ignore[index]
    patch = [{"op": "remove", "path": f"/spec/ingress/{len(ingress) - 1}"}]
    kube_cluster.kubectl("patch", "ciliumnetworkpolicy", "-n", NS, "topogate-train", "--type=json",
                         "-p", json.dumps(patch))
    kube_cluster.kubectl("delete", "ciliumclusterwidenetworkpolicy", "topogate-network-zone-us-east-1c")
    debug = [p for p in _items(BROKEN, "CiliumNetworkPolicy") if p["metadata"]["name"] == "allow-notebook-debug"]
    worker = _pods_of(eks["job"], eks["uid"])[-1]
    moved, greedy = copy.deepcopy(worker), copy.deepcopy(worker)
    moved["metadata"]["name"], greedy["metadata"]["name"] = "train-worker-4", "train-worker-5"
    term = moved["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    term["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] = ["us-east-1b"]
    greedy["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 16}}
    _create(kube_cluster, [*debug, moved, greedy])
    where = wait_for("train-worker-4 to be bound", lambda: _node_of(kube_cluster, "train-worker-4"))
    assert where in ("ip-10-0-2-41.ec2.internal", "ip-10-0-2-42.ec2.internal")

    def refused() -> str:
        status: dict[str, Any] = kube_cluster.get("pod", "-n", NS, "train-worker-5")["status"]  # type: ignore[assignment]
        cond = [c for c in status.get("conditions", []) if c["type"] == "PodScheduled"]
        return str(cond[0]["message"]) if cond and cond[0].get("reason") == "Unschedulable" else ""

    scheduler_says = wait_for("train-worker-5 to be marked Unschedulable", refused)
    try:
        code, out, _ = run("check", INV, "--live", "--kubeconfig", str(kube_cluster.kubeconfig), "--format", "json")
        assert code == 1
        assert _live_findings(out) == [
            ("TG209", "CiliumClusterwideNetworkPolicy/topogate-network-zone-us-east-1c"),
            ("TG206", "PyTorchJob/ml-demo/train"),
            ("TG207", "PyTorchJob/ml-demo/train"),
            ("TG209", "CiliumNetworkPolicy/ml-demo/topogate-train"),
            ("TG208", "CiliumNetworkPolicy/ml-demo/allow-notebook-debug"),
        ]
        msg = {(f["rule"], f["object"]): f["message"] for f in json.loads(out)["findings"]}
        assert f"worker train-worker-4 -> {where} -> us-east-1b" in msg[("TG206", "PyTorchJob/ml-demo/train")]
        # The real scheduler's own words, as it wrote them into the pod's status.
        assert f"worker train-worker-5: {scheduler_says}" in msg[("TG207", "PyTorchJob/ml-demo/train")]
        assert "0/11 nodes are available" in scheduler_says and "Insufficient nvidia.com/gpu" in scheduler_says
        # and the analysis of the objects as the server holds them: the hand-applied policy's
        # egressDeny denies DNS (found at live:<server>, the API has no lines)
        rules = {(f["rule"], f["file"]) for f in json.loads(out)["findings"]}
        assert ("TG108", f"live:{kube_cluster.server}") in rules, rules
    finally:
        kube_cluster.kubectl("delete", "pod", "-n", NS, "train-worker-4", "train-worker-5",
                             "--grace-period=0", "--force")
        kube_cluster.kubectl("delete", "ciliumnetworkpolicy", "-n", NS, "allow-notebook-debug", "topogate-train")
        _create(kube_cluster, [p for p in _items(OK, "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy")
                               if p["metadata"]["name"] in ("topogate-train", "topogate-network-zone-us-east-1c")])


def test_the_documented_cluster_role_is_enough(kube_cluster: Cluster, eks: dict[str, Any], tmp_path: Path) -> None:
    """examples/rbac-topogate-live.yaml as written, its ServiceAccount's token: all three commands
    work with nothing more (list only), and a role with nodes alone fails on pods with 77."""
    kube_cluster.ensure_namespace("topogate")
    kube_cluster.kubectl("apply", "-f", str(REPO / "examples" / "rbac-topogate-live.yaml"))
    as_sa = _kubeconfig(kube_cluster, tmp_path / "sa.kubeconfig", "topogate-live",
                        _token_of(kube_cluster, "topogate", "topogate-live"))
    assert run("import", "--kubeconfig", str(as_sa), "-o", str(tmp_path / "i.yaml"))[0] == 0
    assert run("drift", INV, "--kubeconfig", str(as_sa))[0] == 0
    code, out, err = run("check", INV, "--live", "--kubeconfig", str(as_sa))
    assert (code, err) == (0, ""), out

    kube_cluster.apply(
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "nodes-only"},
         "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
         "metadata": {"name": "nodes-only"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "nodes-only"},
         "subjects": [{"kind": "ServiceAccount", "name": "nodes-only", "namespace": "topogate"}]})
    token = _token_of(kube_cluster, "topogate", "nodes-only")
    partial = _kubeconfig(kube_cluster, tmp_path / "partial.kubeconfig", "nodes-only", token)
    assert run("drift", INV, "--kubeconfig", str(partial))[0] == 0
    code, out, err = run("check", INV, "--live", "--kubeconfig", str(partial))
    assert (code, out) == (77, "")
    assert err == ('topogate check --live: access denied listing pods (403 Forbidden) (pods is forbidden: '
                   'User "system:serviceaccount:topogate:nodes-only" cannot list resource "pods" in API '
                   'group "" at the cluster scope); bind the read-only ClusterRole in '
                   'examples/rbac-topogate-live.yaml to this user or service account [exit 77]\n')
    assert token not in err


def test_a_service_account_without_permissions_is_77(kube_cluster: Cluster, eks: dict[str, Any],
                                                     tmp_path: Path) -> None:
    token = _token_of(kube_cluster, "topogate", "no-rights")
    kc = _kubeconfig(kube_cluster, tmp_path / "kc", "no-rights", token)
    for args in (("import", "-o", str(tmp_path / "i.yaml")), ("drift", INV), ("check", INV, "--live")):
        code, out, err = run(*args, "--kubeconfig", str(kc))
        assert (code, out) == (77, ""), (args, err)
        assert err.count("\n") == 1 and "(403 Forbidden)" in err and token not in err
        assert 'User "system:serviceaccount:topogate:no-rights" cannot list resource "nodes"' in err
    assert not (tmp_path / "i.yaml").exists()


def test_a_wrong_token_is_78_and_never_printed(kube_cluster: Cluster, eks: dict[str, Any], tmp_path: Path) -> None:
    wrong = "0123456789abcdef" * 3
    kc = _kubeconfig(kube_cluster, tmp_path / "kc", "someone", wrong)
    code, out, err = run("drift", INV, "--kubeconfig", str(kc))
    assert (code, out) == (78, "")
    assert err == (f"topogate drift: the API server at {kube_cluster.server} rejected the credentials while "
                   "listing nodes (401 Unauthorized) (Unauthorized); refresh the kubeconfig token or the exec "
                   "plugin's login, or the service account token [exit 78]\n")


def test_a_server_certificate_the_kubeconfig_does_not_trust_is_78(kube_cluster: Cluster, eks: dict[str, Any],
                                                                   tmp_path: Path) -> None:
    """Another CA than the one that signed the server's certificate: verification fails, which
    running again does not change (a configuration error, not a temporary one)."""
    other = Pki.create(tmp_path / "other-ca")
    kc = _kubeconfig(kube_cluster, tmp_path / "kc", "admin", kube_cluster.token, ca=other.ca)
    for args in (("import", "-o", str(tmp_path / "i.yaml")), ("drift", INV), ("check", INV, "--live")):
        code, out, err = run(*args, "--kubeconfig", str(kc))
        assert (code, out) == (78, ""), (args, err)
        assert "presented a certificate the kubeconfig does not trust" in err and err.count("\n") == 1
        assert kube_cluster.token not in err


def test_an_address_that_is_not_an_api_server_root_is_78(kube_cluster: Cluster, eks: dict[str, Any],
                                                          tmp_path: Path) -> None:
    # The real server, a path below it: /not-the-api/api/v1/nodes is 404 there.
    kc = _kubeconfig(kube_cluster, tmp_path / "kc", "admin", kube_cluster.token,
                     server=f"{kube_cluster.server}/not-the-api")
    code, out, err = run("drift", INV, "--kubeconfig", str(kc))
    assert (code, out) == (78, "")
    assert "has no list of nodes (404 Not Found)" in err and "fix the kubeconfig's cluster server" in err


def test_insecure_skip_tls_verify_prints_no_urllib3_warnings(kube_cluster: Cluster, eks: dict[str, Any],
                                                             tmp_path: Path) -> None:
    """The kubeconfig's own choice, followed silently as kubectl does: no two-line
    InsecureRequestWarning per request on stderr (a separate process: warnings go to its stderr)."""
    kc = tmp_path / "insecure.kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": kube_cluster.server, "insecure-skip-tls-verify": True}}],
        "users": [{"name": "u", "user": {"token": kube_cluster.token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}], "current-context": "c"}))
    exe = REPO / ".venv" / "bin" / "topogate"
    proc = subprocess.run([str(exe), "drift", INV, "--kubeconfig", str(kc), "--chunk-size", "2"],
                          capture_output=True, text=True, timeout=120, cwd=REPO,
                          env={**os.environ, "PYTHONWARNINGS": "default"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.startswith(f"drift of cluster eks against live:{kube_cluster.server}: 11 nodes")


def test_in_cluster_config_with_a_service_account_token(kube_cluster: Cluster, eks: dict[str, Any], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """No kubeconfig anywhere, KUBERNETES_SERVICE_HOST set (the CronJob of
    examples/cronjob-drift.yaml): the pod's token and ca.crt, here a real ServiceAccount token
    and the CA that signed the server's certificate."""
    import kubernetes.config.incluster_config as incluster

    kube_cluster.ensure_namespace("topogate")
    kube_cluster.kubectl("apply", "-f", str(REPO / "examples" / "rbac-topogate-live.yaml"))
    token = tmp_path / "token"
    token.write_text(_token_of(kube_cluster, "topogate", "topogate-live"))
    monkeypatch.setattr(incluster, "SERVICE_TOKEN_FILENAME", str(token))
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(kube_cluster.pki.ca))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    host, port = kube_cluster.server.removeprefix("https://").rsplit(":", 1)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    code, out, err = run("drift", INV)
    assert (code, err) == (0, ""), out
    assert out.startswith(f"drift of cluster eks against live:{kube_cluster.server}: 11 nodes")
    # and a ca.crt that holds no certificate is a configuration error, not ignored
    monkeypatch.setattr(incluster, "SERVICE_CERT_FILENAME", str(REPO / "README.md"))
    code, out, err = run("drift", INV)
    assert (code, out) == (78, "") and err.count("\n") == 1 and "TLS with the API server" in err


def test_drift_a_week_later(kube_cluster: Cluster, eks: dict[str, Any]) -> None:
    """The recorded drift (eks-nodes-drifted.json) made in the server: the nodes replaced by
    the drifted ones; the original ones are put back afterwards."""
    drifted = _items(DRIFTED, "Node")
    kube_cluster.kubectl("delete", "nodes", *eks["nodes"])
    _create(kube_cluster, drifted)
    try:
        code, out, _ = run("drift", INV, "--kubeconfig", str(kube_cluster.kubeconfig), "--format", "json")
        offline = run("drift", INV, "--from-file", DRIFTED, "--format", "json")[1]
        assert code == 1
        assert json.loads(out)["findings"] == json.loads(offline)["findings"]
        assert [f["rule"] for f in json.loads(out)["findings"]] == ["TG201", "TG205", "TG204", "TG202",
                                                                   "TG203", "TG203"]
    finally:
        kube_cluster.kubectl("delete", "nodes", *(n["metadata"]["name"] for n in drifted))
        _create(kube_cluster, _items(NODES, "Node"))
