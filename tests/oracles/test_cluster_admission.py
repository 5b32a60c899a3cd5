"""The generated ValidatingAdmissionPolicy in the real kube-apiserver of tests/cluster_support.py.

Each cluster's policy and binding are created in the server (which compiles every expression),
and jobs are sent to it with server-side dry-run, so
admission runs exactly as for a `kubectl apply` and nothing is stored. Every generated job is
admitted; every wrong variant of tests/generators/test_admission.py is refused with the policy's own
message; and the Python evaluation of tests/cel_support.py gives the same verdict and the same
message as the server on each of these cases (where they differ, the server is right).

The proof of docs/admission.md: a job held together only by podAffinity (`placement: follow`),
and a Kueue job held only by Kueue's topology on a ClusterQueue with flavors in both network
zones, can run wholly in a zone of another network zone; `topogate check` reports TG106 for
each, and the server refuses each.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from cel_support import admit
from cluster_support import Cluster, wait_for
from conftest import FIXTURES, kubectl, kustomize_build
from live_support import run
from test_admission import JOB_KINDS, NZ, REQ, _mutations, _tpl, _zone_msg

from topogate.generators import render_tree
from topogate.inventory.model import AdmissionConfig, Inventory
from topogate.sources.inventory import load_inventory

DENIED = re.compile(r"ValidatingAdmissionPolicy 'topogate-placement' with binding 'topogate-placement' "
                    r"denied request: (.*)$")
WARNED = re.compile(r"^Warning: Validation failed for ValidatingAdmissionPolicy 'topogate-placement' with "
                    r"binding 'topogate-placement': (.*)$")


@dataclasses.dataclass(frozen=True)
class Verdict:
    allowed: bool
    messages: tuple[str, ...]  # what the policy said: denials, else warnings


def _render(tmp: Path, case: str, admission: AdmissionConfig | None = None) -> tuple[Inventory, Path]:
    shutil.copytree(FIXTURES / case, tmp / case)
    inv = load_inventory(str(tmp / case / "inventory.yaml"))
    if admission is not None:
        inv = dataclasses.replace(inv, clusters=tuple(dataclasses.replace(c, admission=admission)
                                                      for c in inv.clusters))
    out = tmp / case / "out"
    for rel, data in render_tree(inv, str(out)).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    return inv, out


@pytest.fixture(scope="module")
def trees(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("admission")
    return {"multi": _render(tmp, "multi")[1], "lab": _render(tmp, "lab", AdmissionConfig(("Deny",)))[1]}


def _policy(out: Path, cluster: str) -> tuple[dict[str, Any], dict[str, Any]]:
    objs = kustomize_build(out / "clusters" / cluster / "admission")
    (pol,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicy"]
    (bnd,) = [o for o in objs if o["kind"] == "ValidatingAdmissionPolicyBinding"]
    return pol, bnd


def _jobs(out: Path, cluster: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in kustomize_build(out / "clusters" / cluster) if o["kind"] in JOB_KINDS}


def server_verdict(cluster: Cluster, job: dict[str, Any]) -> Verdict:
    """Send `job` to the server (create, dry-run): admitted or not, and the policy's messages."""
    proc = subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), f"--cache-dir={cluster.root / 'kube-cache'}",
                           "create", "--dry-run=server", "-o", "name", "-f", "-"],
                          input=json.dumps(job), capture_output=True, text=True, timeout=60)
    if proc.returncode == 0:
        warned = tuple(m.group(1) for line in proc.stderr.splitlines() if (m := WARNED.match(line)))
        return Verdict(True, warned)
    denied = tuple(m.group(1) for line in proc.stderr.splitlines() if (m := DENIED.search(line)))
    assert denied, f"refused, but not by the policy:\n{proc.stderr}"
    return Verdict(False, denied)


def _unlabelled(job: dict[str, Any]) -> dict[str, Any]:
    """The job with one replica's network-zone label removed: a probe the policy must refuse."""
    bad = copy.deepcopy(job)
    if bad["kind"] == "TrainJob":
        bad["spec"].pop("runtimePatches", None)
        return bad
    tpl = _tpl(bad, next(iter(_replicas(bad))))
    tpl["metadata"]["labels"].pop(NZ, None)
    return bad


def _replicas(job: dict[str, Any]) -> list[str]:
    if job["kind"] == "PyTorchJob":
        return list(job["spec"]["pytorchReplicaSpecs"])
    if job["kind"] == "MPIJob":
        return list(job["spec"]["mpiReplicaSpecs"])
    return [r["name"] for r in job["spec"]["replicatedJobs"]]


@contextlib.contextmanager
def installed(cluster: Cluster, out: Path, name: str, probe: dict[str, Any],
              actions: list[str] | None = None) -> Iterator[dict[str, Any]]:
    """The cluster's generated policy and binding created in the server (validationActions as
    generated, or `actions`), in effect once `probe` meets them; deleted afterwards. (The
    server's type checking of the expressions is written to the policy's status by a controller
    of kube-controller-manager, which does not run here: not checked.)"""
    pol, bnd = _policy(out, name)
    if actions is not None:
        bnd = {**bnd, "spec": {**bnd["spec"], "validationActions": actions}}
    for ns in bnd["spec"]["matchResources"]["namespaceSelector"]["matchExpressions"][0]["values"]:
        cluster.ensure_namespace(ns)
    cluster.kubectl("create", "-f", "-", stdin=json.dumps({"apiVersion": "v1", "kind": "List", "items": [pol, bnd]}))
    try:
        effect = (lambda v: not v.allowed) if "Deny" in bnd["spec"]["validationActions"] else (lambda v: bool(v.messages))
        wait_for("the policy to take effect", lambda: effect(server_verdict(cluster, probe)))
        yield pol
    finally:
        cluster.kubectl("delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", "topogate-placement")


CLUSTERS = [("multi", "gpu-east"), ("multi", "gpu-west"), ("lab", "lab")]


@pytest.mark.parametrize(("case", "name"), CLUSTERS)
def test_every_generated_job_is_admitted(
        kube_cluster: Cluster, trees: dict[str, Path], case: str, name: str) -> None:
    jobs = _jobs(trees[case], name)
    assert jobs
    with installed(kube_cluster, trees[case], name, _unlabelled(next(iter(jobs.values())))):
        for job_name, job in jobs.items():
            got = server_verdict(kube_cluster, job)
            assert got == Verdict(True, ()), (job_name, got)
            local = admit(_policy(trees[case], name)[0], job)
            assert (local.allowed, local.messages) == (got.allowed, got.messages), job_name


def test_wrong_variants_are_refused_with_the_policys_message_as_cel_support_says(
        kube_cluster: Cluster, trees: dict[str, Path]) -> None:
    """The mutations of tests/generators/test_admission.py, each sent to the server: refused, with the
    message the Python evaluation gives, word for word."""
    pol, _ = _policy(trees["multi"], "gpu-east")
    jobs = _jobs(trees["multi"], "gpu-east")
    cases: dict[str, dict[str, Any]] = {}
    for case, (name, replica, mutate, expect) in sorted(_mutations().items()):
        job = copy.deepcopy(jobs[name])
        if expect == "zone-no-queue":
            del job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"]
        mutate(_tpl(job, replica))
        cases[case] = job
    with installed(kube_cluster, trees["multi"], "gpu-east", cases["drop-label"]):
        for case, job in cases.items():
            got = server_verdict(kube_cluster, job)
            local = admit(pol, job)
            assert not got.allowed, case
            assert got.messages == local.messages, (case, got.messages, local.messages)
        # A namespace the binding does not select is not checked at all.
        elsewhere = copy.deepcopy(cases["drop-label"])
        elsewhere["metadata"]["namespace"] = "not-managed"
        kube_cluster.ensure_namespace("not-managed")
        assert server_verdict(kube_cluster, elsewhere) == Verdict(True, ())


def test_warn_and_audit_admit_with_the_message_as_a_warning(kube_cluster: Cluster, trees: dict[str, Path]) -> None:
    jobs = _jobs(trees["multi"], "gpu-west")
    bad = _unlabelled(jobs["resnet"])
    with installed(kube_cluster, trees["multi"], "gpu-west", bad):
        got = server_verdict(kube_cluster, bad)
        local = admit(_policy(trees["multi"], "gpu-west")[0], bad)
        assert got.allowed and got.messages == local.messages and len(got.messages) == 1, got


def test_the_readme_incident_is_refused_by_the_server(kube_cluster: Cluster, trees: dict[str, Path]) -> None:
    """The README's PyTorchJob as written (no label, no zone), then with the label alone: the
    server's answers are the two messages docs/admission.md shows."""
    (bare,) = [d for d in kustomize_build(trees["lab"].parent / "bases" / "train") if d["kind"] == "PyTorchJob"]
    bare["metadata"]["namespace"] = "ml-demo"
    text = (Path(__file__).resolve().parent.parent.parent / "docs" / "admission.md").read_text()
    shown = text.split("<!-- admission-messages -->\n```text\n", 1)[1].split("```", 1)[0].splitlines()
    with installed(kube_cluster, trees["lab"], "lab", bare):
        first = server_verdict(kube_cluster, bare)
        for spec in bare["spec"]["pytorchReplicaSpecs"].values():
            spec["template"].setdefault("metadata", {}).setdefault("labels", {})[NZ] = "gpu"
        second = server_verdict(kube_cluster, bare)
    assert not first.allowed and not second.allowed
    # The replica named is the first in the server's map order; the docs show Master.
    assert [re.sub(r"replica \w+ ", "replica Master ", m) for m in first.messages + second.messages] == shown


def _follow_only(job: dict[str, Any]) -> dict[str, Any]:
    """The generated JobSet with its node affinity gone: every pod follows the job's own pods."""
    out = copy.deepcopy(job)
    for r in out["spec"]["replicatedJobs"]:
        aff = r["template"]["spec"]["template"]["spec"]["affinity"]
        del aff["nodeAffinity"]
        aff["podAffinity"] = {REQ: [{"labelSelector": {"matchLabels": {"topogate.dev/workload": job["metadata"]["name"]}},
                                     "topologyKey": "topology.kubernetes.io/zone"}]}
    return out


def _kueue_only_in(job: dict[str, Any], network_zone: str) -> dict[str, Any]:
    """The generated Kueue job labelled for `network_zone`, held by Kueue's topology alone."""
    out = copy.deepcopy(job)
    for spec in out["spec"]["pytorchReplicaSpecs"].values():
        tpl = spec["template"]
        tpl["metadata"]["labels"][NZ] = network_zone
        tpl["spec"]["affinity"].pop("nodeAffinity")
        tpl["spec"]["affinity"].pop("podAffinity", None)
    return out


def _check_rules(tmp: Path, cluster: str, objects: list[dict[str, Any]]) -> set[str]:
    f = tmp / f"{cluster}.yaml"
    f.write_text(yaml.safe_dump_all(objects))
    code, out, _ = run("check", str(FIXTURES / "multi" / "inventory.yaml"), "--cluster", cluster, str(f),
                       "--format", "json")
    assert code == 1
    return {x["rule"] for x in json.loads(out)["findings"]}


def test_a_job_held_only_by_podaffinity_or_kueue_is_refused_as_check_refuses_it(
        kube_cluster: Cluster, trees: dict[str, Path], tmp_path: Path) -> None:
    out = trees["multi"]
    # follow alone: resnet (train-a, us-west-2a) could start in us-west-2b, of train-b.
    west = kustomize_build(out / "clusters" / "gpu-west")
    follow = _follow_only(next(o for o in west if o["kind"] == "JobSet"))
    others = [o for o in west if o["kind"] not in JOB_KINDS]
    assert "TG106" in _check_rules(tmp_path, "gpu-west", [*others, follow])
    # Kueue alone, on a ClusterQueue with flavors in fabric and general: labelled general, the
    # job may be given a flavor of us-east-1a or us-east-1b (fabric).
    east = kustomize_build(out / "clusters" / "gpu-east")
    kueue = _kueue_only_in(next(o for o in east if o["metadata"]["name"] == "llama-ft"), "general")
    flavors = {tuple(sorted(f["spec"]["nodeLabels"].items())) for f in east if f["kind"] == "ResourceFlavor"}
    assert {dict(f)["topology.kubernetes.io/zone"] for f in flavors} == {"us-east-1a", "us-east-1b", "us-east-1c"}
    assert "TG106" in _check_rules(tmp_path, "gpu-east", [*(o for o in east if o["kind"] not in JOB_KINDS), kueue])

    with installed(kube_cluster, out, "gpu-west", follow, actions=["Deny"]):
        got = server_verdict(kube_cluster, follow)
        assert not got.allowed
        assert got.messages[0].startswith("JobSet resnet: replica ") and "is not held inside its network zone" in got.messages[0]
        assert got.messages == admit(_policy(out, "gpu-west")[0], follow).messages
    with installed(kube_cluster, out, "gpu-east", kueue):
        got = server_verdict(kube_cluster, kueue)
        assert not got.allowed
        # Both replicas fail; which one the server names follows Go's map order, so the Python
        # CEL must give one of the same two messages, not necessarily the same one.
        either = (_zone_msg("PyTorchJob", "llama-ft", "Master"), _zone_msg("PyTorchJob", "llama-ft", "Worker"))
        ours = admit(_policy(out, "gpu-east")[0], kueue).messages
        assert got.messages[0] in either and len(ours) == len(got.messages) == 1 and ours[0] in either
        # What topogate generates for the same jobs is admitted: its overlay carries the affinity.
        assert server_verdict(kube_cluster, _jobs(out, "gpu-east")["llama-ft"]).allowed
