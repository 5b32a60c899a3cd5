"""A problem an overlay's patch causes is reported on the patch, not on the untouched base;
a problem the base has stays on the base. Real `kubectl kustomize` builds."""

from __future__ import annotations

import json
from pathlib import Path

import yaml
from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
CLEAN = ROOT / "fixtures" / "rules" / "TG110-unprotected-job" / "pass" / "manifests.yaml"
SPREAD = {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule"}


def _base(tmp: Path, master_spread: bool = False) -> None:
    docs = list(yaml.safe_load_all(CLEAN.read_text()))
    if master_spread:
        job = next(d for d in docs if d["kind"] == "PyTorchJob")
        job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["topologySpreadConstraints"] = [SPREAD]
    (tmp / ".git").mkdir()  # one repository: the overlay may read its base beside it
    (tmp / "base").mkdir()
    (tmp / "base" / "manifests.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    (tmp / "base" / "kustomization.yaml").write_text("resources:\n- manifests.yaml\n")


def _tg105(tmp: Path, overlay: str) -> list[dict[str, object]]:
    r = invoke("check", LAB, str(tmp / overlay), "--format", "json")
    assert r.exit_code == 0, r.output
    return [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "TG105"]


def test_json_patch_file_is_blamed_at_its_operation(tmp_path: Path) -> None:
    _base(tmp_path, master_spread=True)
    ov = tmp_path / "overlay"
    ov.mkdir()
    (ov / "kustomization.yaml").write_text(
        "resources:\n- ../base\npatches:\n- path: spread.yaml\n  target: {kind: PyTorchJob, name: train}\n")
    (ov / "spread.yaml").write_text(yaml.safe_dump([
        {"op": "replace", "path": "/spec/runPolicy", "value": {}},
        {"op": "add", "path": "/spec/pytorchReplicaSpecs/Worker/template/spec/topologySpreadConstraints",
         "value": [SPREAD]}], sort_keys=False))
    where = {str(f["message"]).split("group ", 1)[1].split(" ", 1)[0]: (f["file"], f["line"])
             for f in _tg105(tmp_path, "overlay")}
    # the Worker's constraint comes from the patch's second operation; the Master's is the base's own
    assert where["Worker"][0].endswith("overlay/spread.yaml") and where["Worker"][1] > 1
    assert where["Master"][0].endswith("base/manifests.yaml")


def test_inline_patch_is_blamed_at_its_entry(tmp_path: Path) -> None:
    _base(tmp_path)
    ov = tmp_path / "overlay"
    ov.mkdir()
    (ov / "kustomization.yaml").write_text(
        "resources:\n- ../base\npatches:\n- target: {kind: PyTorchJob, name: train}\n  patch: |-\n"
        "    - op: add\n      path: /spec/pytorchReplicaSpecs/Worker/template/spec/topologySpreadConstraints\n"
        f"      value: [{json.dumps(SPREAD)}]\n")
    (f,) = _tg105(tmp_path, "overlay")
    assert (str(f["file"]).endswith("overlay/kustomization.yaml"), f["line"], f["column"]) == (True, 4, 3)
