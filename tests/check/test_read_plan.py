"""`check` decides its read before any build (topogate.check.plan): what to read, each root's
build whole or in parts, what a --changed-since run leaves out, and which cluster each unit
belongs to; the reader below it (topogate.sources.manifests) is handed that as data.

Real git in a scratch repository and the real `kubectl kustomize`, wrapped by a script that
logs each build it is asked for."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import test_changed_since as changed_since
from conftest import git
from test_changed_since import built, check, edit

from topogate.check.plan import plan_read
from topogate.safeio.repopaths import Roots
from topogate.sources import kustomization, manifests, split_build
from topogate.sources.inventory import load_inventory
from topogate.sources.kustomization import check_tree

REPO = Path(__file__).resolve().parents[2]
MULTI = REPO / "fixtures" / "multi"  # gpu-east (llama-ft, bert-mpi), gpu-west (resnet, gpt-sft)


# The scratch repository and the build log of the --changed-since tests, and their helpers.
repo = changed_since.repo
builds = changed_since.builds


def _shown(units: object) -> list[str]:
    return [os.path.relpath(u.path) for u in units]  # type: ignore[attr-defined]


# --- the plan, before any build ----------------------------------------------------------------

def test_a_narrowed_plan_says_what_to_build_and_leave_out_before_any_build(repo: Path, builds: Path) -> None:
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")  # gpu-west's
    plan = plan_read(["deploy/clusters"], "inventory.yaml", since="main", names=("gpu-east", "gpu-west"),
                     paths=["deploy/clusters"])
    assert built(builds) == []  # planned, nothing built
    assert [os.path.relpath(d) for d in plan.reading.builds] == ["deploy/clusters/gpu-west"]
    assert plan.reading.builds[Path("deploy/clusters/gpu-west")] == 1  # whole: a small root
    assert plan.only == ("gpu-west",)
    wanted = plan.bases_to_read()
    assert wanted is not None and not wanted("gpu-east", "bases/llama-ft") and wanted("gpu-west", "bases/resnet")
    assert plan.left_unread == 1  # counted: the load is not the whole inventory
    assert {c: _shown(us) for c, us in plan.by_cluster().items()} == {"gpu-west": ["deploy/clusters/gpu-west"]}
    with plan.start() as pending:  # executed: the one build the plan named
        objects = pending.result()
    assert built(builds) == ["deploy/clusters/gpu-west"]
    assert {o.name for o in objects if o.kind == "JobSet"} == {"resnet"}


def test_each_unit_has_its_cluster_in_the_plan_where_the_path_tells_it(repo: Path, builds: Path) -> None:
    (repo / "policies").mkdir()
    (repo / "policies" / "shared.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    plan = plan_read(["deploy/clusters", "policies"], "inventory.yaml")
    assert {c: _shown(us) for c, us in plan.by_cluster().items()} == {None: [  # the names not known yet
        "deploy/clusters/gpu-east", "deploy/clusters/gpu-west", "policies/shared.yaml"]}
    plan.bind(load_inventory("inventory.yaml"))
    assert {c: _shown(us) for c, us in plan.by_cluster().items()} == {
        "gpu-east": ["deploy/clusters/gpu-east"], "gpu-west": ["deploy/clusters/gpu-west"],
        None: ["policies/shared.yaml"]}  # of no known cluster: may hold any cluster's objects
    assert built(builds) == []


def test_the_reader_reads_the_units_it_is_handed(repo: Path, builds: Path) -> None:
    """sources/ asks nobody which units to read: `prepare` takes them as data; a PATH none of
    whose units is kept is left out, not reported empty."""
    found = manifests.find(["deploy/clusters", "bases/resnet"], ["inventory.yaml"])
    east = next(u.path for u in found.units if u.path.name == "gpu-east")
    reading = manifests.prepare(found, {east})
    assert [raw for raw, _ in reading.per_path] == ["deploy/clusters"]
    assert list(reading.builds) == [east]
    empty: list[str] = []
    with manifests.Collecting([], (), reading) as pending:
        objects = pending.result(empty=empty)
    assert empty == [] and built(builds) == ["deploy/clusters/gpu-east"]
    assert {o.name for o in objects if o.kind == "PyTorchJob"} == {"llama-ft"}


# --- the split decided where the builds are planned, not in the safety walk ----------------------

def _composition(root: Path, n: int) -> Path:
    for i in range(n):
        d = root / f"e{i:02d}"
        d.mkdir(parents=True)
        (d / "cm.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n")
        (d / "kustomization.yaml").write_text("resources: [cm.yaml]\n")
    (root / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- e{i:02d}\n" for i in range(n)))
    return root


def test_the_safety_walk_decides_no_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = _composition(tmp_path / "r", 4)
    asked: list[int] = []
    real = split_build.decide

    def decide(*args: object) -> object:
        asked.append(1)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(split_build, "decide", decide)
    tree = check_tree(root, Roots.of([str(root)]))  # what an inventory base or a GitOps render asks
    assert asked == [] and tree.parts == ()
    assert kustomization.decide_split(tree).parts == ("e00", "e01", "e02", "e03") and asked == [1]


# --- the inventory read as few times as the plan needs -------------------------------------------

def test_a_fallback_with_no_base_left_unread_reads_the_inventory_twice(
        repo: Path, builds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Once ahead for the cluster names, once loaded; the narrowed read escapes (llama-ft, gpu-east's,
    sits among gpu-west's manifests), but the load left no base unread (the walk never met
    gpu-east's), so it is the whole inventory already: not loaded a third time."""
    extra = repo / "extra" / "clusters" / "gpu-west"
    extra.mkdir(parents=True)
    (extra / "job.yaml").write_text((repo / "bases/llama-ft/job.yaml").read_text())
    git(repo, "add", "-N", "extra")
    inventory = os.path.realpath("inventory.yaml")
    opened: list[str] = []
    real_open = os.open

    def counting(path: object, *args: object, **kwargs: object) -> int:
        if isinstance(path, (str, os.PathLike)) and os.path.realpath(path) == inventory:
            opened.append(os.fspath(path))
        return real_open(path, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", counting)
    code, out, err = check("inventory.yaml", "deploy/clusters/gpu-west", "extra", "--changed-since", "main")
    assert "PyTorchJob/ml-team/llama-ft is among cluster gpu-west's manifests" in err and code == 1, out + err
    assert len(opened) == 2
    opened.clear()
    full = check("inventory.yaml", "deploy/clusters/gpu-west", "extra")
    assert len(opened) == 1
    assert (full[0], full[1].rsplit("\n", 2)[0]) == (code, out.rsplit("\n", 2)[0])  # the same report
