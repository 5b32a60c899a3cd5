"""`check PATH...` analyses each cluster as soon as the builds its path places in it are read
(topogate.check.pipeline): the report is the one the read-everything-first run gives, byte for
byte, in every format, whichever builds finish first; a cluster worked out ahead from objects
that are not, in the end, all it is analysed from is worked out again.

The serial side is the same run with nothing worked out ahead (`Ahead.cluster` a no-op)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from conftest import reports

from topogate.analysis.map import build
from topogate.sources.kustomization import kubectl

ROOT = Path(__file__).resolve().parents[2]
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"
GOLDEN = ROOT / "fixtures" / "golden" / "multi"
# (name, arguments, clusters whose share worked out ahead is used, those worked out again)
CASES = [
    # OUT whole: its Argo CD Applications (read first) apply the clusters' roots, rendered after
    # the read: nothing is worked out ahead
    ("multi-golden", [str(MULTI), "--rendered", str(GOLDEN), str(GOLDEN)], 0, 0),
    ("multi-clusters", [str(MULTI), str(GOLDEN / "clusters")], 2, 0),
    # files after the clusters' roots: their jobs and policies join (or apply to) the clusters
    ("multi-with-cases", [str(MULTI), str(GOLDEN / "clusters"), str(ROOT / "fixtures/cases/mpi-ssh-blocked.yaml"),
                          str(ROOT / "fixtures/cases/boundary/mpi-low-ports.yaml")], 0, 2),
]
FORMATS = ("text", "json", "sarif")


def _reports(args: list[str]) -> list[tuple[int, str]]:
    return reports(args, FORMATS)


def _counted(monkeypatch: pytest.MonkeyPatch) -> dict[bool, int]:
    taken = {True: 0, False: 0}
    real = build.Ahead.take

    def take(self: build.Ahead, *args: Any) -> Any:
        wasted = self.wasted
        got = real(self, *args)
        if got is not None or self.wasted > wasted:
            taken[got is not None] += 1  # used, or worked out ahead and again
        return got

    monkeypatch.setattr(build.Ahead, "take", take)
    return taken


def _serial(args: list[str], monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, str]]:
    with monkeypatch.context() as m:
        m.setattr(build.Ahead, "cluster", lambda self, name, objects: None)
        return _reports(args)


@pytest.mark.parametrize("name,args,used,again", CASES, ids=[c[0] for c in CASES])
def test_pipelined_report_is_the_serial_report(name: str, args: list[str], used: int, again: int,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    serial = _serial(args, monkeypatch)
    taken = _counted(monkeypatch)
    assert _reports(args) == serial
    assert taken == {True: used * len(FORMATS), False: again * len(FORMATS)}
    assert any(code != 2 for code, _ in serial)  # a report, not a refusal of the input


def test_builds_finishing_out_of_order_change_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first cluster's root builds last (a slower kubectl for it): the clusters after it
    are read, and worked out, only in the order of the read, and the report is the same."""
    args = CASES[1][1]
    serial = _serial(args, monkeypatch)
    log = tmp_path / "log"
    wrapper = tmp_path / "kubectl"
    first = os.path.realpath(GOLDEN / "clusters" / "gpu-east")
    wrapper.write_text(f"#!/bin/sh\ncase \"$*\" in *{first}*) sleep 1;; esac\n"
                       f"{kubectl()} \"$@\"\nrc=$?\necho \"$*\" >> {log}\nexit $rc\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TOPOGATE_KUBECTL", str(wrapper))
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    taken = _counted(monkeypatch)
    assert _reports(args) == serial
    assert taken == {True: 2 * len(FORMATS), False: 0}
    ends = log.read_text().splitlines()
    assert first in ends[1] and first not in ends[0], ends  # it did finish after the other


def test_a_shape_checked_ahead_is_not_checked_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """The read checks each unit's shapes as it reads them, before handing them to the
    pipeline, and not again after its last build: the tail of a check, where one CPU waits, does
    not walk every object a second time. Every object is still checked once."""
    from topogate.k8s import shapes

    seen: list[int] = []
    real = shapes.check

    def check(obj: Any) -> None:
        seen.append(id(obj))  # the objects stay alive to the end of the run: ids are theirs
        real(obj)

    monkeypatch.setattr(shapes, "check", check)
    taken = _counted(monkeypatch)
    reports(CASES[1][1], ("text",))
    assert taken[True] == 2  # both clusters were worked out ahead
    assert len(seen) > 20 and len(seen) == len(set(seen))
