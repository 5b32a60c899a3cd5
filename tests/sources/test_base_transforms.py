"""Bases that transform their own resources are read as kustomize builds them.

The overlay's JSON patches are computed against the base; if the base's kustomization adds a
toleration or a label with a patch of its own, the overlay must keep it (real kubectl kustomize).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import yaml
from conftest import invoke

from topogate.sources.manifests import kubectl

LAB = Path(__file__).resolve().parents[2] / "fixtures" / "lab"

BASE_PATCH = """\
- op: add
  path: /spec/pytorchReplicaSpecs/Master/template/metadata
  value: {labels: {team: vision}}
- op: add
  path: /spec/pytorchReplicaSpecs/Master/template/spec/tolerations
  value: [{key: spot, operator: Exists, effect: NoSchedule}]
"""


def test_overlay_keeps_what_the_base_patches_in(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(LAB, repo)
    base = repo / "bases" / "train"
    (base / "team-patch.yaml").write_text(BASE_PATCH)
    (base / "kustomization.yaml").write_text(
        "resources: [pytorchjob.yaml]\n"
        "patches:\n- path: team-patch.yaml\n  target: {kind: PyTorchJob, name: train}\n")
    r = invoke("generate", str(repo / "inventory.yaml"), "-o", str(repo / "out"))
    assert r.exit_code == 0, r.output
    overlay = repo / "out/clusters/lab/workloads/ml-demo/train"
    built = subprocess.run([kubectl(), "kustomize", str(overlay)], capture_output=True, text=True,
                           check=True).stdout
    job = next(d for d in yaml.safe_load_all(built) if d and d["kind"] == "PyTorchJob")
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    tolerations = {t["key"] for t in master["spec"]["tolerations"]}
    assert tolerations == {"spot", "gpu"}  # the base's own, and the GPU pool's
    assert master["metadata"]["labels"]["team"] == "vision"
    assert master["metadata"]["labels"]["topogate.dev/workload"] == "train"
