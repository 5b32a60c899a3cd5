"""Nothing dropped, nothing checked by accident (proof issue, section 3).

Each example of the issue, run through the CLI on files on disk with the real kustomize:
- the incident's workloads written as JSON beside its YAML policies are read and fail the run;
- files of other extensions met while walking a directory are named (TG123, info);
- a duplicate object is an error whatever the order of the PATHs;
- a run that holds none of the inventory's jobs (a lone runtime, OUT/flux/<c>, OUT/argocd,
  OUT/monitoring, one ConfigMap) fails, even though it read objects.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from conftest import invoke

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "fixtures" / "lab" / "inventory.yaml"
MULTI = REPO / "fixtures" / "multi" / "inventory.yaml"
INCIDENT = REPO / "fixtures" / "incident"


def check(*args: str) -> tuple[int, dict]:  # type: ignore[type-arg]
    r = invoke("check", *args, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return r.exit_code, json.loads(r.stdout)


def rules(data: dict) -> set[str]:  # type: ignore[type-arg]
    return {f["rule"] for f in data["findings"]}


def test_json_manifests_in_a_directory_are_read(tmp_path: Path) -> None:
    d = tmp_path / "incident"
    d.mkdir()
    for part in ("coordinator", "workers"):
        docs = list(yaml.safe_load_all((INCIDENT / "broken" / f"{part}.yaml").read_text()))
        (d / f"{part}.json").write_text(json.dumps(docs[0] if len(docs) == 1 else
                                                    {"apiVersion": "v1", "kind": "List", "items": docs}, indent=2))
    shutil.copy(INCIDENT / "broken" / "policies.yaml", d / "policies.yaml")
    code, data = check(str(LAB), str(d))
    _, yaml_data = check(str(LAB), str(INCIDENT / "broken"))
    assert code == 1
    assert rules(data) == rules(yaml_data) and "TG101" in rules(data)
    assert [j["object"] for j in data["workloads"]] == [j["object"] for j in yaml_data["workloads"]]


def test_files_of_other_extensions_are_named(tmp_path: Path) -> None:
    d = tmp_path / "m"
    shutil.copytree(INCIDENT / "fixed", d)
    (d / "README.md").write_text("# notes\n")
    (d / "render.sh").write_text("#!/bin/sh\n")
    code, data = check(str(LAB), str(d))
    notes = [f for f in data["findings"] if f["rule"] == "TG123"]
    assert code == 0 and len(notes) == 1 and notes[0]["severity"] == "info"
    assert "2 files of other extensions not read" in notes[0]["message"]
    assert "README.md" in notes[0]["message"] and "render.sh" in notes[0]["message"]


@pytest.fixture
def lab_out(tmp_path: Path) -> Path:
    out = tmp_path / "out"
    r = invoke("generate", str(LAB), "-o", str(out))
    assert r.exit_code == 0, r.output
    return out


def test_a_duplicate_fails_in_either_order(lab_out: Path, tmp_path: Path) -> None:
    """`check INV --rendered OUT OUT apps/` used to pass where `check INV apps/ OUT` failed."""
    apps = tmp_path / "apps"
    apps.mkdir()
    # a hand-written copy of the generated job, without its overlay
    shutil.copy(REPO / "fixtures" / "lab" / "bases" / "train" / "pytorchjob.yaml", apps / "train.yaml")
    text = (apps / "train.yaml").read_text().replace("name: train\n", "name: train\n  namespace: ml-demo\n", 1)
    (apps / "train.yaml").write_text(text)
    first, a = check(str(LAB), "--rendered", str(lab_out), str(lab_out), str(apps))
    second, b = check(str(LAB), str(apps), str(lab_out))
    assert first == second == 1
    assert "TG007" in rules(a) and "TG007" in rules(b)


@pytest.mark.parametrize("inventory,part", [(MULTI, "flux/gpu-east"), (MULTI, "argocd/apps"),
                                            (LAB, "monitoring/lab")])
def test_a_run_without_the_declared_jobs_fails(tmp_path: Path, inventory: Path, part: str) -> None:
    out = tmp_path / "out"
    assert invoke("generate", str(inventory), "-o", str(out)).exit_code == 0
    code, data = check(str(inventory), str(out / part))
    assert code == 1 and "TG006" in rules(data), data["findings"]


def test_a_lone_runtime_or_configmap_fails(tmp_path: Path) -> None:
    cm = tmp_path / "cm.yaml"
    cm.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ml-demo}\n")
    code, data = check(str(LAB), str(cm))
    assert code == 1 and rules(data) == {"TG006"}
    code, data = check(str(MULTI), str(REPO / "fixtures" / "multi" / "platform" / "torch-distributed.yaml"))
    assert code == 1 and "TG006" in rules(data)
