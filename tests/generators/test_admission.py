"""The generated ValidatingAdmissionPolicy, evaluated with a real CEL engine: every job topogate
generates is admitted (built with the real kubectl kustomize), the README's incident and
mutations of generated jobs are rejected with a message naming the replica and the fix.

The API server's part (matching, variables, validations, failurePolicy) is restated in
tests/cel_support.py; the CEL is evaluated by `common-expression-language`. The policy and
binding themselves are validated with kubernetes-validate (Kubernetes 1.37 schemas, strict).
"""

from __future__ import annotations

import copy
import dataclasses
import shutil
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml
from cel_support import admit, evaluate, matches
from conftest import FIXTURES, kustomize_build

from topogate.generators import admission, render_tree
from topogate.inventory.model import AdmissionConfig, Inventory, KueueConfig
from topogate.sources.inventory import load_inventory

JOB_KINDS = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob")
NZ = "topogate.dev/network-zone"
ZL = "topology.kubernetes.io/zone"
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def _render(inv: Inventory, out: Path) -> None:
    for rel, data in render_tree(inv, str(out)).items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _copy(tmp: Path, case: str) -> Inventory:
    shutil.copytree(FIXTURES / case, tmp / case)
    return load_inventory(str(tmp / case / "inventory.yaml"))


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, Path]:
    tmp = tmp_path_factory.mktemp("adm")
    inv = _copy(tmp, "multi")
    _render(inv, tmp / "multi" / "out")
    return inv, tmp / "multi" / "out"


def _policy(out: Path, cluster: str) -> tuple[dict[str, Any], dict[str, Any]]:
    objs = kustomize_build(out / "clusters" / cluster / "admission")
    (pol,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"]
    (bnd,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    return pol, bnd


def _managed(bnd: dict[str, Any]) -> list[str]:
    (expr,) = bnd["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"]
    assert expr["key"] == "kubernetes.io/metadata.name" and expr["operator"] == "In"
    return list(expr["values"])


def _jobs(out: Path, cluster: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in kustomize_build(out / "clusters" / cluster)
            if o["kind"] in JOB_KINDS}


def test_policy_and_binding_are_valid_kubernetes(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    for c in inv.clusters:
        pol, bnd = _policy(out, c.name)
        for o in (pol, bnd):
            kubernetes_validate.validate(o, "1.37.0", strict=True)
        assert bnd["spec"]["policyName"] == pol["metadata"]["name"]
        assert pol["spec"]["failurePolicy"] == "Fail"
        assert _managed(bnd) == sorted({w.namespace for w in inv.workloads_of(c.name)})
        # The cluster root applies them.
        root = {(o["kind"], o["metadata"]["name"]) for o in kustomize_build(out / "clusters" / c.name)}
        assert {(o["kind"], o["metadata"]["name"]) for o in (pol, bnd)} <= root
    # validationActions from the inventory: enforce in gpu-east, roll out in gpu-west.
    assert _policy(out, "gpu-east")[1]["spec"]["validationActions"] == ["Deny"]
    assert _policy(out, "gpu-west")[1]["spec"]["validationActions"] == ["Warn", "Audit"]


def test_the_policy_matches_every_training_kind(multi: tuple[Inventory, Path]) -> None:
    _, out = multi
    pol, _ = _policy(out, "gpu-east")
    rules = {(g, r) for rule in pol["spec"]["matchConstraints"]["resourceRules"]
             for g in rule["apiGroups"] for r in rule["resources"]}
    assert rules == {("kubeflow.org", "pytorchjobs"), ("kubeflow.org", "mpijobs"),
                     ("jobset.x-k8s.io", "jobsets"), ("trainer.kubeflow.org", "trainjobs")}


def test_every_generated_job_is_admitted(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    n = 0
    for c in inv.clusters:
        pol, bnd = _policy(out, c.name)
        for name, job in _jobs(out, c.name).items():
            assert matches(pol, job, _managed(bnd)), name
            verdict = admit(pol, job)
            assert verdict.allowed, (name, verdict.messages)
            n += 1
    assert n == len(inv.workloads) == 4


def test_every_kind_placed_by_kueue_is_admitted(tmp_path: Path) -> None:
    # Every kind, through Kueue: the overlay carries the node affinity as well as the topology.
    inv = _copy(tmp_path, "multi")
    clusters = tuple(dataclasses.replace(c, kueue=c.kueue or KueueConfig("batch")) for c in inv.clusters)
    inv = dataclasses.replace(inv, clusters=clusters,
                              workloads=tuple(dataclasses.replace(w, scheduler="kueue") for w in inv.workloads))
    out = tmp_path / "multi" / "out"
    _render(inv, out)
    kinds = set()
    for c in inv.clusters:
        pol, _ = _policy(out, c.name)
        for name, job in _jobs(out, c.name).items():
            verdict = admit(pol, job)
            assert verdict.allowed, (name, verdict.messages)
            kinds.add(job["kind"])
    assert kinds == set(JOB_KINDS)


def test_the_readme_incident_is_rejected(tmp_path: Path) -> None:
    # The README's PyTorchJob as written (fixtures/lab/bases/train): no zone, no label. Applied
    # around GitOps, the API server now refuses it, naming the replica and what to add.
    inv = _copy(tmp_path, "lab")
    c = dataclasses.replace(inv.clusters[0], admission=AdmissionConfig(("Deny",)))
    inv = dataclasses.replace(inv, clusters=(c,))
    out = tmp_path / "lab" / "out"
    _render(inv, out)
    pol, bnd = _policy(out, "lab")
    (bare,) = [d for d in kustomize_build(tmp_path / "lab" / "bases" / "train") if d["kind"] == "PyTorchJob"]
    bare["metadata"]["namespace"] = "ml-demo"
    assert matches(pol, bare, _managed(bnd))
    verdict = admit(pol, bare)
    assert not verdict.allowed
    (msg,) = verdict.messages
    assert msg.startswith("PyTorchJob train: replica ")
    assert msg.split()[3] in ("Master", "Worker")
    assert f"lacks the label {NZ} naming its network zone (general, gpu)" in msg
    assert "add it to spec.pytorchReplicaSpecs.<replica>.template.metadata.labels" in msg
    # With the label alone (a half fix), the zone constraint is still missing.
    for spec in bare["spec"]["pytorchReplicaSpecs"].values():
        spec["template"].setdefault("metadata", {}).setdefault("labels", {})[NZ] = "gpu"
    (msg,) = admit(pol, bare).messages
    assert "is not held inside its network zone; add to its pod template a required nodeAffinity" in msg
    # The generated overlay of the same job is admitted.
    (placed,) = _jobs(out, "lab").values()
    assert admit(pol, placed).allowed


def _east(multi: tuple[Inventory, Path]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    _, out = multi
    return _policy(out, "gpu-east")[0], _jobs(out, "gpu-east")


def _tpl(job: dict[str, Any], replica: str) -> dict[str, Any]:
    if job["kind"] == "PyTorchJob":
        return job["spec"]["pytorchReplicaSpecs"][replica]["template"]
    if job["kind"] == "MPIJob":
        return job["spec"]["mpiReplicaSpecs"][replica]["template"]
    if job["kind"] == "JobSet":
        return next(r for r in job["spec"]["replicatedJobs"] if r["name"] == replica)["template"]["spec"]["template"]
    patch = job["spec"]["runtimePatches"][0]["trainingRuntimeSpec"]["template"]["spec"]
    return next(r for r in patch["replicatedJobs"] if r["name"] == replica)["template"]["spec"]["template"]


def _zone_msg(kind: str, name: str, replica: str) -> str:
    return (f"{kind} {name}: replica {replica} is not held inside its network zone; add to its pod "
            f"template a required nodeAffinity (in every nodeSelectorTerm) {ZL} In [zones of its "
            f"network zone], or a nodeSelector on {ZL}; a podAffinity or Kueue's topology alone does not "
            "say which network zone (topogate generate writes the affinity)")


def _no_kueue(t: dict[str, Any]) -> None:
    t["metadata"].get("annotations", {}).pop("kueue.x-k8s.io/podset-required-topology", None)


def _no_follow(t: dict[str, Any]) -> None:
    t["spec"]["affinity"].pop("podAffinity", None)


def _mutations() -> dict[str, tuple[str, str, Any, str]]:
    """name -> (job, replica, mutation of that replica's template, expected message kind)."""
    def drop_label(t: dict[str, Any]) -> None:
        del t["metadata"]["labels"][NZ]

    def unknown_zone_label(t: dict[str, Any]) -> None:
        t["metadata"]["labels"][NZ] = "gpu-fabric-2"

    def zone_outside(t: dict[str, Any]) -> None:
        _no_kueue(t)
        _no_follow(t)
        for term in t["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]:
            for e in term["matchExpressions"]:
                if e["key"] == ZL:
                    e["values"] = ["us-east-1a", "us-east-1c"]  # us-east-1c is behind the door

    def escaping_term(t: dict[str, Any]) -> None:
        # Terms are ORed: one term without the zone lets the pod go anywhere.
        _no_kueue(t)
        _no_follow(t)
        t["spec"]["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"].append(
            {"matchExpressions": [{"key": "node-type", "operator": "In", "values": ["gpu"]}]})

    def no_affinity(t: dict[str, Any]) -> None:
        _no_kueue(t)
        del t["spec"]["affinity"]

    def follows_another_job(t: dict[str, Any]) -> None:
        _no_kueue(t)
        del t["spec"]["affinity"]["nodeAffinity"]
        t["spec"]["affinity"]["podAffinity"][REQ][0]["labelSelector"]["matchLabels"][
            "topogate.dev/workload"] = "someone-else"

    def kueue_without_queue(t: dict[str, Any]) -> None:
        del t["spec"]["affinity"]  # Kueue topology is then the only constraint left

    def preferred_not_required(t: dict[str, Any]) -> None:
        del t["spec"]["affinity"]
        ann = t["metadata"]["annotations"]
        ann["kueue.x-k8s.io/podset-preferred-topology"] = ann.pop("kueue.x-k8s.io/podset-required-topology")

    return {
        "drop-label": ("bert-mpi", "Worker", drop_label, "label"),
        "unknown-network-zone": ("llama-ft", "Master", unknown_zone_label, "label"),
        "zone-outside-network-zone": ("bert-mpi", "Launcher", zone_outside, "zone"),
        "term-without-zone": ("llama-ft", "Worker", escaping_term, "zone"),
        "no-affinity-no-kueue": ("llama-ft", "Master", no_affinity, "zone"),
        "follows-another-job": ("llama-ft", "Worker", follows_another_job, "zone"),
        "kueue-preferred-only": ("bert-mpi", "Worker", preferred_not_required, "zone"),
        "kueue-without-queue-label": ("llama-ft", "Master", kueue_without_queue, "zone-no-queue"),
    }


@pytest.mark.parametrize("case", sorted(_mutations()))
def test_mutations_of_generated_jobs_are_rejected(multi: tuple[Inventory, Path], case: str) -> None:
    pol, jobs = _east(multi)
    name, replica, mutate, expect = _mutations()[case]
    job = copy.deepcopy(jobs[name])
    if expect == "zone-no-queue":
        del job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
    mutate(_tpl(job, replica))
    verdict = admit(pol, job)
    assert not verdict.allowed
    (msg,) = verdict.messages
    kind = job["kind"]
    if expect == "label":
        field = "pytorchReplicaSpecs" if kind == "PyTorchJob" else "mpiReplicaSpecs"
        assert msg == (f"{kind} {name}: replica {replica} lacks the label {NZ} naming its network zone "
                       f"(fabric, general), which the boundary policies select on; add it to "
                       f"spec.{field}.<replica>.template.metadata.labels")
    else:
        assert msg == _zone_msg(kind, name, replica)


@pytest.mark.parametrize("alternative", ["node-affinity", "node-selector"])
def test_each_node_constraint_alone_is_enough(multi: tuple[Inventory, Path], alternative: str) -> None:
    pol, jobs = _east(multi)
    job = copy.deepcopy(jobs["llama-ft"])
    for replica in ("Master", "Worker"):
        t = _tpl(job, replica)
        _no_kueue(t)
        _no_follow(t)
        if alternative == "node-selector":
            del t["spec"]["affinity"]["nodeAffinity"]
            t["spec"]["nodeSelector"] = {ZL: "us-east-1b"}
    assert admit(pol, job).allowed, alternative


@pytest.mark.parametrize("alternative", ["follow", "kueue"])
def test_follow_or_kueue_alone_is_refused(multi: tuple[Inventory, Path], alternative: str) -> None:
    """A podAffinity on the job's own pods, or Kueue's required topology, keeps the pods in one
    zone but not in which: the job could run wholly in another network zone (TG106 for check).
    Without the node affinity the generated overlay carries, the policy refuses them."""
    pol, jobs = _east(multi)
    job = copy.deepcopy(jobs["llama-ft"])
    for replica in ("Master", "Worker"):
        t = _tpl(job, replica)
        del t["spec"]["affinity"]["nodeAffinity"]
        if alternative == "kueue":
            _no_follow(t)
        else:
            _no_kueue(t)
    verdict = admit(pol, job)
    assert not verdict.allowed
    (msg,) = verdict.messages
    assert msg in (_zone_msg("PyTorchJob", "llama-ft", "Master"), _zone_msg("PyTorchJob", "llama-ft", "Worker"))


def test_kueue_topology_counts_only_where_kueue_runs(multi: tuple[Inventory, Path]) -> None:
    # gpu-west has no Kueue: the annotation alone would constrain nothing there.
    inv, out = multi
    pol, _ = _policy(out, "gpu-west")
    job = copy.deepcopy(_jobs(out, "gpu-west")["resnet"])
    for r in job["spec"]["replicatedJobs"]:
        t = r["template"]["spec"]["template"]
        del t["spec"]["affinity"]
        t["metadata"]["annotations"] = {"kueue.x-k8s.io/podset-required-topology": ZL}
    job["metadata"].setdefault("labels", {})["kueue.x-k8s.io/queue-name"] = "x"
    verdict = admit(pol, job)
    assert not verdict.allowed
    assert verdict.messages[0].startswith("JobSet resnet: replica driver is not held inside its network zone")


def test_jobset_and_trainjob_name_their_replicas(multi: tuple[Inventory, Path]) -> None:
    _, out = multi
    pol, _ = _policy(out, "gpu-west")
    jobs = _jobs(out, "gpu-west")
    js = copy.deepcopy(jobs["resnet"])
    del _tpl(js, "workers")["metadata"]["labels"][NZ]
    (msg,) = admit(pol, js).messages
    assert msg.startswith(f"JobSet resnet: replica workers lacks the label {NZ}")
    assert "spec.replicatedJobs[<replica>].template.spec.template.metadata.labels" in msg
    tj = copy.deepcopy(jobs["gpt-sft"])
    del _tpl(tj, "node")["spec"]["affinity"]
    (msg,) = admit(pol, tj).messages
    assert msg.startswith("TrainJob gpt-sft: replica node is not held inside its network zone")
    # A TrainJob that patches no replicated job: the policy cannot see its runtime's pods.
    del tj["spec"]["runtimePatches"]
    (msg,) = admit(pol, tj).messages
    assert msg.startswith("TrainJob: its pods come from a runtime this policy cannot read")


def test_unmanaged_namespaces_and_other_kinds_are_not_matched(multi: tuple[Inventory, Path]) -> None:
    pol, jobs = _east(multi)
    job = copy.deepcopy(jobs["llama-ft"])
    job["metadata"]["namespace"] = "sandbox"
    assert not matches(pol, job, ["ml-team"])
    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "ml-team"}}
    assert not matches(pol, deploy, ["ml-team"])


def test_network_zones_variable_is_the_inventory(multi: tuple[Inventory, Path]) -> None:
    inv, out = multi
    for c in inv.clusters:
        pol, _ = _policy(out, c.name)
        (var,) = [v for v in pol["spec"]["variables"] if v["name"] == "networkZones"]
        assert evaluate(var["expression"], {}) == {n.name: list(n.zones) for n in c.network_zones}


def test_no_workloads_no_policy() -> None:
    # A namespace selector `In []` is invalid, and there is nothing to guard.
    inv = load_inventory(str(FIXTURES / "lab" / "inventory.yaml"))
    c = dataclasses.replace(inv.clusters[0], admission=AdmissionConfig())
    assert admission.render(dataclasses.replace(inv, clusters=(c,), workloads=())) == []


def test_the_incident_as_one_pytorchjob_names_the_coordinator(tmp_path: Path) -> None:
    # fixtures/incident's coordinator and GPU workers, as the two replicas of one PyTorchJob.
    # Even with topogate's network-zone label on both, the workers (pinned to zone-a) pass and
    # the coordinator, free to land in zone-b, is what the API server refuses.
    inv = _copy(tmp_path, "lab")
    c = dataclasses.replace(inv.clusters[0], admission=AdmissionConfig(("Deny",)))
    inv = dataclasses.replace(inv, clusters=(c,))
    out = tmp_path / "lab" / "out"
    _render(inv, out)
    pol, bnd = _policy(out, "lab")
    broken = FIXTURES / "incident" / "broken"
    coordinator = yaml.safe_load((broken / "coordinator.yaml").read_text())
    workers = yaml.safe_load((broken / "workers.yaml").read_text())
    # The plain Deployment and Job are not training kinds: `topogate check` covers them.
    for o in (coordinator, workers):
        assert not matches(pol, o, _managed(bnd))
    templates = {"Master": copy.deepcopy(coordinator["spec"]["template"]),
                 "Worker": copy.deepcopy(workers["spec"]["template"])}
    for t in templates.values():
        t["metadata"]["labels"][NZ] = "gpu"
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
           "metadata": {"name": "train", "namespace": "ml-demo"},
           "spec": {"pytorchReplicaSpecs": {r: {"replicas": 1 if r == "Master" else 4, "template": t}
                                            for r, t in templates.items()}}}
    assert matches(pol, job, _managed(bnd))
    verdict = admit(pol, job)
    assert verdict.messages == (_zone_msg("PyTorchJob", "train", "Master"),)
    # The fixed coordinator (fixtures/incident/fixed) passes.
    fixed = yaml.safe_load((FIXTURES / "incident" / "fixed" / "coordinator.yaml").read_text())
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"] = fixed["spec"]["template"]
    fixed["spec"]["template"]["metadata"]["labels"][NZ] = "gpu"
    assert admit(pol, job).allowed
