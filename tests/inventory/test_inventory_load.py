"""Loading a good inventory: the model, positions, and a model that ignores key and list order."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import invoke

from topogate.core.position import Position
from topogate.inventory.loader import InventoryError
from topogate.sources.inventory import load_inventory

BAD = Path(__file__).resolve().parents[2] / "fixtures" / "bad"
GOOD = """apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: acme}
clusters:
- name: gpu-east
  provider: aws
  region: us-east-1
  cost: {tagKey: kubernetes.io/cluster/gpu-east, tagValue: owned, budgetUSDPerDay: 5}
  zones:
  - name: us-east-1b
    pools: [{name: cpu, nodes: 2, labels: {node-type: cpu}}]
  - name: us-east-1a
    pools:
    - name: gpu-a100
      nodes: 2
      gpusPerNode: 4
      labels: {node-type: gpu}
      taints: [{key: gpu, value: present, effect: NoSchedule}]
  networkZones:
  - {name: gpu-fabric, zones: [us-east-1a]}
  - {name: general, zones: [us-east-1b]}
workloads:
- name: llama-ft
  namespace: ml-team
  cluster: gpu-east
  kind: PyTorchJob
  base: ../_bases/pt
  networkZone: gpu-fabric
"""

# The same inventory with keys and list entries in another order.
REORDERED = """kind: Inventory
apiVersion: topogate.dev/v1alpha1
workloads:
- networkZone: gpu-fabric
  base: ../_bases/pt
  kind: PyTorchJob
  cluster: gpu-east
  namespace: ml-team
  name: llama-ft
metadata: {name: acme}
clusters:
- region: us-east-1
  provider: aws
  name: gpu-east
  networkZones:
  - {zones: [us-east-1b], name: general}
  - {name: gpu-fabric, zones: [us-east-1a]}
  cost: {budgetUSDPerDay: 5, tagValue: owned, tagKey: kubernetes.io/cluster/gpu-east}
  zones:
  - name: us-east-1a
    pools:
    - taints: [{effect: NoSchedule, key: gpu, value: present}]
      labels: {node-type: gpu}
      gpusPerNode: 4
      nodes: 2
      name: gpu-a100
  - name: us-east-1b
    pools: [{name: cpu, nodes: 2, labels: {node-type: cpu}}]
"""


def _write(tmp: Path, name: str, text: str) -> Path:
    d = tmp / name
    shutil.copytree(BAD / "_bases" / "pt", d / "bases" / "pt")
    (d / "inventory.yaml").write_text(text.replace("../_bases/pt", "bases/pt"))
    return d / "inventory.yaml"


@pytest.fixture
def inv_files(tmp_path: Path) -> list[Path]:
    return [_write(tmp_path, "good", GOOD), _write(tmp_path, "reordered", REORDERED)]


def test_model_from_good_inventory(inv_files: list[Path]) -> None:
    inv = load_inventory(inv_files[0])
    c = inv.clusters[0]
    assert c.name == "gpu-east" and c.zone_label == "topology.kubernetes.io/zone"
    assert [z.name for z in c.zones] == ["us-east-1a", "us-east-1b"]  # sorted
    gpu = c.zones[0].pools[0]
    assert gpu.gpus == 8 and gpu.label_map == {"node-type": "gpu"}
    assert gpu.taints[0].key == "gpu" and gpu.taints[0].effect == "NoSchedule"
    assert c.cost is not None and c.cost.budget_usd_per_day == 5.0
    w = inv.workloads[0]
    assert w.object_id == "PyTorchJob/ml-team/llama-ft"
    assert [(g.name, g.replicas, g.gpus_per_pod) for g in w.groups] == [("Master", 1, 1), ("Worker", 4, 1)]
    assert inv.pin_zones(w) == ("us-east-1a",)
    # positions are 1-based and point at the entry
    assert w.pos == Position(str(inv_files[0]), 23, 3)
    assert gpu.pos.line == 14


def test_model_ignores_key_and_list_order(inv_files: list[Path]) -> None:
    a, b = (load_inventory(f) for f in inv_files)
    assert a.clusters == b.clusters


def test_model_changes_with_content(inv_files: list[Path]) -> None:
    a = load_inventory(inv_files[0])
    inv_files[0].write_text(inv_files[0].read_text().replace("nodes: 2\n      gpusPerNode: 4",
                                                             "nodes: 3\n      gpusPerNode: 4"))
    assert load_inventory(inv_files[0]).clusters != a.clusters


def test_missing_file_is_a_problem(tmp_path: Path) -> None:
    with pytest.raises(InventoryError) as e:
        load_inventory(tmp_path / "nope.yaml")
    assert "cannot read the inventory" in str(e.value)


def test_generate_bad_inventory_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("previous")
    r = invoke("generate", str(BAD / "many-problems" / "inventory.yaml"), "-o", str(out))
    assert r.exit_code == 2
    assert "missing required field 'region'" in r.output
    assert "names cluster 'nowhere'" in r.output
    assert "3 problems in the inventory; nothing was written" in r.output
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
