"""A clean `check --rendered` of a generated tree analyses without tracing any built object back
to its source (that parses source files, the cost issue 11 measured), and decides an object's
cluster from the kustomization root it was built from."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from topogate.analysis.map.clusters import _cluster_from_path
from topogate.check.run import run_check
from topogate.core.position import Position
from topogate.generators import render_tree
from topogate.k8s.objects import K8sObject
from topogate.sources import positions, sourceindex
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

ROOT = Path(__file__).resolve().parents[2]


def _bench_repo(tmp: Path, jobs: int) -> None:
    """The synthetic repository of benchmarks/e2e.py (clean by construction)."""
    spec = importlib.util.spec_from_file_location("e2e_bench", ROOT / "benchmarks" / "e2e.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up while being defined
    try:
        spec.loader.exec_module(mod)
    finally:
        del sys.modules[spec.name]
    mod.build_repo(tmp, jobs)


def test_clean_check_traces_no_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _bench_repo(tmp_path, 6)
    monkeypatch.chdir(tmp_path)
    inv = load_inventory("inventory.yaml")
    writer.write_tree("out", render_tree(inv, str((tmp_path / "out").resolve())))
    asked: list[tuple[str, str, str]] = []
    real = sourceindex.SourceIndex.find

    def counting(self: sourceindex.SourceIndex, key: tuple[str, str, str]):  # type: ignore[no-untyped-def]
        asked.append(key)
        return real(self, key)

    monkeypatch.setattr(sourceindex.SourceIndex, "find", counting)
    outcome = run_check("inventory.yaml", ["out/clusters"], rendered="out")
    assert outcome.exit_code == 0 and not outcome.result.findings
    assert len(outcome.result.jobs) == 6
    assert asked == []


class _Unread(positions.Deferred):
    """A lazy position (as built objects have) that fails the test when read."""

    def compute(self) -> Position:
        raise AssertionError("the object's source position was read")


def test_build_root_decides_the_cluster_before_the_source_file() -> None:
    names = ["c0", "c1"]
    built = K8sObject({"kind": "CiliumNetworkPolicy"}, _Unread(), built_from="repo/clusters/c1")
    assert _cluster_from_path(built, names) == "c1"
    # A root that names no cluster (above clusters/): the object's own file decides.
    above = K8sObject({"kind": "CiliumNetworkPolicy"}, Position("repo/clusters/c0/np.yaml", 1, 1),
                      built_from="repo/clusters")
    assert _cluster_from_path(above, names) == "c0"
    read = K8sObject({"kind": "NetworkPolicy"}, Position("x/clusters/c1/np.yaml", 1, 1))
    assert _cluster_from_path(read, names) == "c1"
