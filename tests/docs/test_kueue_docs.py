"""docs/kueue.md and docs/admission.md show real output: every YAML excerpt that names a golden
file is a verbatim part of it, and the admission messages are what the generated policy answers
(evaluated with the real CEL engine)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from pathlib import Path

import pytest
from cel_support import admit
from conftest import FIXTURES, REPO, kustomize_build

from topogate.generators import render_tree
from topogate.inventory.model import AdmissionConfig
from topogate.sources.inventory import load_inventory

DOCS = ("kueue.md", "admission.md")
NZ = "topogate.dev/network-zone"


def _golden_excerpts(doc: str) -> list[tuple[str, str]]:
    text = (REPO / "docs" / doc).read_text()
    out = []
    for block in re.findall(r"```yaml\n(.*?)```", text, flags=re.S):
        first, _, rest = block.partition("\n")
        if first.startswith("# fixtures/golden/"):
            out.append((first[2:], rest))
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_yaml_excerpts_are_the_golden_tree(doc: str) -> None:
    excerpts = _golden_excerpts(doc)
    assert excerpts, f"docs/{doc} shows no generated output"
    for path, body in excerpts:
        golden = (REPO / path).read_text()
        assert body in golden, f"docs/{doc}: excerpt of {path} is not in the golden file"


def test_admission_messages_are_the_policys(tmp_path: Path) -> None:
    shutil.copytree(FIXTURES / "lab", tmp_path / "lab")
    inv = load_inventory(str(tmp_path / "lab" / "inventory.yaml"))
    c = dataclasses.replace(inv.clusters[0], admission=AdmissionConfig(("Deny",)))
    inv = dataclasses.replace(inv, clusters=(c,))
    out = tmp_path / "lab" / "out"
    for rel, data in render_tree(inv, str(out)).items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        (out / rel).write_bytes(data)
    (pol,) = [o for o in kustomize_build(out / "clusters/lab/admission")
              if o["kind"] == "ValidatingAdmissionPolicy"]
    (job,) = [o for o in kustomize_build(out / "clusters/lab") if o["kind"] == "PyTorchJob"]
    master = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]
    del master["metadata"]["labels"][NZ]
    del master["spec"]["affinity"]
    first = admit(pol, job).messages
    master["metadata"]["labels"][NZ] = "gpu"
    second = admit(pol, job).messages
    text = (REPO / "docs" / "admission.md").read_text()
    shown = text.split("<!-- admission-messages -->\n```text\n", 1)[1].split("```", 1)[0]
    assert shown == "\n".join(first + second) + "\n"
