"""Kustomize roots are built concurrently, at most one per CPU, and collected in PATH order.

Real kubectl, wrapped by a script that logs when each build starts and ends (the only way to
see overlap from outside)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hostile_support import make_repo

from topogate.sources import manifests
from topogate.sources.kustomization import GOGC, GOMAXPROCS, kubectl


def _roots(repo: Path, n: int) -> list[str]:
    out = []
    for i in range(n):
        d = repo / f"overlay-{i}"
        d.mkdir()
        (d / "kustomization.yaml").write_text(f"resources: [../bases/train]\nnameSuffix: -s{i}\n")
        out.append(str(d))
    return out


def _summary(objs: list[manifests.K8sObject]) -> list[tuple[str, str, int, int, str]]:
    return [(o.ref, o.pos.file, o.pos.line, o.pos.column, o.built_from) for o in objs]


def test_builds_overlap_and_order_is_that_of_the_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    roots = _roots(repo, 4)
    log = tmp_path / "log"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f"#!/bin/sh\necho start >> {log}\n{kubectl()} \"$@\"\nrc=$?\nsleep 0.3\n"
                       f"echo end >> {log}\nexit $rc\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TOPOGATE_KUBECTL", str(wrapper))

    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    serial = manifests.collect(roots)
    assert log.read_text().split() == ["start", "end"] * 4  # one at a time: never overlapping
    log.unlink()

    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    parallel = manifests.collect(roots)
    events = log.read_text().split()
    running = peak = 0
    for e in events:
        running += 1 if e == "start" else -1
        peak = max(peak, running)
    assert peak == 2  # two at a time, never more
    assert _summary(parallel) == _summary(serial)
    assert [o.name for o in parallel] == ["train-s0", "train-s1", "train-s2", "train-s3"]


def test_a_failing_build_is_reported_for_the_first_failing_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    roots = _roots(repo, 3)
    (Path(roots[2]) / "kustomization.yaml").write_text("resources: [../bases/train]\nnameSuffix: [x]\n")
    shutil.copy(Path(roots[2]) / "kustomization.yaml", Path(roots[1]) / "kustomization.yaml")
    with pytest.raises(manifests.ManifestError) as err:
        manifests.collect(roots)
    assert "overlay-1/kustomization.yaml:1:1: kubectl kustomize failed" in str(err.value)


def test_the_build_runs_with_its_collector_tuned_below_the_memory_limit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """kubectl is told GOGC (fewer collections: less CPU beside check's own work), a soft
    GOMEMLIMIT of half the address-space limit, so the collector works harder before the limit
    kills the build, and one CPU (GOMAXPROCS: one build runs per CPU); it runs at a lower
    priority (NICE) than topogate; and the build's output is what it was."""
    repo = make_repo(tmp_path)
    roots = _roots(repo, 1)
    plain = _summary(manifests.collect(roots))
    log = tmp_path / "log"
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f"#!/bin/sh\necho \"$GOGC $GOMEMLIMIT $GOMAXPROCS $(nice)\" >> {log}\nexec {kubectl()} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TOPOGATE_KUBECTL", str(wrapper))
    monkeypatch.setenv("TOPOGATE_CHILD_MEMORY_MB", "2048")
    monkeypatch.setenv("GOGC", "off")  # ours, not the caller's: the child's environment is allow-listed
    monkeypatch.setenv("GOMAXPROCS", "8")
    assert _summary(manifests.collect(roots)) == plain
    assert log.read_text().split() == [GOGC, str(1024 * 1024 * 1024), GOMAXPROCS, str(min(19, os.nice(0) + 10))]
    assert GOGC != "off"
