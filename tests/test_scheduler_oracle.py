"""topogate's placement verdicts against the real kube-scheduler (tests/oracle_support.py says
how): every placement fixture, then generated inventories and jobs.

TOPOGATE_ORACLE_CASES sets how many generated cases run (default below: sized for `make test` on
two cores), TOPOGATE_ORACLE_SEED their seed. Every disagreement is listed, each naming the case,
the trial (plain or split, its seed, whether pods were already running) and both answers.
"""

from __future__ import annotations

import os

import pytest
from cluster_support import Cluster, Scheduler
from oracle_cases import fixture_cases, generated_cases
from oracle_support import Api, run_cases

DEFAULT_CASES = 100
# Disagreements found and not fixed yet, by case: each must still disagree (a fix removes it).
KNOWN = {
    # g0 follows every pod of the job, g1 follows g0, both on the zone key: g1 cannot start first
    # and every later pod follows the first g0 pod, so the job never splits; topogate's units do
    # not see that the whole set trails one first pod, and call it may-split (a false TG102).
    "generated-2026-281",
}


def _report(name: str, report: object, capsys: pytest.CaptureFixture[str]) -> None:
    with capsys.disabled():
        print(f"\nscheduler oracle, {name}: {report.line()}")  # type: ignore[attr-defined]
        for s in report.stranded[:5]:  # type: ignore[attr-defined]
            print(f"  left Pending by the scheduler's choice: {s}")


def test_fixtures_agree_with_the_real_scheduler(kube_cluster: Cluster, kube_scheduler: Scheduler,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    cases = fixture_cases()
    assert len(cases) >= 10, [c.name for c in cases]
    report = run_cases(Api(kube_cluster), cases, runs=3, seed=1)
    _report("fixtures", report, capsys)
    assert report.disagreements == [], "\n".join(report.disagreements)
    assert report.verdicts.get("colocated") and report.verdicts.get("unschedulable") and report.verdicts.get("may-split")


def test_generated_cases_agree_with_the_real_scheduler(kube_cluster: Cluster, kube_scheduler: Scheduler,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    count = int(os.environ.get("TOPOGATE_ORACLE_CASES", DEFAULT_CASES))
    seed = int(os.environ.get("TOPOGATE_ORACLE_SEED", "2026"))
    report = run_cases(Api(kube_cluster), generated_cases(count, seed), runs=2, seed=seed)
    _report(f"{count} generated cases (seed {seed})", report, capsys)
    open_cases = {d.split(" ", 1)[0] for d in report.disagreements}
    new = [d for d in report.disagreements if d.split(" ", 1)[0] not in KNOWN]
    assert new == [], "\n".join(new)
    if count >= DEFAULT_CASES * 3 and seed == 2026:
        assert open_cases == KNOWN, "a known disagreement is gone: remove it from KNOWN"
