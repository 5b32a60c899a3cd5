"""`check --rendered OUT` works out OUT's drift in a forked child while it reads the builds
(check.run._DriftBeside): the report is the one worked out in this process, in every format,
whether the child answers, fails, or cannot be started; and a --rendered tree check refuses
is refused the same way."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import child_answers, invoke, reports

from topogate.check import run
from topogate.core import forked

ROOT = Path(__file__).resolve().parents[2]
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"
GOLDEN = ROOT / "fixtures" / "golden" / "multi"
FORMATS = ("text", "json", "sarif")


@pytest.fixture
def drifted(tmp_path: Path) -> Path:
    """A copy of the generated tree with one file edited and one removed: two drift findings."""
    out = tmp_path / "out"
    shutil.copytree(GOLDEN, out)
    policy = next(p for p in sorted((out / "clusters").rglob("*.yaml")) if "kind: CiliumNetworkPolicy" in p.read_text())
    policy.write_text(policy.read_text().replace("port: ", "port:  ", 1))
    next(p for p in sorted((out / "monitoring").rglob("*.yaml"))).unlink()
    return out


def _reports(out: Path) -> list[tuple[int, str]]:
    return reports([str(MULTI), "--rendered", str(out), str(GOLDEN / "clusters")], FORMATS)


def test_the_drift_worked_out_beside_is_the_one_worked_out_here(drifted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(run.os, "cpu_count", lambda: 1)  # no child: worked out here
        here = _reports(drifted)
    answered = child_answers(monkeypatch)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    assert _reports(drifted) == here
    assert answered == [True] * len(FORMATS)  # the child's answer was the one used
    assert all(code == 1 for code, _ in here) and "TG0" in here[0][1]  # the drift is reported


def test_a_child_that_fails_changes_nothing(drifted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with monkeypatch.context() as m:
        m.setattr(run.os, "cpu_count", lambda: 1)
        here = _reports(drifted)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    real = forked.Child.start
    failed: list[bool] = []

    def dies(cls: type[forked.Child], work: object) -> forked.Child | None:
        """A real child whose work raises: its answer is None."""
        child = real(lambda: 1 / 0)
        failed.append(child is not None)
        return child

    monkeypatch.setattr(forked.Child, "start", classmethod(dies))
    assert _reports(drifted) == here
    assert failed == [True] * len(FORMATS)


def test_a_special_file_in_out_is_refused_as_before(drifted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = next(p for p in sorted((drifted / "clusters").rglob("*.yaml")))
    target.unlink()
    os.mkfifo(target)
    monkeypatch.setattr(run.os, "cpu_count", lambda: 2)
    r = invoke("check", str(MULTI), "--rendered", str(drifted), str(GOLDEN / "clusters"))
    assert r.exit_code == 2, r.stdout
    assert "is not a regular file, where generate writes a regular file" in r.stdout + (r.stderr or "")
