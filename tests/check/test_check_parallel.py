"""`check` analyses clusters in a forked child beside this process (analysis.map.build): its
report is the serial run's, byte for byte, in every format, whether the child answers or not.

The path is switched on (it is off by default: build.PARALLEL says why) and its threshold set
to nothing so the fixtures, a few objects each, take the parallel path;
the fixtures chosen have two clusters or more to analyse, warnings and errors among them."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import child_answers, reports

from topogate.analysis.map import build
from topogate.core import forked

ROOT = Path(__file__).resolve().parents[2]
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"
CASES = [
    ("multi-golden", [str(MULTI), "--rendered", str(ROOT / "fixtures/golden/multi"),
                      str(ROOT / "fixtures/golden/multi")]),
    ("two-clusters", [str(ROOT / "fixtures/trace/two-clusters/inventory.yaml"),
                      str(ROOT / "fixtures/trace/two-clusters")]),
    ("multi-with-cases", [str(MULTI), str(ROOT / "fixtures/golden/multi/clusters"),
                          str(ROOT / "fixtures/cases/mpi-ssh-blocked.yaml"),
                          str(ROOT / "fixtures/cases/boundary/mpi-low-ports.yaml")]),
]
FORMATS = ("text", "json", "sarif")


def _reports(args: list[str]) -> list[tuple[int, str]]:
    return reports(args, FORMATS)


@pytest.mark.parametrize("name,args", CASES, ids=[c[0] for c in CASES])
def test_parallel_report_is_the_serial_report(name: str, args: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(build, "PARALLEL_FROM", 10**12)
    serial = _reports(args)
    answered = child_answers(monkeypatch)
    monkeypatch.setattr(build, "PARALLEL", True)
    monkeypatch.setattr(build, "PARALLEL_FROM", 0)
    parallel = _reports(args)
    assert answered and all(answered), "the child worked out its clusters"
    assert parallel == serial
    assert any(code != 2 for code, _ in serial)  # a report, not a refusal of the input


def test_a_child_that_does_not_answer_changes_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    """The child's clusters are worked out here instead (killed at once: no answer)."""
    args = CASES[0][1]
    monkeypatch.setattr(build, "PARALLEL_FROM", 10**12)
    serial = _reports(args)
    real = forked.Child.result
    monkeypatch.setattr(forked.Child, "result", lambda self, timeout: real(self, 0) and None)
    monkeypatch.setattr(build, "PARALLEL", True)
    monkeypatch.setattr(build, "PARALLEL_FROM", 0)
    assert _reports(args) == serial
