"""Real upstream inputs (issue 9, item 7): every Kubeflow trainer / mpi-operator / JobSet job
example and every YAML block of the NetworkPolicy recipes goes through check and trace without
a traceback. Runs only where the upstream checkouts exist (/work/upstream); nothing upstream is
copied into this repository (see tests/upstream_support.py). Cilium's examples/policies are not
checked out here: tests/test_upstream_semantics.py holds our own cases of their constructs."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_support import UPSTREAM, Tally, job_files, recipe_blocks, workloads

from topogate.check import run_check
from topogate.manifests import collect
from topogate.trace import trace

pytestmark = pytest.mark.skipif(not UPSTREAM.is_dir(), reason="no upstream checkouts in /work/upstream")
LAB = str(Path(__file__).resolve().parents[1] / "fixtures" / "lab" / "inventory.yaml")


def test_upstream_examples_never_crash(tmp_path: Path) -> None:
    files = job_files() + recipe_blocks(tmp_path)
    assert len(files) > 50, "the upstream checkouts moved: update tests/upstream_support.py"
    tally = Tally()
    for f in files:
        tally.run(f"check {f}", run_check, LAB, [str(f)])
        try:
            objs = collect([str(f)])
        except Exception:  # noqa: BLE001 - check above already reported an unreadable file
            continue
        for spec in workloads(f)[:2]:
            for port in ("23456", "53/UDP", None):
                tally.run(f"trace {f} {spec} -> world", trace, objs, spec, "world", port)
                tally.run(f"trace {f} pod -> {spec}", trace, objs, "default:app=x", spec, port)
    print(f"upstream: {len(files)} files, {tally.runs} runs, {len(tally.crashes)} crashes")
    assert tally.crashes == []
