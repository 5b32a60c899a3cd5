"""Messages a user reads: no doubled names, agreeing plurals, no errno, a reason for every
verdict, severities that follow the effect, and a following job's single zone choice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
LAB = str(ROOT / "fixtures" / "lab" / "inventory.yaml")
RULES = ROOT / "fixtures" / "rules"


def json_findings(*args: str) -> list[dict[str, object]]:
    return list(json.loads(run_cli("check", *args, "--format", "json")[1])["findings"])


def test_boundary_probe_is_named_once_and_default_allow_says_why(tmp_path: Path) -> None:
    # Only the GPU job, no policy at all: the probe pod of the other network zone reaches it.
    text = (RULES / "TG107-opens-boundary" / "fail" / "manifests.yaml").read_text()
    (tmp_path / "m.yaml").write_text(text.split("\n---\n", 1)[0] + "\n")
    msgs = [str(f["message"]) for f in json_findings(LAB, str(tmp_path / "m.yaml")) if f["rule"] == "TG107"]
    assert msgs
    for m in msgs:
        assert "network zone general (network zone general)" not in m
        assert "(Master) (network zone" not in m
        assert "allowed." not in m
        stand_in = "a pod of network zone general in namespace ml-demo"
        assert f"no policy selects PyTorchJob/ml-demo/train (Master) or {stand_in}: " \
               "allowed by default" in m or f"no policy selects {stand_in} or " \
               "PyTorchJob/ml-demo/train (Master): allowed by default" in m


def test_plurals_agree() -> None:
    from topogate.core.words import plural

    assert (plural(1, "GPU"), plural(2, "GPU"), plural(0, "pod")) == ("1 GPU", "2 GPUs", "0 pods")


def test_one_gpu_capacity_line(tmp_path: Path) -> None:
    # A job of one pod with one GPU: the capacity line of explain says "1 GPU".
    text = (RULES / "TG110-unprotected-job" / "pass" / "manifests.yaml").read_text()
    assert "      replicas: 1\n" in text and "replicas: 4" in text
    (tmp_path / "m.yaml").write_text(text.replace("replicas: 4", "replicas: 0"))
    code, out, _ = run_cli("explain", LAB, "train", str(tmp_path / "m.yaml"))
    assert "needs 1 GPU;" in out and "1 GPUs" not in out


@pytest.mark.parametrize("args", [["check", "nope.yaml"], ["generate", "nope.yaml", "-o", "x"],
                                  ["check", LAB, "nope/"]])
def test_no_errno_in_messages(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(*args)
    text = out + err
    assert code == 2 and "Errno" not in text and "no such file or directory" in text.lower()


def test_output_file_that_cannot_be_written_is_one_line(tmp_path: Path) -> None:
    code, _, err = run_cli("check", LAB, str(ROOT / "fixtures" / "incident" / "fixed"),
                       "-o", str(tmp_path / "missing" / "r.md"))
    # refused before the analysis runs, so nothing is printed first
    assert code == 2 and err.startswith(f"topogate: cannot write the report to {tmp_path / 'missing' / 'r.md'}")
    assert "Errno" not in err and "Traceback" not in err and err.count("\n") == 1


def test_spread_severity_follows_the_effect(tmp_path: Path) -> None:
    fail = RULES / "TG105-spread-splits" / "fail" / "manifests.yaml"
    (split,) = [f for f in json_findings(LAB, str(fail)) if f["rule"] == "TG105"]
    assert split["severity"] == "error"
    # maxSkew covers all 4 workers and only zone-a has GPUs: it splits nothing today.
    (tmp_path / "m.yaml").write_text(fail.read_text().replace("- maxSkew: 1", "- maxSkew: 8"))
    (latent,) = [f for f in json_findings(LAB, str(tmp_path / "m.yaml")) if f["rule"] == "TG105"]
    assert latent["severity"] == "warning" and "splits nothing" in str(latent["message"])
    assert run_cli("check", LAB, str(tmp_path / "m.yaml"))[0] == 0
    assert run_cli("check", LAB, str(tmp_path / "m.yaml"), "--strict")[0] == 1


@pytest.fixture()
def following_mpijob(tmp_path: Path) -> str:
    shutil.copytree(ROOT / "fixtures" / "multi", tmp_path / "multi")
    inv = tmp_path / "multi" / "inventory.yaml"
    text = inv.read_text()
    pinned = "  placement: pin\n  zone: us-east-1a\n  scheduler: kueue\n  queue: mpi"
    assert pinned in text
    inv.write_text(text.replace(pinned, "  placement: follow\n  scheduler: kueue\n  queue: mpi"))
    return str(inv)


def test_following_job_names_its_zone_choice_once(following_mpijob: str) -> None:
    _, out, _ = run_cli("check", following_mpijob)
    block = [ln for ln in out.split("MPIJob/ml-team/bert-mpi", 1)[1].split("\n")
             if not ln.startswith("  placed by Kueue")]  # gpu-east also hands the job to Kueue
    assert block[0].endswith("colocated (the whole job in one zone of: us-east-1a, us-east-1b), schedulable")
    assert block[1:3] == ["  Launcher x1", "  Worker x3 (4 GPU/pod)"]
    _, diagram, _ = run_cli("explain", following_mpijob, "bert-mpi", "--format", "mermaid")
    # one zone box (the choice), inside the one network-zone box the job's pods share
    assert diagram.count("Launcher ×1") == 1 and diagram.count("subgraph z") == 1
    assert diagram.count("subgraph n") == 1
    assert 'subgraph z0["one zone of: us-east-1a, us-east-1b"]' in diagram
    _, md, _ = run_cli("check", following_mpijob, "--format", "markdown")
    assert "| MPIJob/ml-team/bert-mpi | gpu-east | one of us-east-1a, us-east-1b |" in md
