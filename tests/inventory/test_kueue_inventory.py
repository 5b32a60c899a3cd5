"""The inventory's Kueue and admission opt-ins: read into the model, with defaults that say so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from conftest import FIXTURES

from topogate.inventory.loader import InventoryError
from topogate.sources.inventory import load_inventory


def _lab(tmp_path: Path, edit: dict) -> Path:
    shutil.copytree(FIXTURES / "lab", tmp_path / "lab")
    f = tmp_path / "lab" / "inventory.yaml"
    data = yaml.safe_load(f.read_text())
    for key, value in edit.get("cluster", {}).items():
        data["clusters"][0][key] = value
    for key, value in edit.get("workload", {}).items():
        data["workloads"][0][key] = value
    for key, value in edit.get("pools", {}).items():
        for z in data["clusters"][0]["zones"]:
            for p in z["pools"]:
                p[key] = value
    f.write_text(yaml.safe_dump(data, sort_keys=False))
    return f


def test_defaults_opt_out(tmp_path: Path) -> None:
    inv = load_inventory(str(_lab(tmp_path, {})))
    c, w = inv.clusters[0], inv.workloads[0]
    assert c.kueue is None and c.admission is None
    assert w.scheduler == "default" and w.queue is None and inv.queue_of(w) is None
    assert all(p.cpu_per_node is None and p.memory_per_node is None for z in c.zones for p in z.pools)


def test_opt_in_fields(tmp_path: Path) -> None:
    f = _lab(tmp_path, {"cluster": {"kueue": {"queue": "training"},
                                    "admission": {"validationActions": ["Warn", "Audit"]}},
                        "workload": {"scheduler": "kueue"},
                        "pools": {"cpuPerNode": 64, "memoryPerNode": "512Gi"}})
    inv = load_inventory(str(f))
    c, w = inv.clusters[0], inv.workloads[0]
    assert c.kueue is not None and c.kueue.queue == "training"
    assert c.admission is not None and c.admission.validation_actions == ("Warn", "Audit")
    assert inv.queue_of(w) == "training"
    assert {(p.cpu_per_node, p.memory_per_node) for z in c.zones for p in z.pools} == {("64", "512Gi")}
    # A workload may name its own LocalQueue.
    f2 = _lab(tmp_path / "b", {"cluster": {"kueue": {"queue": "training"}},
                               "workload": {"scheduler": "kueue", "queue": "urgent"}})
    inv2 = load_inventory(str(f2))
    assert inv2.queue_of(inv2.workloads[0]) == "urgent"


def test_admission_defaults_to_deny(tmp_path: Path) -> None:
    inv = load_inventory(str(_lab(tmp_path, {"cluster": {"admission": {}}})))
    assert inv.clusters[0].admission is not None
    assert inv.clusters[0].admission.validation_actions == ("Deny",)


@pytest.mark.parametrize("edit, needle", [
    ({"pools": {"memoryPerNode": "lots"}}, "memoryPerNode"),
    ({"pools": {"cpuPerNode": "1.5"}}, "cpuPerNode"),
    ({"cluster": {"admission": {"validationActions": ["Block"]}}}, "validationActions/0"),
    ({"workload": {"scheduler": "volcano"}}, "scheduler"),
])
def test_bad_values_name_the_field(tmp_path: Path, edit: dict, needle: str) -> None:
    with pytest.raises(InventoryError) as e:
        load_inventory(str(_lab(tmp_path, edit)))
    assert needle in str(e.value)
