"""Pods another scheduler places: a Volcano Job read as a job, and what topogate reads of KAI
Scheduler's and Volcano's co-location (placement.schedulers). The fixtures
fixtures/placement/kai-required-zone, volcano-hypernodes and volcano-named-nodes run through
`check`; kube-scheduler does not place these pods, so the scheduler oracle leaves them out."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import fetch_crds
import pytest
import yaml

from topogate.analysis.placement import JobPlacement, place_all
from topogate.inventory.model import Cluster, Pool, Taint, Zone
from topogate.k8s.jobs import find_jobs

ZK = "topology.kubernetes.io/zone"


def _cluster() -> Cluster:
    gpu = (Taint("gpu", "NoSchedule", "present"),)
    return Cluster("s", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 2, 8, (("node-type", "gpu"), ("rack", "r1")), gpu),)),
        Zone("zone-b", (Pool("gpu", 1, 8, (("node-type", "gpu"), ("rack", "r2")), gpu),)),
        Zone("zone-c", (Pool("cpu", 3, 0, (("node-type", "cpu"), ("rack", "r3"))),)),
    ))


def _spec(scheduler: str, gpus: int = 0) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "x"}
    if gpus:
        c["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {"schedulerName": scheduler, "tolerations": [{"key": "gpu", "operator": "Exists"}], "containers": [c]}


def kai_job(annotations: dict[str, str]) -> dict[str, Any]:
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": "k", "namespace": "ml", "annotations": annotations},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": {"spec": _spec("kai-scheduler")}},
                "Worker": {"replicas": 2, "template": {"spec": _spec("kai-scheduler", 4)}}}}}


def volcano_job(topology: dict[str, Any] | None) -> dict[str, Any]:
    tasks = [{"name": "master", "replicas": 1, "template": {"metadata": {"labels": {"app": "v"}}, "spec": _spec("")}},
             {"name": "worker", "replicas": 2, "template": {"spec": _spec("", 4)}}]
    for t in tasks:
        del t["template"]["spec"]["schedulerName"]  # type: ignore[index]
    spec: dict[str, Any] = {"queue": "research", "tasks": tasks}
    if topology is not None:
        spec["networkTopology"] = topology
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v", "namespace": "ml"},
            "spec": spec}


def hypernode(name: str, tier: int, selector: dict[str, Any], kind: str = "Node",
              tier_name: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"tier": tier, "members": [{"type": kind, "selector": selector}]}
    if tier_name:
        spec["tierName"] = tier_name
    return {"apiVersion": "topology.volcano.sh/v1alpha1", "kind": "HyperNode", "metadata": {"name": name}, "spec": spec}


def place(obj: dict[str, Any], hypernodes: list[dict[str, Any]] | None = None) -> JobPlacement:
    (p,) = place_all(find_jobs([(obj, None)]), lambda _j: _cluster(), hypernodes=hypernodes or []).values()
    return p


def test_a_volcano_job_is_a_job_of_its_tasks_with_the_labels_its_controller_stamps() -> None:
    (job,) = find_jobs([(volcano_job(None), None)])
    assert job.object_id == "Job/ml/v" and [g.name for g in job.groups] == ["master", "worker"]
    master = job.group("master")
    assert master is not None and master.label_map == {
        "app": "v", "volcano.sh/job-name": "v", "volcano.sh/task-spec": "master", "volcano.sh/job-namespace": "ml",
        "volcano.sh/queue-name": "research"}
    assert master.spec["schedulerName"] == "volcano"  # the Job's scheduler, on a template naming none
    assert job.group("worker").gpus == 8  # type: ignore[union-attr]


def test_kai_required_placement_on_the_zone_label_holds_the_job_in_one_zone() -> None:
    held = place(kai_job({"kai.scheduler/topology": "t", "kai.scheduler/topology-required-placement": ZK}))
    assert held.colocated and held.schedulable
    assert all("held in one zone" in text for _, s, text in held.scheduler_notes if s == "kai-scheduler")
    # A label whose every value lies in one zone (a rack) holds it too.
    assert place(kai_job({"kai.scheduler/topology": "t", "kai.scheduler/topology-required-placement": "rack"})).colocated


def test_kai_without_a_topology_or_on_a_wider_label_is_named_not_read_as_co_location() -> None:
    for ann in ({"kai.scheduler/topology-required-placement": ZK},
                {"kai.scheduler/topology": "t", "kai.scheduler/topology-required-placement": "node-type"},
                {"kai.scheduler/topology": "t", "kai.scheduler/topology-preferred-placement": ZK}):
        p = place(kai_job(ann))
        assert not p.colocated, ann
        assert p.scheduler_notes and all("not read as co-location" in t or "nothing holds" in t
                                         for _, _, t in p.scheduler_notes), p.scheduler_notes


def test_volcano_hard_network_topology_is_co_location_where_hypernodes_select_one_zone_each() -> None:
    by_zone = [hypernode(f"s-{z}", 1, {"labelMatch": {"matchLabels": {ZK: z}}}, tier_name="zone")
               for z in ("zone-a", "zone-b", "zone-c")]
    assert place(volcano_job({"mode": "hard", "highestTierAllowed": 1}), by_zone).colocated
    assert place(volcano_job({"highestTierName": "zone"}), by_zone).colocated  # mode defaults to hard
    assert not place(volcano_job({"mode": "soft"}), by_zone).colocated
    spanning = [hypernode("s", 1, {"labelMatch": {"matchLabels": {"node-type": "gpu"}}})]
    p = place(volcano_job({"mode": "hard", "highestTierAllowed": 1}), spanning)
    assert not p.colocated and any("spans zones zone-a, zone-b" in t for _, _, t in p.scheduler_notes)
    named = [hypernode("s", 1, {"exactMatch": {"name": "node-0"}})]
    p = place(volcano_job({"mode": "hard", "highestTierAllowed": 1}), named)
    assert not p.colocated and any("names nodes" in t for _, _, t in p.scheduler_notes)


def test_any_other_scheduler_is_named_with_what_topogate_assumed() -> None:
    p = place(kai_job({}) | {"spec": {"pytorchReplicaSpecs": {
        "Master": {"replicas": 1, "template": {"spec": _spec("my-scheduler")}}}}})
    assert [(g, s) for g, s, _ in p.scheduler_notes] == [("Master", "my-scheduler")]
    assert "reads nothing else of my-scheduler" in p.scheduler_notes[0][2]


# --- the fixtures' objects of these schedulers' kinds, against their pinned CRDs -------------------

SCHEDULER_LOCK = Path(__file__).resolve().parent.parent / "scheduler_crds.lock.json"
REPO = Path(__file__).resolve().parents[2]


def _scheduler_crds() -> Path:
    """The other schedulers' CRDs (tests/scheduler_crds.lock.json), or skip with one line."""
    d = Path(os.environ.get("TOPOGATE_SCHEDULER_CRDS") or REPO / ".crds-schedulers")
    entries = fetch_crds.lock_entries(SCHEDULER_LOCK)
    gone = [e["path"] for e in entries if not (d / e["path"]).is_file()]
    if gone:
        pytest.skip(f"the other schedulers' CRDs are not at {d} (missing {', '.join(gone)}): `make crds` fetches "
                    "them, or set TOPOGATE_SCHEDULER_CRDS=DIR")
    for e in entries:
        data = (d / e["path"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == e["sha256"], f"{e['path']} is not the pinned file"
    return d


def _validators(root: Path) -> dict[tuple[str, str], Any]:
    import jsonschema  # lazy: only this test needs it, and it is slow to import

    out = {}
    for f in sorted(root.rglob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if isinstance(doc, dict) and doc.get("kind") == "CustomResourceDefinition":
                for v in doc["spec"]["versions"]:
                    if v.get("served"):
                        key = (f"{doc['spec']['group']}/{v['name']}", doc["spec"]["names"]["kind"])
                        out[key] = jsonschema.Draft202012Validator(_closed(v["schema"]["openAPIV3Schema"]))
    return out


def _closed(schema: Any) -> Any:
    """Unknown fields rejected where the API server would prune them (as tests/conftest.py does)."""
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {k: (v if k in ("oneOf", "anyOf", "allOf", "not") else _closed(v)) for k, v in schema.items()}
    if "properties" in schema and "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"):
        out["additionalProperties"] = False
    return out


def test_the_fixtures_objects_of_other_schedulers_match_their_pinned_crds() -> None:
    validators = _validators(_scheduler_crds())
    seen = set()
    for f in sorted((REPO / "fixtures" / "placement").rglob("*.yaml")):
        for doc in yaml.safe_load_all(f.read_text()):
            if not isinstance(doc, dict):
                continue
            key = (str(doc.get("apiVersion")), str(doc.get("kind")))
            if key in validators:
                errors = [e.message for e in validators[key].iter_errors(doc)]
                assert errors == [], (f.name, key, errors)
                seen.add(key)
    assert seen == {("batch.volcano.sh/v1alpha1", "Job"), ("topology.volcano.sh/v1alpha1", "HyperNode"),
                    ("kai.scheduler/v1alpha1", "Topology")}
    # The validation can fail: a mode the CRD does not know, a HyperNode member without a type.
    bad = volcano_job({"mode": "strict"})
    assert list(validators[("batch.volcano.sh/v1alpha1", "Job")].iter_errors(bad))
