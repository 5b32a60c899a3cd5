"""Findings land where a person fixes them: the line that causes them, in a file that exists.

- A group no pool fits because of one constraint (a nodeSelector of the base) is reported at that
  field of the base, not at the generated placement patch the group's template was blamed on.
- Checked without PATHs, a finding in the inventory's generated tree (rendered to a scratch
  directory that is gone when the report is read) is placed at the inventory entry the file is
  generated from, the generated file and line said as context.
- TG102 of a hand-written job is reported at its first group's pod template, where a person adds
  the zone affinity, not at the start of the file.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
WORKER = """    Worker:
      replicas: 4
      restartPolicy: OnFailure
      template:
        spec:
"""


def run(*args: str) -> list[dict[str, object]]:
    r = invoke(*args, "--format", "json")
    assert r.exit_code in (0, 1), r.output
    return json.loads(r.stdout)["findings"]  # type: ignore[no-any-return]


@pytest.fixture
def lab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(ROOT / "fixtures" / "lab", tmp_path / "lab")
    monkeypatch.chdir(tmp_path / "lab")
    return tmp_path / "lab"


def _select(lab: Path, selector: str) -> int:
    """The Worker selects `selector`; the line of its value."""
    job = lab / "bases" / "train" / "pytorchjob.yaml"
    text = job.read_text()
    assert WORKER in text
    job.write_text(text.replace(WORKER, WORKER + f"          nodeSelector: {{{selector}}}\n"))
    return job.read_text().splitlines().index(f"          nodeSelector: {{{selector}}}") + 1


@pytest.mark.parametrize("paths", [(), ("deploy",)])
def test_a_base_nodeselector_no_pool_has_is_reported_at_the_base(lab: Path, paths: tuple[str, ...]) -> None:
    line = _select(lab, "gpu-model: h100")
    if paths:
        assert invoke("generate", "inventory.yaml", "-o", "deploy").exit_code == 0
    (tg103,) = [f for f in run("check", "inventory.yaml", *paths) if f["rule"] == "TG103"]
    assert (tg103["file"], tg103["line"]) == ("bases/train/pytorchjob.yaml", line)


def test_without_paths_a_finding_in_the_generated_tree_is_placed_at_the_inventory(lab: Path) -> None:
    _select(lab, "node-type: cpu")  # the GPU pool lacks the label, the CPU pool the zone and GPUs
    findings = run("check", "inventory.yaml")
    (tg103,) = [f for f in findings if f["rule"] == "TG103"]
    lines = (lab / "inventory.yaml").read_text().splitlines()
    assert tg103["file"] == "inventory.yaml" and lines[int(str(tg103["line"])) - 1].strip() == "- name: train"
    assert "(in the generated clusters/lab/workloads/ml-demo/train/placement-patch.yaml:" in str(tg103["message"])
    for f in findings:  # every cited file exists once the run is over
        assert os.path.isfile(str(f["file"])), f


def test_may_split_of_a_hand_written_job_is_at_its_first_group_s_template() -> None:
    findings = run("check", str(ROOT / "fixtures/lab/inventory.yaml"), str(ROOT / "fixtures/incident/broken"))
    (tg102,) = [f for f in findings if f["rule"] == "TG102"]
    coordinator = (ROOT / "fixtures/incident/broken/coordinator.yaml").read_text().splitlines()
    line = int(str(tg102["line"]))
    assert str(tg102["file"]).endswith("coordinator.yaml") and line != 1
    assert coordinator[line - 2].strip() == "template:"  # the template's own mapping starts here
