"""`check` understands Kueue: the generated multi example, the Kueue objects it reads, and what
Kueue does with jobs it cannot hold together (docs/kueue.md records the Kueue source behind it).

The rule fixtures (fixtures/rules/TG30*) cover each finding once; here the cases between them.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import invoke

from topogate.check.run import run_check

ROOT = Path(__file__).resolve().parents[2]
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
CANON = ROOT / "fixtures" / "rules" / "TG305-kueue-podset-left-out" / "pass"
ZONE = "topology.kubernetes.io/zone"
REQ = "kueue.x-k8s.io/podset-required-topology"
GRP = "kueue.x-k8s.io/podset-group-name"


@pytest.fixture
def multi_out(tmp_path: Path) -> Iterator[Path]:
    """`topogate generate` of the multi example, as a user runs it (outside the checkout: the
    tests edit it by hand, and a hand-edited file git does not track is not read in one)."""
    out = tmp_path / "out"
    r = invoke("generate", str(MULTI), "-o", str(out))
    assert r.exit_code == 0, r.output
    yield out
    shutil.rmtree(out)


def check_json(*args: str) -> tuple[int, dict[str, Any]]:
    r = invoke("check", *args, "--format", "json")
    return r.exit_code, json.loads(r.stdout)


def test_generated_multi_checks_clean_with_kueue(multi_out: Path) -> None:
    # The documented pipeline: generate, then check the rendered tree (drift included).
    # The TrainJob's runtime is installed by the platform team: passed beside the tree.
    runtime = MULTI.parent / "platform" / "torch-distributed.yaml"
    code, data = check_json(str(MULTI), "--rendered", str(multi_out), str(multi_out / "clusters"),
                            str(runtime))
    assert (code, data["findings"]) == (0, [])
    jobs = {j["object"]: j for j in data["workloads"]}
    assert all(j["colocated"] and j["schedulable"] for j in jobs.values())
    explain = invoke("explain", str(MULTI), "llama-ft", str(multi_out / "clusters"),
                     "--format", "json")
    assert explain.exit_code == 0
    kueue = json.loads(explain.stdout)["kueue"]
    assert "LocalQueue ml-team/training -> ClusterQueue training" in kueue
    assert "PodSet group llama-ft-pods" in kueue and "the whole job in one zone" in kueue


def _without_pod_affinity(overlay: Path) -> None:
    patch = overlay / "placement-patch.yaml"
    ops = yaml.safe_load(patch.read_text())
    kept = [op for op in ops if not op["path"].endswith("/affinity/podAffinity")]
    assert len(kept) == len(ops) - 2  # Master and Worker each had one
    patch.write_text(yaml.safe_dump(kept, sort_keys=False))


def _but_absent(data: dict[str, Any]) -> list[dict[str, Any]]:
    """The findings other than TG008: one overlay is checked, so gpu-east's other job is absent."""
    return [f for f in data["findings"] if f["rule"] != "TG008"]


def test_kueue_alone_holds_llama_ft_together(multi_out: Path) -> None:
    # Without the follow podAffinity, only Kueue's PodSet group keeps Master and Worker in one
    # of the network zone's two zones: with the Kueue objects among the PATHs, still colocated.
    east = multi_out / "clusters" / "gpu-east"
    overlay = east / "workloads" / "ml-team" / "llama-ft"
    _without_pod_affinity(overlay)
    code, data = check_json(str(MULTI), str(overlay), str(east / "kueue"))
    assert (code, _but_absent(data)) == (0, [])
    (job,) = data["workloads"]
    assert job["colocated"] is True
    # Without the Kueue objects it cannot be verified: a warning, and the split is reported.
    code, data = check_json(str(MULTI), str(overlay))
    assert code == 1 and {f["rule"] for f in _but_absent(data)} == {"TG102", "TG307"}
    # Without the group, Kueue fits each pod set into a zone of its own: TG305 at the Worker.
    patch = overlay / "placement-patch.yaml"
    ops = [op for op in yaml.safe_load(patch.read_text()) if not op["path"].endswith("podset-group-name")]
    for op in ops:
        if isinstance(op.get("value"), dict):
            op["value"].pop(GRP, None)
    patch.write_text(yaml.safe_dump(ops, sort_keys=False))
    code, data = check_json(str(MULTI), str(overlay), str(east / "kueue"))
    rules = {f["rule"] for f in _but_absent(data)}
    assert code == 1 and rules == {"TG102", "TG305"}, data["findings"]
    left = next(f for f in _but_absent(data) if f["rule"] == "TG305")
    assert "Worker" in left["message"]


def _canon() -> list[dict[str, Any]]:
    return list(yaml.safe_load_all((CANON / "manifests.yaml").read_text()))


def _write(tmp: Path, docs: list[dict[str, Any]], kueue: str | None = None) -> list[str]:
    (tmp / "job.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    paths = [str(tmp / "job.yaml")]
    if kueue is not None:
        (tmp / "kueue.yaml").write_text(kueue)
        paths.append(str(tmp / "kueue.yaml"))
    return paths


def _templates(job: dict[str, Any]) -> list[dict[str, Any]]:
    return [r["template"] for r in job["spec"]["pytorchReplicaSpecs"].values()]


def test_canonical_case_is_colocated_only_through_kueue(tmp_path: Path) -> None:
    kueue = (CANON / "kueue.yaml").read_text()
    out = run_check(str(LAB), _write(tmp_path, _canon(), kueue))
    (job,) = out.result.jobs
    assert job.colocated and out.result.findings == ()
    assert job.kueue.endswith("the whole job in one zone")
    # The same job with the annotations gone: the Master may land in zone-b.
    docs = _canon()
    for t in _templates(docs[0]):
        del t["metadata"]["annotations"]
    out = run_check(str(LAB), _write(tmp_path, docs, kueue))
    assert {f.rule for f in out.result.findings} == {"TG102", "TG305"}


def test_default_local_queue_takes_jobs_without_a_queue_label(tmp_path: Path) -> None:
    # Kueue files a job without queue-name under the namespace's LocalQueue "default".
    docs = _canon()
    del docs[0]["metadata"]["labels"]
    kueue = (CANON / "kueue.yaml").read_text().replace("  name: training\n  namespace: ml-demo",
                                                       "  name: default\n  namespace: ml-demo")
    out = run_check(str(LAB), _write(tmp_path, docs, kueue))
    (job,) = out.result.jobs
    assert job.colocated and out.result.findings == (), out.result.findings
    assert "LocalQueue ml-demo/default" in job.kueue


def test_level_below_the_zone_holds_and_above_the_zone_does_not(tmp_path: Path) -> None:
    kueue = (CANON / "kueue.yaml").read_text().replace(
        f"  - nodeLabel: {ZONE}\n", f"  - nodeLabel: topology.kubernetes.io/region\n  - nodeLabel: {ZONE}\n"
                                    "  - nodeLabel: example.com/rack\n")
    for level, colocated in (("example.com/rack", True), ("kubernetes.io/hostname", True),
                             ("topology.kubernetes.io/region", False)):
        docs = _canon()
        for t in _templates(docs[0]):
            t["metadata"]["annotations"][REQ] = level
        out = run_check(str(LAB), _write(tmp_path, docs, kueue))
        (job,) = out.result.jobs
        assert job.colocated is colocated, (level, out.result.findings)
        if not colocated:
            loose = [f for f in out.result.findings if f.rule == "TG304"]
            assert loose and "does not nest inside one" in loose[0].message


def test_finding_points_at_the_annotation_line(tmp_path: Path) -> None:
    out = run_check(str(LAB), [str(ROOT / "fixtures/rules/TG305-kueue-podset-left-out/fail/manifests.yaml"),
                               str(CANON / "kueue.yaml")])
    (f,) = [f for f in out.result.findings if f.rule == "TG305"]
    lines = Path(f.file).read_text().splitlines()
    assert REQ in lines[f.line - 1]
    # the Worker's annotation, not the Master's
    assert "Worker:" in "\n".join(lines[:f.line]).rsplit("Master:", 1)[1]


def _jobset(replicated: list[tuple[str, int]], pin: bool) -> dict[str, Any]:
    rjobs = []
    for name, pods in replicated:
        spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x"}], "restartPolicy": "Never",
                                "tolerations": [{"key": "gpu", "operator": "Exists"}]}
        if pin:
            spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [
                    {"key": ZONE, "operator": "In", "values": ["zone-a"]}]}]}}}
        rjobs.append({"name": name, "replicas": 1, "template": {"spec": {
            "parallelism": pods, "completions": pods, "template": {
                "metadata": {"labels": {"app": "train"}, "annotations": {REQ: ZONE}}, "spec": spec}}}})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": "train", "namespace": "ml-demo",
                         "labels": {"kueue.x-k8s.io/queue-name": "training"}},
            "spec": {"replicatedJobs": rjobs}}


def test_three_pod_sets_cannot_be_grouped_unless_pinned(tmp_path: Path) -> None:
    kueue = (CANON / "kueue.yaml").read_text()
    policy = _canon()[1]
    shape = [("driver", 1), ("workers", 2), ("evaluator", 1)]
    out = run_check(str(LAB), _write(tmp_path, [_jobset(shape, pin=False), policy], kueue))
    left = [f for f in out.result.findings if f.rule == "TG305"]
    assert len(left) == 1 and "Kueue groups only two pod sets" in left[0].message
    assert "placement: pin" in left[0].message
    # What docs/kueue.md generates for such a job: required topology on each, pinned by affinity.
    out = run_check(str(LAB), _write(tmp_path, [_jobset(shape, pin=True), policy], kueue))
    (job,) = out.result.jobs
    assert job.colocated and out.result.findings == (), out.result.findings


def test_docs_show_real_check_output(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # the command in the doc is run from the repository's root
    text = (ROOT / "docs" / "kueue.md").read_text()
    shown = text.split("<!-- kueue-check -->\n```text\n", 1)[1].split("```", 1)[0]
    command, _, expected = shown.partition("\n")
    args = command.removeprefix("$ topogate ").split()
    r = invoke(*args, "--format", "text", catch_exceptions=False)
    assert r.exit_code == 0
    assert r.stdout == expected


def test_job_without_pod_sets_in_a_queue_is_no_crash(tmp_path: Path) -> None:
    docs = _canon()
    docs[0]["spec"]["pytorchReplicaSpecs"] = {}
    out = run_check(str(LAB), _write(tmp_path, docs, (CANON / "kueue.yaml").read_text()))
    assert not [f for f in out.result.findings if f.rule.startswith("TG3")]


def test_flavors_decide_the_pools_kueue_can_use(tmp_path: Path) -> None:
    # Kueue adds a flavor's tolerations and nodeLabels to the pods it admits on it: pods that do
    # not tolerate the GPU taint themselves still run on the GPU pool's flavor.
    docs = _canon()
    for t in _templates(docs[0]):
        del t["spec"]["tolerations"]
    kueue = (CANON / "kueue.yaml").read_text()
    out = run_check(str(LAB), _write(tmp_path, docs, kueue))
    (job,) = out.result.jobs
    assert job.colocated and job.schedulable and out.result.findings == (), out.result.findings
    assert job.zones == ("zone-a",)
    # Judged without Kueue (its objects not given), the Workers tolerate nothing: Pending.
    out = run_check(str(LAB), _write(tmp_path, docs))
    assert {"TG103", "TG307"} <= {f.rule for f in out.result.findings}
    # A queue with only the GPU flavor: the Master can use no other pool, and explain says why.
    only_gpu = kueue.replace("""    - name: zone-b-cpu
      resources:
      - {name: cpu, nominalQuota: '64'}
      - {name: memory, nominalQuota: 256Gi}
      - {name: nvidia.com/gpu, nominalQuota: '0'}
""", "")
    assert only_gpu != kueue
    out = run_check(str(LAB), _write(tmp_path, _canon(), only_gpu))
    (job,) = out.result.jobs
    master = next(g for g in job.groups if g.name == "Master")
    assert master.zones == ("zone-a",)
    assert [p.reason for p in master.pools if p.zone == "zone-b"] == [
        "no flavor of the job's ClusterQueue selects this pool"]


def test_queue_label_on_the_pod_template_is_named(tmp_path: Path) -> None:
    # Kueue reads the queue from the job object; on a replica template it does nothing.
    docs = _canon()
    del docs[0]["metadata"]["labels"]
    _templates(docs[0])[1]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "training"
    out = run_check(str(LAB), _write(tmp_path, docs, (CANON / "kueue.yaml").read_text()))
    (f,) = [f for f in out.result.findings if f.rule == "TG301"]
    assert "on the pod template of Worker" in f.message


def test_group_members_must_share_a_flavor(tmp_path: Path) -> None:
    # A PodSet group gets one flavor: a Master held to the CPU pool and GPU Workers have none in
    # common, so Kueue never admits the job (each alone would fit a flavor of its own).
    docs = _canon()
    _templates(docs[0])[0]["spec"]["nodeSelector"] = {"node-type": "cpu"}
    out = run_check(str(LAB), _write(tmp_path, docs, (CANON / "kueue.yaml").read_text()))
    (job,) = out.result.jobs
    assert not job.schedulable
    assert any("one flavor" in r for r in job.unschedulable_reasons)
    assert "TG103" in {f.rule for f in out.result.findings}


def test_unschedulable_job_in_a_queue_says_what_kueue_does(tmp_path: Path) -> None:
    # Zone anti-affinity between more workers than zones: no placement runs every pod. Kueue's
    # admission does not evaluate pod anti-affinity, so TG103 must not promise that admission
    # keeps the GPUs free.
    docs = _canon()
    worker = docs[0]["spec"]["pytorchReplicaSpecs"]["Worker"]
    labels = worker["template"]["metadata"].setdefault("labels", {})
    labels["spread"] = "apart"
    worker["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"spread": "apart"}}, "topologyKey": ZONE}]}}
    out = run_check(str(LAB), _write(tmp_path, docs, (CANON / "kueue.yaml").read_text()))
    msgs = [f.message for f in out.result.findings if f.rule == "TG103"]
    assert msgs, out.result.findings
    assert "Kueue can admit it" in msgs[0] and "waitForPodsReady" in msgs[0]
    assert "The pods that do start hold their GPUs" not in msgs[0]
    # The same job outside Kueue keeps the plain consequence.
    del docs[0]["metadata"]["labels"]
    out = run_check(str(LAB), _write(tmp_path, docs))
    plain = [f.message for f in out.result.findings if f.rule == "TG103"]
    assert plain and "The pods that do start hold their GPUs" in plain[0]
