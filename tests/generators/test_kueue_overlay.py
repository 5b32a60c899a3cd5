"""Jobs placed by Kueue: the overlay labels the job with its queue and annotates every replica
template so Kueue fits the whole job into one zone; built with the real kubectl kustomize and
validated against the upstream job CRDs.

`kueue_rules` restates, in our own code, the checks Kueue's job webhooks make on these
annotations (pkg/controller/jobframework/tas_validation.go in kubernetes-sigs/kueue: one
topology annotation per pod set, a group name that is not a number and only beside a required
or preferred topology, groups of exactly two pod sets, one of them a single pod, with the same
topology request). No Kueue webhook can run here.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES, crd_errors, kustomize_build

from topogate.generators import render_tree
from topogate.inventory.model import Inventory, KueueConfig
from topogate.k8s import kinds
from topogate.k8s import kueue as kueue_api
from topogate.sources.inventory import load_inventory

ZONE = "topology.kubernetes.io/zone"
JOB_KINDS = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob")


def _tree(inv: Inventory, out: Path) -> None:
    for rel, data in render_tree(inv, str(out)).items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def _all_kueue(tmp: Path) -> tuple[Inventory, Path]:
    """The multi example with gpu-west opted in too, so every job kind is placed by Kueue."""
    src = tmp / "multi"
    shutil.copytree(FIXTURES / "multi", src)
    inv = load_inventory(str(src / "inventory.yaml"))
    clusters = tuple(dataclasses.replace(c, kueue=c.kueue or KueueConfig("batch")) for c in inv.clusters)
    wls = tuple(dataclasses.replace(w, scheduler="kueue") for w in inv.workloads)
    inv = dataclasses.replace(inv, clusters=clusters, workloads=wls)
    _tree(inv, src / "out")
    return inv, src / "out"


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory: pytest.TempPathFactory) -> tuple[Inventory, Path]:
    return _all_kueue(tmp_path_factory.mktemp("ko"))


def _jobs(out: Path, cluster: str) -> dict[str, dict[str, Any]]:
    return {o["metadata"]["name"]: o for o in kustomize_build(out / "clusters" / cluster)
            if o["kind"] in JOB_KINDS}


def _pod_sets(job: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    """(name, pods, template) of every pod set Kueue sees in a built job; for a TrainJob, the
    replicated jobs topogate patches through runtimePatches."""
    if job["kind"] == "TrainJob":
        patch = next(p for p in job["spec"]["runtimePatches"] if p["manager"] == "topogate.dev/topogate")
        rjs = patch["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
        return [(r["name"], int(job["spec"].get("trainer", {}).get("numNodes", 1)),
                 r["template"]["spec"]["template"]) for r in rjs]
    return [(g.name, g.pods, g.template) for g in kinds.replica_groups(job)]


def kueue_rules(job: dict[str, Any]) -> list[str]:
    errs: list[str] = []
    groups: dict[str, list[tuple[str, int, str | None]]] = {}
    for name, pods, tpl in _pod_sets(job):
        ann = (tpl.get("metadata") or {}).get("annotations") or {}
        req = ann.get(kueue_api.REQUIRED_TOPOLOGY)
        pref = ann.get("kueue.x-k8s.io/podset-preferred-topology")
        if req and pref:
            errs.append(f"{name}: more than one topology annotation")
        if kueue_api.GROUP_NAME in ann:
            g = ann[kueue_api.GROUP_NAME]
            if g.isdigit():
                errs.append(f"{name}: group name {g} is a number")
            if not (req or pref):
                errs.append(f"{name}: group name without a required or preferred topology")
            groups.setdefault(g, []).append((name, pods, req))
    for g, members in groups.items():
        if len(members) != 2:
            errs.append(f"group {g}: {len(members)} pod sets, Kueue needs exactly 2")
        elif min(m[1] for m in members) != 1:
            errs.append(f"group {g}: neither pod set is a single pod")
        elif members[0][2] != members[1][2]:
            errs.append(f"group {g}: different topology requests")
    return errs


def _required_zones(tpl: dict[str, Any]) -> list[set[str]]:
    terms = tpl["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
        "nodeSelectorTerms"]
    return [{v for e in t["matchExpressions"] if e["key"] == ZONE for v in e["values"]} for t in terms]


def test_every_kind_is_annotated_and_groupable(every_kind: tuple[Inventory, Path]) -> None:
    inv, out = every_kind
    seen = set()
    for c in inv.clusters:
        for name, job in _jobs(out, c.name).items():
            w = inv.workload(f"{job['metadata']['namespace']}/{name}")
            assert w is not None
            seen.add(job["kind"])
            assert crd_errors(job) == [], (name, crd_errors(job))
            assert job["metadata"]["labels"][kueue_api.QUEUE_LABEL] == inv.queue_of(w)
            assert kueue_rules(job) == [], name
            sets = _pod_sets(job)
            group_names = set()
            for ps_name, _, tpl in sets:
                ann = tpl["metadata"]["annotations"]
                assert ann[kueue_api.REQUIRED_TOPOLOGY] == c.zone_label, (name, ps_name)
                group_names.add(ann.get(kueue_api.GROUP_NAME))
                # The network zone stays a required node affinity on every pod set.
                nz = c.network_zone(w.network_zone)
                assert nz is not None
                for zones in _required_zones(tpl):
                    assert zones and zones <= set(nz.zones), (name, ps_name, zones)
            # Two pod sets: one group holds them (fitted into one zone together); one pod set
            # needs no group.
            assert group_names == ({f"{name}-pods"} if len(sets) == 2 else {None}), (name, group_names)
    assert seen == set(JOB_KINDS)


def test_base_annotations_and_labels_are_kept(every_kind: tuple[Inventory, Path]) -> None:
    inv, out = every_kind
    job = _jobs(out, "gpu-east")["llama-ft"]
    assert job["metadata"]["labels"]["team"] == "nlp"
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["metadata"]["annotations"]
    assert master["sidecar.istio.io/inject"] == "false"
    assert master[kueue_api.GROUP_NAME] == "llama-ft-pods"


def test_jobs_not_placed_by_kueue_carry_nothing_of_it(tmp_path: Path) -> None:
    src = tmp_path / "multi"
    shutil.copytree(FIXTURES / "multi", src)
    inv = load_inventory(str(src / "inventory.yaml"))
    _tree(inv, src / "out")
    for job in _jobs(src / "out", "gpu-west").values():
        assert kueue_api.QUEUE_LABEL not in (job["metadata"].get("labels") or {})
        for _, _, tpl in _pod_sets(job):
            assert not any(k.startswith("kueue.x-k8s.io/") for k in (tpl["metadata"].get("annotations") or {}))
    east = _jobs(src / "out", "gpu-east")
    assert {j["metadata"]["labels"][kueue_api.QUEUE_LABEL] for j in east.values()} == {"training", "mpi"}


def test_a_job_of_three_pod_sets_is_pinned_not_grouped(tmp_path: Path) -> None:
    # Kueue cannot group three pod sets: each is fitted into a zone on its own, and the pin's
    # node affinity makes that the same zone for all of them.
    base = tmp_path / "bases" / "sweep"
    shutil.copytree(FIXTURES / "bad" / "_bases" / "js3", base)
    (tmp_path / ".git").mkdir()
    (tmp_path / "inventory.yaml").write_text("""\
apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: sweep}
clusters:
- name: gpu-west
  provider: aws
  region: us-west-2
  kueue: {queue: batch}
  zones:
  - {name: us-west-2a, pools: [{name: gpu, nodes: 2, gpusPerNode: 4}]}
  - {name: us-west-2b, pools: [{name: gpu, nodes: 2, gpusPerNode: 4}]}
  networkZones:
  - {name: fabric, zones: [us-west-2a, us-west-2b]}
workloads:
- {name: sweep, namespace: ml, cluster: gpu-west, kind: JobSet, base: bases/sweep,
   networkZone: fabric, placement: pin, zone: us-west-2a, scheduler: kueue}
""")
    inv = load_inventory(str(tmp_path / "inventory.yaml"))
    _tree(inv, tmp_path / "out")
    (job,) = _jobs(tmp_path / "out", "gpu-west").values()
    assert kueue_rules(job) == []
    for _, _, tpl in _pod_sets(job):
        ann = tpl["metadata"]["annotations"]
        assert ann == {kueue_api.REQUIRED_TOPOLOGY: ZONE}
        assert _required_zones(tpl) == [{"us-west-2a"}]


def test_kueue_rules_catch_a_bad_group() -> None:
    # The restated webhook rules do fail: three pod sets in one group, and a numeric name.
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
           "spec": {"pytorchReplicaSpecs": {
               r: {"replicas": n, "template": {"metadata": {"annotations": {
                   kueue_api.REQUIRED_TOPOLOGY: ZONE, kueue_api.GROUP_NAME: "7"}}, "spec": {"containers": []}}}
               for r, n in (("Master", 1), ("Worker", 2), ("Evaluator", 2))}}}
    errs = kueue_rules(job)
    assert any("exactly 2" in e for e in errs) and any("is a number" in e for e in errs), errs
