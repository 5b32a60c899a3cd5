"""Cases for the scheduler oracle (tests/oracle_support.py): every placement fixture (this
module), and random inventories and workloads from a seed (tests/oracle_generate.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from oracle_support import Case, other_scheduler, uses_workload_api

from topogate.sources.inventory import load_inventory

ROOT = Path(__file__).resolve().parents[1]
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
        if not uses_workload_api(case) and not other_scheduler(case):
            out.append(case)
    return out


# --- generated: tests/oracle_generate.py ----------------------------------------------------------


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
