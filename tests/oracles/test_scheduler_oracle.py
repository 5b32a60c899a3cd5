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
from oracle_cases import fixture_cases
from oracle_generate import generated_cases
from oracle_support import Api, bound_once, run_cases

DEFAULT_CASES = 25  # richer cases than before (1-3 jobs each): about 2 s a case on two cores
# Disagreements found and not fixed yet, by case: each must still disagree (a fix removes it).
KNOWN: set[str] = set()


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
    cases = generated_cases(count, seed)
    only = os.environ.get("TOPOGATE_ORACLE_ONLY")  # a comma-separated list of case numbers, to look at some
    if only:
        cases = [cases[int(i)] for i in only.split(",")]
    report = run_cases(Api(kube_cluster), cases, runs=2, seed=seed)
    _report(f"{count} generated cases (seed {seed})", report, capsys)
    open_cases = {d.split(" ", 1)[0] for d in report.disagreements}
    new = [d for d in report.disagreements if d.split(" ", 1)[0] not in KNOWN]
    assert new == [], "\n".join(new)
    if count >= DEFAULT_CASES * 3 and seed == 2026:
        assert open_cases == KNOWN, "a known disagreement is gone: remove it from KNOWN"


def test_dra_claims_are_allocated_by_the_real_scheduler(kube_cluster: Cluster, kube_scheduler: Scheduler) -> None:
    """The DRA fixtures' verdicts rest on the scheduler allocating the claimed devices, from
    ResourceSlices created as plain objects (no driver runs): each bound pod's claim is allocated
    on its node, and the pod the devices cannot hold waits for them (the DynamicResources filter),
    not for anything else."""
    api = Api(kube_cluster)
    by_name = {c.name: c for c in fixture_cases()}
    over = bound_once(api, by_name["placement/dra-over-capacity"], "dra-over")
    bound = [p for p in over.pods if p["spec"].get("nodeName")]
    waiting = [p for p in over.pods if not p["spec"].get("nodeName")]
    assert len(bound) == 2 and len(waiting) == 1, [(p["metadata"]["name"], p["spec"].get("nodeName")) for p in over.pods]
    assert "cannot allocate all claims" in str(waiting[0]["status"]), waiting[0]["status"]
    assert {c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
            for c in over.claims if c.get("status", {}).get("allocation")} == {p["spec"]["nodeName"] for p in bound}
    follows = bound_once(api, by_name["placement/dra-follows-devices"], "dra-follows")
    assert all(p["spec"].get("nodeName") for p in follows.pods), follows.pods
    workers = [p for p in follows.pods if "worker" in p["metadata"]["name"]]
    assert {follows.zone_of[p["spec"]["nodeName"]] for p in workers} == {"zone-b"}
    assert all(c.get("status", {}).get("allocation") for c in follows.claims)
