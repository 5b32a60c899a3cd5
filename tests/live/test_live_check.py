"""`topogate check --live` on recorded snapshots (`--from-file`).

The same commands against the real kube-apiserver and kube-scheduler, with the recorded cluster
created in it through the API: tests/oracles/test_cluster_live.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from live_support import LIVE, REPO, run

from topogate.live.running import first_difference, job_key
from topogate.sources.inventory import load_inventory

INV = "fixtures/live/eks/inventory.yaml"
BROKEN = "fixtures/live/eks/live-broken.json"
OK = "fixtures/live/eks/live-ok.json"
EXPECTED = [  # (rule, line, object)
    ("TG209", 52, "CiliumClusterwideNetworkPolicy/topogate-network-zone-us-east-1c"),
    ("TG206", 55, "PyTorchJob/ml-demo/train"),
    ("TG207", 55, "PyTorchJob/ml-demo/train"),
    ("TG209", 55, "CiliumNetworkPolicy/ml-demo/topogate-train"),
    ("TG208", 2723, "CiliumNetworkPolicy/ml-demo/allow-notebook-debug"),  # the item's own line
]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def findings(out: str) -> list[tuple[str, int, str]]:
    """The live family's findings (TG206-TG209)."""
    return [(f["rule"], f["line"], f["object"]) for f in json.loads(out)["findings"]
            if f["rule"] in ("TG206", "TG207", "TG208", "TG209")]


def test_what_runs_as_generated_is_clean() -> None:
    code, out, err = run("check", INV, "--live", "--from-file", OK)
    assert (code, err) == (0, "")
    assert out == (f"live check of cluster eks against {OK}: 1 training job(s) with 5 pod(s) on 11 "
                   "nodes; 4 network policies in scope compared with 4 generated\n\n"
                   "PyTorchJob/ml-demo/train (cluster eks): colocated, schedulable\n"
                   "  master x1 (1 GPU/pod): us-east-1a\n  worker x4 (1 GPU/pod): us-east-1a\n\n"
                   "ok: 0 errors, 0 warnings in 1 workload\n")


def test_split_pending_and_policies_that_differ() -> None:
    code, out, _ = run("check", INV, "--live", "--from-file", BROKEN, "--format", "json")
    assert code == 1
    assert findings(out) == EXPECTED
    lines = (REPO / INV).read_text().splitlines()
    assert lines[55 - 1] == "- name: train"  # the inventory workload of the split job
    assert lines[52 - 1].strip() == "- {name: us-east-1c, zones: [us-east-1c]}"
    msg = {(f["rule"], f["object"]): f["message"] for f in json.loads(out)["findings"]}
    assert msg[("TG206", "PyTorchJob/ml-demo/train")].splitlines() == [
        "PyTorchJob/ml-demo/train runs split across 2 zones now (us-east-1a: 2, us-east-1b: 2); "
        "pod -> node -> zone:",
        "master train-master-0 -> ip-10-0-1-41.ec2.internal -> us-east-1a",
        "worker train-worker-0 -> ip-10-0-1-41.ec2.internal -> us-east-1a",
        "worker train-worker-1 -> ip-10-0-2-41.ec2.internal -> us-east-1b",
        "worker train-worker-2 -> ip-10-0-2-42.ec2.internal -> us-east-1b",
    ]
    assert "worker train-worker-3: 0/11 nodes are available:" in msg[("TG207", "PyTorchJob/ml-demo/train")]
    assert "at spec.ingress (2 items generated, 1 in the cluster)" in \
        msg[("TG209", "CiliumNetworkPolicy/ml-demo/topogate-train")]
    (w,) = json.loads(out)["workloads"]  # the job as the reporters know it: zones it runs in now
    assert (w["object"], w["colocated"], w["schedulable"]) == ("PyTorchJob/ml-demo/train", False, False)
    assert {g["name"]: g["zones"] for g in w["groups"]} == {
        "master": ["us-east-1a"], "worker": ["us-east-1a", "us-east-1b"]}
    # the repository's analysis, run on the objects as the cluster holds them, says why: the
    # hand-applied policy denies NCCL and DNS, and nothing pins the job to one zone
    analysis = {(f["rule"], f["file"]) for f in json.loads(out)["findings"]}
    assert {("TG101", BROKEN), ("TG102", BROKEN), ("TG108", BROKEN)} <= analysis
    assert "TG103" not in {r for r, _ in analysis}  # its toleration lets it onto the GPU nodes
    # kube-system's NetworkPolicy: no training job there, not reported
    assert "default-deny-ingress" not in out


def test_strict_fails_on_the_unmanaged_policy_warning_alone(tmp_path: Path) -> None:
    snap = json.loads((REPO / OK).read_text())
    # harmless: one more ingress on the job's pods (TensorBoard), from the job's own pods only;
    # from any other pod (a notebook, which may run in any zone) it would open the boundary
    snap["items"].append({
        "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "allow-tensorboard", "namespace": "ml-demo", "uid": "1", "generation": 1},
        "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/workload": "train"}},
                 "ingress": [{"fromEndpoints": [{"matchLabels": {"k8s:topogate.dev/workload": "train"}}],
                              "toPorts": [{"ports": [{"port": "6006", "protocol": "TCP"}]}]}]}})
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap))
    assert run("check", INV, "--live", "--from-file", str(f))[0] == 0
    code, out, _ = run("check", INV, "--live", "--from-file", str(f), "--strict", "--format", "json")
    assert code == 1 and [f["rule"] for f in json.loads(out)["findings"]] == ["TG208"]


def test_an_unmanaged_policy_that_admits_other_pods_opens_the_boundary(tmp_path: Path) -> None:
    # the same policy from pods app=notebook: pods the inventory does not manage, in any zone
    snap = json.loads((REPO / OK).read_text())
    snap["items"].append({
        "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "allow-tensorboard", "namespace": "ml-demo", "uid": "1", "generation": 1},
        "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/workload": "train"}},
                 "ingress": [{"fromEndpoints": [{"matchLabels": {"k8s:app": "notebook"}}],
                              "toPorts": [{"ports": [{"port": "6006", "protocol": "TCP"}]}]}]}})
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(snap))
    code, out, _ = run("check", INV, "--live", "--from-file", str(f), "--format", "json")
    got = {(x["rule"], x["severity"]) for x in json.loads(out)["findings"]}
    assert code == 1 and {("TG107", "error"), ("TG112", "error"), ("TG208", "warning")} <= got
    assert any("pods app=notebook in namespace ml-demo" in x["message"] and "6006/TCP" in x["message"]
               for x in json.loads(out)["findings"] if x["rule"] == "TG107")


@pytest.mark.parametrize(("args", "words"), [
    (("--context", "x"), "belong to --live"),
    (("--live", "fixtures/lab"), "drop the PATHs"),
    (("--live", "--from-file", OK, "--kubeconfig", "k"), "reads no cluster"),
])
def test_usage_errors(args: tuple[str, ...], words: str) -> None:
    code, _, err = run("check", INV, *args)
    assert code == 2 and words in err


def test_pods_find_their_job_by_owner_or_operator_labels() -> None:
    inv = load_inventory(LIVE / "eks" / "inventory.yaml", read_bases=False)

    def pod(labels: dict[str, str], owner: str | None = None) -> dict[str, object]:
        md: dict[str, object] = {"name": "p", "namespace": "ml", "labels": labels}
        if owner:
            md["ownerReferences"] = [{"kind": owner, "name": "j", "controller": True}]
        return {"metadata": md}

    assert job_key(pod({}, "MPIJob"), {}, inv) == ("MPIJob", "ml", "j")
    assert job_key(pod({}, "Job"), {}, inv) is None
    assert job_key(pod({"training.kubeflow.org/job-name": "m",
                        "training.kubeflow.org/operator-name": "mpi-operator"}), {}, inv) == ("MPIJob", "ml", "m")
    js = pod({"jobset.sigs.k8s.io/jobset-name": "t"})
    assert job_key(js, {}, inv) == ("JobSet", "ml", "t")
    assert job_key(js, {("ml", "t"): "TrainJob"}, inv) == ("TrainJob", "ml", "t")
    md = {"metadata": {"name": "p", "namespace": "ml-demo", "labels": {"topogate.dev/workload": "train"}}}
    assert job_key(md, {}, inv) == ("PyTorchJob", "ml-demo", "train")


def test_first_difference_names_the_path() -> None:
    assert first_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ".a[1].b (2 generated, 3 in the cluster)"
    assert first_difference({"a": 1}, {"a": 1, "z": 0}) == ".z (only in the cluster)"
    assert first_difference({"a": [1]}, {"a": [1]}) is None


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown", "junit"])
def test_every_report_format_carries_the_live_findings(fmt: str) -> None:
    code, out, _ = run("check", INV, "--live", "--from-file", BROKEN, "--format", fmt)
    assert code == 1
    for rule in ("TG206", "TG207", "TG208", "TG209"):
        assert rule in out, fmt


def test_output_file_gets_the_report_too(tmp_path: Path) -> None:
    out = tmp_path / "comment.md"
    code, stdout, _ = run("check", INV, "--live", "--from-file", BROKEN, "-o", str(out))
    assert code == 1 and "TG206" in stdout
    assert "TG206" in out.read_text() and out.read_text() != stdout


def test_findings_on_a_snapshot_file_land_on_the_objects_lines() -> None:
    # A `kubectl get -o json` file has lines too: the analysis' findings point into the job's
    # own item (its pod templates), not at the file's first line.
    _, out, _ = run("check", INV, "--live", "--from-file", BROKEN, "--format", "json")
    lines = (REPO / BROKEN).read_text().splitlines()
    hits = [f for f in json.loads(out)["findings"] if f["file"] == BROKEN]
    assert hits and all(f["line"] > 1 for f in hits)
    # TG101 at the blocked group's template, TG102 (the job as a whole) at its first group's
    blocked = [f for f in hits if f["rule"] in ("TG101", "TG102")]
    assert {f["rule"] for f in blocked} == {"TG101", "TG102"}
    assert all('"template"' in lines[f["line"] - 1] for f in blocked)


def test_live_check_runs_the_families_check_runs(tmp_path: Path) -> None:
    """check --live builds its rule context where check does (policies.context.analysed): a
    policy that opens the job to the whole cluster is TG112 here too (the live copy of the
    context once left out the open-ingress, door, not-modelled and Kueue facts)."""
    snap = json.loads((REPO / OK).read_text())
    snap["items"].append({
        "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
        "metadata": {"name": "allow-cluster", "namespace": "ml-demo"},
        "spec": {"endpointSelector": {}, "ingress": [{"fromEntities": ["cluster"]}]}})
    f = tmp_path / "live-open.json"
    f.write_text(json.dumps(snap))
    code, out, _ = run("check", INV, "--live", "--from-file", str(f), "--format", "json")
    rules = {x["rule"] for x in json.loads(out)["findings"]}
    assert code == 1 and "TG112" in rules, rules


def test_check_live_and_drift_report_through_the_one_output_path(monkeypatch: pytest.MonkeyPatch,
                                                                  tmp_path: Path) -> None:
    """check, check --live and drift print (and write -o) through cli.output.emit, so each
    gets the CI-log escaping, the redaction and the atomic -o write."""
    from topogate.cli import output

    calls: list[str] = []
    real = output.emit

    def spy(result, fmt, **kw):  # type: ignore[no-untyped-def]
        calls.append(fmt)
        return real(result, fmt, **kw)

    monkeypatch.setattr(output, "emit", spy)
    import topogate.cli.check_live as check_live_mod

    monkeypatch.setattr(check_live_mod, "emit", spy)
    report = tmp_path / "live.md"
    assert run("check", INV, "--live", "--from-file", OK, "-o", str(report))[0] == 0
    assert "topogate check passed" in report.read_text()
    run("drift", INV, "--from-file", str(LIVE / "eks-nodes.json"))
    run("check", "fixtures/lab/inventory.yaml", "fixtures/incident/broken")
    assert calls == ["text", "text", "text"]
