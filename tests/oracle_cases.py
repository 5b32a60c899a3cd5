"""Cases for the scheduler oracle (tests/oracle_support.py): every placement fixture, and random
inventories and jobs from a seed.

Generated inventories: 2-4 zones, each with a GPU pool (1-3 nodes of 1-8 GPUs, often tainted)
and/or a CPU pool. Generated jobs: a PyTorchJob (Master and Workers) or a JobSet (1-2 replicated
jobs), whose groups draw GPUs per pod, tolerations, a nodeSelector, zone nodeAffinity, podAffinity
on the zone or hostname key (to the whole job, the coordinator or another group), podAntiAffinity
(hostname or zone, with itself or another group) and zone spread constraints. Every group of a
job asks for GPUs of one size, so the scheduler's packing never strands a pod that some other
packing would place (topogate does not model packing choices).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import yaml
from oracle_support import Case, uses_workload_api

from topogate.inventory.model import Cluster, Pool, Taint, Zone
from topogate.sources.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[1]
ZK = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
GPU_TAINT = Taint("gpu", "NoSchedule", "present")
TOLERATE = [{"key": "gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
# Rule fixtures about placement; the others are about policies, drift or inventories.
PLACEMENT_RULES = ("TG102", "TG103", "TG104", "TG105", "TG106", "TG111")


def _manifests(case_dir: Path, spec: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for p in spec.get("paths", []):
        path = (case_dir / p).resolve()
        files = sorted(path.rglob("*.yaml")) if path.is_dir() else [path]
        for f in files:
            out += [d for d in yaml.safe_load_all(f.read_text()) if isinstance(d, dict)]
    return out


def fixture_cases() -> list[Case]:
    """fixtures/placement/* and the placement rules' fixtures: those on one cluster that no
    controller but the scheduler decides (Kueue's admission is not run here)."""
    dirs = sorted(p for p in (ROOT / "fixtures" / "placement").iterdir() if (p / "case.yaml").is_file())
    for rule in sorted((ROOT / "fixtures" / "rules").iterdir()):
        if rule.name.split("-", 1)[0] in PLACEMENT_RULES:
            dirs += [rule / v for v in ("fail", "pass") if (rule / v / "case.yaml").is_file()]
    out: list[Case] = []
    for d in dirs:
        spec = yaml.safe_load((d / "case.yaml").read_text())
        if spec.get("render") or spec.get("live"):
            continue
        objects = _manifests(d, spec)
        if "kueue.x-k8s.io" in yaml.safe_dump(objects):
            continue
        inv = load_inventory(d / spec["inventory"])
        clusters = [c for c in inv.clusters if spec.get("cluster") in (None, c.name)]
        if len(clusters) != 1:
            continue
        ns_labels = {str(o["metadata"]["name"]): dict(o["metadata"].get("labels") or {})
                     for o in objects if o.get("kind") == "Namespace"}
        case = Case(str(d.relative_to(ROOT / "fixtures")), clusters[0], tuple(objects), ns_labels)
        if not uses_workload_api(case):
            out.append(case)
    return out


# --- generated --------------------------------------------------------------------------------


def random_cluster(rng: random.Random, name: str) -> Cluster:
    zones = []
    for z in range(rng.randint(2, 4)):
        pools = []
        if rng.random() < 0.8 or z == 0:
            taints = (GPU_TAINT,) if rng.random() < 0.6 else ()
            pools.append(Pool("gpu", rng.choice((1, 1, 2, 3)), rng.choice((2, 4, 8, 8)), (("node-type", "gpu"),), taints))
        if rng.random() < 0.5 or not pools:
            pools.append(Pool("cpu", rng.choice((1, 1, 2)), 0, (("node-type", "cpu"),)))
        zones.append(Zone(f"zone-{'abcd'[z]}", tuple(pools)))
    return Cluster(name, "aws", "us-east-1", zones=tuple(zones))


def _term(labels: dict[str, str], key: str) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _group_spec(rng: random.Random, me: dict[str, str], job: str, others: list[dict[str, str]], gpus: int,
                zones: list[str], coordinator: dict[str, str] | None) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "example/train:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    spec: dict[str, Any] = {"containers": [container]}
    if rng.random() < (0.75 if gpus else 0.35):
        spec["tolerations"] = TOLERATE
    if rng.random() < 0.25:
        spec["nodeSelector"] = {"node-type": rng.choice(("gpu", "cpu")) if not gpus else "gpu"}
    if rng.random() < 0.3:
        pick = rng.sample(zones, rng.randint(1, len(zones)))
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": ZK, "operator": "In", "values": sorted(pick)}]}]}}}
    aff: dict[str, Any] = {}
    r = rng.random()
    if r < 0.45:
        target = rng.choice([{"app": job}, *( [coordinator] if coordinator else []), *others, me])
        key = HOST if rng.random() < 0.08 else ZK
        aff["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [_term(target, key)]}
    anti: list[dict[str, Any]] = []
    if rng.random() < 0.12:
        anti.append(_term(me, HOST))
    if rng.random() < 0.08:
        anti.append(_term(me, ZK))
    if others and rng.random() < 0.06:
        anti.append(_term(rng.choice(others), ZK))
    if anti:
        aff["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": anti}
    if aff:
        spec["affinity"] = {**spec.get("affinity", {}), **aff}
    if rng.random() < 0.15:
        spec["topologySpreadConstraints"] = [{
            "maxSkew": rng.choice((1, 2)), "topologyKey": ZK,
            "whenUnsatisfiable": "DoNotSchedule" if rng.random() < 0.8 else "ScheduleAnyway",
            "labelSelector": {"matchLabels": me}}]
    return spec


def random_job(rng: random.Random, cluster: Cluster, name: str) -> dict[str, Any]:
    zones = [z.name for z in cluster.zones]
    gpus = rng.choice((0, 1, 1, 2, 4))
    if rng.random() < 0.5:
        master, worker = {"app": name, "role": "master"}, {"app": name, "role": "worker"}
        replicas: dict[str, tuple[int, dict[str, str]]] = {"Master": (1, master), "Worker": (rng.randint(1, 4), worker)}
        specs: dict[str, Any] = {}
        for g, (n, mine) in replicas.items():
            other = [worker if g == "Master" else master]
            g_gpus = gpus if (g == "Worker" or rng.random() < 0.3) else 0
            specs[g] = {"replicas": n, "restartPolicy": "OnFailure", "template": {
                "metadata": {"labels": mine},
                "spec": _group_spec(rng, mine, name, other, g_gpus, zones, master)}}
        return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": "ml"},
                "spec": {"pytorchReplicaSpecs": specs}}
    groups = [f"g{i}" for i in range(rng.randint(1, 2))]
    labels = {g: {"app": name, "role": g} for g in groups}
    rjobs = []
    for g in groups:
        n = rng.randint(1, 4)
        other = [labels[h] for h in groups if h != g]
        g_gpus = gpus if (g == "g0" or rng.random() < 0.5) else 0
        spec = _group_spec(rng, labels[g], name, other, g_gpus, zones, None)
        spec["restartPolicy"] = "Never"
        rjobs.append({"name": g, "replicas": 1, "template": {"spec": {"parallelism": n, "completions": n, "template": {
            "metadata": {"labels": labels[g]}, "spec": spec}}}})
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicatedJobs": rjobs}}


def generated_cases(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    out = []
    for i in range(count):
        c = random_cluster(rng, f"gen{i}")
        out.append(Case(f"generated-{seed}-{i}", c, (random_job(rng, c, f"job{i}"),)))
    return out


def write_case(case: Case, directory: Path, expect: list[str], why: str) -> None:
    """A generated case as a placement fixture (fixtures/placement/<name>/): its inventory, its
    manifests and the rules `topogate check` must give, to keep a disagreement fixed."""
    c = case.cluster
    zones = [{"name": z.name, "pools": [
        {"name": p.name, "nodes": p.nodes, **({"gpusPerNode": p.gpus_per_node} if p.gpus_per_node else {}),
         "labels": dict(p.labels),
         **({"taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in p.taints]} if p.taints else {})}
        for p in z.pools]} for z in c.zones]
    inv = {"apiVersion": "topogate.dev/v1alpha1", "kind": "Inventory", "metadata": {"name": directory.name},
           "clusters": [{"name": directory.name, "provider": "aws", "region": c.region, "zoneLabel": c.zone_label,
                         "zones": zones,
                         "networkZones": [{"name": "all", "zones": [z.name for z in c.zones]}]}]}
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "inventory.yaml").write_text(yaml.safe_dump(inv, sort_keys=False))
    (directory / "manifests.yaml").write_text(yaml.safe_dump_all(list(case.objects), sort_keys=False))
    comment = "".join(f"# {line}\n" for line in why.splitlines())
    (directory / "case.yaml").write_text(comment + yaml.safe_dump(
        {"inventory": "inventory.yaml", "paths": ["manifests.yaml"], "expect": expect}, sort_keys=False))
