"""The egress audit against a real moto_server over HTTP on 127.0.0.1 (no AWS).

moto returns the seeded answers but ignores Filter and GroupBy, so every test also asserts on
the requests topogate put on the wire (captured with botocore's `before-send` event).
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from decimal import Decimal
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from topogate.audit.egress import (
    NO_SPLIT_CAUSE,
    UNKNOWN_CAUSE,
    Query,
    cost_and_usage_request,
    run_audit,
)
from topogate.sources.inventory import load_inventory

# The moto_server fixtures live in tests/audit_support.py (conftest.py is shared).
pytest.register_assert_rewrite("audit_support")
pytest_plugins = ["audit_support"]
from audit_support import AUDIT_FIXTURES, FAKE_KEY_ID, FAKE_SECRET, Capture, Moto, page, result  # noqa: E402
from conftest import invoke  # noqa: E402

D = dt.date.fromisoformat
KEY = "topogate.dev/cluster"
START, END = D("2026-11-24"), D("2026-11-27")
UT = "DataTransfer-Regional-Bytes"  # us-east-1 bills it without a prefix
INVENTORY = str(AUDIT_FIXTURES / "inventory.yaml")
SPLIT_JOB = "PyTorchJob/ml-team/llama-ft"


def three_pages() -> list[dict]:
    """A night with traffic: three pages; 2026-11-25 is split across pages 2 and 3; the last
    day is Estimated; untagged resources (`key$`) and an unknown tag value also spent."""
    return [
        page([result("2026-11-24", [(f"{KEY}$gpu-east", UT, "2.4130000001", "241.30000001"),
                                    (f"{KEY}$", UT, "0.52", "52")])], token="p2"),
        page([result("2026-11-25", [(f"{KEY}$gpu-east", UT, "14.0021", "1400.21")])], token="p3"),
        page([result("2026-11-25", [(f"{KEY}$gpu-east", "USE1-DataTransfer-Regional-Bytes",
                                     "2.00", "200")]),
              result("2026-11-26", [(f"{KEY}$gpu-east", UT, "3.10", "310"),
                                    (f"{KEY}$batch-legacy", UT, "0.40", "40")], estimated=True)]),
    ]


def test_three_pages_estimated_day_no_data_cluster_over_budget_and_untagged(moto_ce: Moto) -> None:
    moto_ce.seed(*three_pages())
    cap = Capture()
    inv = load_inventory(INVENTORY)
    r = run_audit(inv, START, END, cap.factory(), {"gpu-east": [SPLIT_JOB]})

    # --- what was sent: one query chain (both AWS clusters share the tag key), three pages
    assert r.requests == 3 and r.attempts == 3
    assert cap.operations() == ["GetCostAndUsage"] * 3
    q = Query(KEY, ("gpu-east", "gpu-west"),
              (UT, "USE1-DataTransfer-Regional-Bytes", "USW2-DataTransfer-Regional-Bytes"))
    assert cap.sent[0]["params"] == cost_and_usage_request(q, START, END)
    assert cap.sent[1]["params"] == cost_and_usage_request(q, START, END, "p2")
    assert cap.sent[2]["params"] == cost_and_usage_request(q, START, END, "p3")
    p = cap.sent[0]["params"]
    assert p["TimePeriod"] == {"Start": "2026-11-24", "End": "2026-11-27"}
    assert p["Granularity"] == "DAILY" and p["Metrics"] == ["UnblendedCost", "UsageQuantity"]
    assert p["GroupBy"] == [{"Type": "TAG", "Key": KEY}, {"Type": "DIMENSION", "Key": "USAGE_TYPE"}]
    assert "NextPageToken" not in p
    for s in cap.sent:
        assert urlsplit(s["url"]).hostname == "127.0.0.1"
        # Cost Explorer's endpoint region, although AWS_DEFAULT_REGION is eu-west-1
        auth = s["authorization"]
        auth = auth.decode() if isinstance(auth, bytes) else auth
        assert "/us-east-1/ce/aws4_request" in auth

    # --- what was concluded
    east, west = (next(c for c in r.clusters if c.name == n) for n in ("gpu-east", "gpu-west"))
    assert [(str(d.day), d.gb, d.usd, d.estimated, d.over_budget) for d in east.days] == [
        ("2026-11-24", Decimal("241.30000001"), Decimal("2.4130000001"), False, False),
        ("2026-11-25", Decimal("1600.21"), Decimal("16.0021"), False, True),
        ("2026-11-26", Decimal("310"), Decimal("3.10"), True, False),
    ]
    assert east.over_budget and east.may_split == (SPLIT_JOB,) and SPLIT_JOB in east.cause
    assert west.measured and west.total_gb == 0 and not west.over_budget
    assert west.cause == NO_SPLIT_CAUSE
    assert r.estimated_days == (D("2026-11-26"),)
    assert {(u.tag_value, u.usd) for u in r.unattributed} == {("", Decimal("0.52")),
                                                              ("batch-legacy", Decimal("0.40"))}
    assert r.exit_code == 1 and not r.all_zero
    assert {c.name for c in r.clusters if not c.measured} == {"gke-eu", "aks-we"}
    # every row remembers the page it came from
    assert [row.page for row in r.rows] == [1, 1, 2, 3, 3, 3]


def test_a_night_without_spend_is_within_budget_all_zero_and_says_so(moto_ce: Moto) -> None:
    # Cost Explorer answers every day of a DAILY query, with no groups where nothing was spent
    moto_ce.seed(page([result(d, []) for d in ("2026-11-24", "2026-11-25", "2026-11-26")]))
    cap = Capture()
    r = run_audit(load_inventory(INVENTORY), START, END, cap.factory(), None)
    assert r.requests == 1 and r.exit_code == 0 and r.all_zero
    assert all(c.cause == UNKNOWN_CAUSE for c in r.clusters)


DAY1 = [result("2026-11-24", [(f"{KEY}$gpu-east", UT, "1.00", "100")])]


@pytest.mark.parametrize(("name", "pages", "missing"), [
    ("no results at all", [page([])], "2026-11-24, 2026-11-25, 2026-11-26"),
    ("only the first of three days", [page(DAY1)], "2026-11-25, 2026-11-26"),
    ("an empty last page after a token", [page(DAY1, token="p2"), page([])],
     "2026-11-25, 2026-11-26"),
    ("the last day missing across pages",
     [page(DAY1, token="p2"), page([result("2026-11-25", [])])], "2026-11-26"),
])
def test_an_unanswered_day_is_exit_75_naming_the_days_never_zero(
        moto_ce: Moto, name: str, pages: list[dict], missing: str) -> None:
    moto_ce.seed(*pages)
    res = invoke("audit", "egress", INVENTORY, "--start", "2026-11-24",
                 "--end", "2026-11-27")
    assert res.exit_code == 75, (name, res.stdout)
    assert res.stdout == ""
    (line,) = res.stderr.strip().splitlines()
    assert f"no DAILY result for {missing} of the window 2026-11-24..2026-11-27" in line
    assert f"{len(pages)} Cost Explorer request{'s' if len(pages) > 1 else ''} answered" in line


def _seed_and_cli(moto_ce: Moto, *args: str) -> tuple[int, str, str]:
    moto_ce.seed(*three_pages())
    res = invoke("audit", "egress", INVENTORY, "--start", "2026-11-24",
                 "--end", "2026-11-27", *args)
    return res.exit_code, res.stdout, res.stderr


def test_cli_text_over_budget_exit_1_and_request_count(moto_ce: Moto) -> None:
    code, out, err = _seed_and_cli(moto_ce)
    assert code == 1, err
    assert "2026-11-25" in out and "OVER" in out and "2026-11-26*" in out
    assert "Verdict: OVER BUDGET: gpu-east (1 of 3 days)" in out
    assert "3 Cost Explorer requests answered ($0.03)" in out
    assert "ESTIMATE (not measured)" in out
    # no manifests given: the analysis reads the tree `generate` writes, which pins every job
    assert NO_SPLIT_CAUSE in out and UNKNOWN_CAUSE not in out
    assert FAKE_KEY_ID not in out + err and FAKE_SECRET not in out + err


def test_cli_json_is_traceable_to_the_response(moto_ce: Moto) -> None:
    code, out, _ = _seed_and_cli(moto_ce, "--format", "json")
    assert code == 1
    data = json.loads(out)
    east = next(c for c in data["clusters"] if c["name"] == "gpu-east")
    assert east["totalUSD"] == "21.5151000001"
    assert sum(Decimal(r["unblendedCostUSD"]) for r in data["rows"]
               if r["groupKey"] == f"{KEY}$gpu-east") == Decimal(east["totalUSD"])
    assert data["requestsAnswered"] == 3 and data["estimatedDays"] == ["2026-11-26"]


def test_cli_markdown(moto_ce: Moto) -> None:
    code, out, _ = _seed_and_cli(moto_ce, "--format", "markdown")
    assert code == 1
    assert out.startswith("## ❌ Inter-AZ egress audit: OVER BUDGET")
    assert "| gpu-east | aws | us-east-1 | 2,151.51 | $21.52 | $5.00/day | **over** |" in out


def test_cli_manifests_name_the_job_that_may_split(moto_ce: Moto) -> None:
    # The raw bases carry no zone affinity: the analysis says llama-ft may split, and the
    # over-budget cluster's report names it as the expected cause.
    code, out, _ = _seed_and_cli(moto_ce, str(AUDIT_FIXTURES / "bases"))
    assert code == 1
    assert f"expected cause: job(s) that may split across zones: {SPLIT_JOB}" in out


def test_cli_within_budget_exit_0(moto_ce: Moto) -> None:
    moto_ce.seed(page([result("2026-11-24", [(f"{KEY}$gpu-east", UT, "1.00", "100")])]))
    res = invoke("audit", "egress", INVENTORY, "--start", "2026-11-24",
                 "--end", "2026-11-25")
    assert res.exit_code == 0, res.stderr
    assert "Verdict: within budget" in res.stdout


def test_cli_no_cost_tag_is_exit_78_one_line(moto_ce: Moto) -> None:
    res = invoke("audit", "egress", str(AUDIT_FIXTURES / "no-cost-tag.yaml"))
    assert res.exit_code == 78, res.output
    assert res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1
    assert "gpu-west" in res.stderr and "0 Cost Explorer requests answered" in res.stderr


def test_cli_end_before_start_is_exit_2(moto_ce: Moto) -> None:
    res = invoke("audit", "egress", INVENTORY, "--start", "2026-11-24",
                 "--end", "2026-11-24")
    assert res.exit_code == 2 and len(res.stderr.strip().splitlines()) == 1


def test_docs_sample_report_is_what_the_moto_run_renders(moto_ce: Moto) -> None:
    from topogate.audit.report import REPORT

    docs = (AUDIT_FIXTURES.parent.parent / "docs" / "audit.md").read_text()
    for fmt in ("text", "markdown"):
        moto_ce.reset()
        moto_ce.seed(*three_pages())
        r = run_audit(load_inventory(INVENTORY), START, END, Capture().factory(),
                      {"gpu-east": [SPLIT_JOB], "gpu-west": []})
        assert REPORT.render(r, fmt).rstrip() in docs, f"docs/audit.md {fmt} sample is stale"


# ----------------------------------------------------------------------------- the cause is optional


def _cli(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    res = invoke("audit", "egress", *args, env=env)
    return res.exit_code, res.stdout, res.stderr


def _inventory_alone(tmp_path: Path) -> str:
    """The inventory without its bases: what the in-cluster CronJob mounts from a ConfigMap."""
    alone = tmp_path / "mounted" / "inventory.yaml"
    alone.parent.mkdir()
    shutil.copy(INVENTORY, alone)
    return str(alone)


def test_cli_inventory_without_its_bases_still_audits_the_cost(moto_ce: Moto,
                                                                tmp_path: Path) -> None:
    # Old code: the cost audit loaded the inventory with its bases and stopped with exit 2.
    moto_ce.seed(*three_pages())
    code, out, err = _cli(_inventory_alone(tmp_path), "--start", "2026-11-24", "--end", "2026-11-27")
    assert code == 1, err  # the normal verdict: gpu-east over budget
    assert "Verdict: OVER BUDGET: gpu-east (1 of 3 days)" in out
    assert UNKNOWN_CAUSE in out and NO_SPLIT_CAUSE not in out  # not "no job can split"
    (line,) = err.strip().splitlines()
    assert line.startswith("topogate audit: cause not analysed: ") and "bases/llama-ft" in line
    assert "Warnings:" in out and "cause not analysed: " in out  # the reason is in the report too


def _broken_base(tmp_path: Path) -> str:
    d = tmp_path / "broken"
    d.mkdir()
    (d / "kustomization.yaml").write_text("resources: [does-not-exist.yaml]\n")
    return str(d)


@pytest.mark.parametrize("failure", ["base-does-not-build", "kubectl-missing", "no-temp-dir"])
def test_cli_any_failure_of_the_cause_analysis_is_one_warning_not_a_failed_audit(
        moto_ce: Moto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    # Old code: exit 2 (the base does not build) or exit 70 (kubectl missing, no temp dir).
    import tempfile

    paths: list[str] = []
    if failure == "base-does-not-build":
        paths = [_broken_base(tmp_path)]
    elif failure == "kubectl-missing":
        monkeypatch.setenv("TOPOGATE_KUBECTL", str(tmp_path / "no-such-kubectl"))
    else:
        monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no-such-tmp"))
    moto_ce.seed(*three_pages())
    code, out, err = _cli(INVENTORY, *paths, "--start", "2026-11-24", "--end", "2026-11-27",
                          "--format", "json")
    assert code == 1, err
    (line,) = err.strip().splitlines()
    assert line.startswith("topogate audit: cause not analysed: ")
    data = json.loads(out)
    assert data["exitCode"] == 1 and data["requestsAnswered"] == 3
    assert all(c["maySplit"] is None and c["cause"] == UNKNOWN_CAUSE for c in data["clusters"])
    assert any(w.startswith("cause not analysed: ") for w in data["warnings"])


def test_cli_a_failed_audit_prints_only_its_own_line_even_when_the_cause_failed_too(
        moto_ce: Moto, tmp_path: Path) -> None:
    no_tag = tmp_path / "mounted" / "no-cost-tag.yaml"
    no_tag.parent.mkdir()
    shutil.copy(AUDIT_FIXTURES / "no-cost-tag.yaml", no_tag)
    code, out, err = _cli(str(no_tag))
    assert code == 78 and out == ""
    (line,) = err.strip().splitlines()
    assert "gpu-west" in line and "cause not analysed" not in line


# ----------------------------------------------------------------------------- untagged spend


def test_cost_tag_not_activated_all_spend_untagged_is_a_prominent_warning(moto_ce: Moto) -> None:
    # Old code: "within budget", exit 0, and no word about the tag: the verdict meant nothing.
    untagged = [page([result("2026-11-24", [(f"{KEY}$", UT, "40.00", "4000")]),
                      result("2026-11-25", [(f"{KEY}$", "USW2-DataTransfer-Regional-Bytes",
                                             "12.00", "1200")])])]
    outs = {}
    for fmt in ("text", "markdown", "json"):
        moto_ce.reset()
        moto_ce.seed(*untagged)
        code, outs[fmt], err = _cli(INVENTORY, "--start", "2026-11-24", "--end", "2026-11-26",
                                    "--format", fmt)
        assert code == 0, err  # the exit code stays as computed; the report says why to doubt it
    question = f"is {KEY} activated as a cost allocation tag in Billing?"
    text = outs["text"]
    assert f"WARNING: all inter-AZ spend is untagged ($52.00, 5,200.00 GB under {KEY}" in text
    assert question in text
    assert text.index("WARNING:") < text.index("gpu-east")  # at the top, before the clusters
    assert "Verdict: within budget, UNVERIFIED" in text
    md = outs["markdown"]
    assert md.startswith("## ⚠️ Inter-AZ egress audit: within budget, UNVERIFIED")
    assert "> **Warning:** all inter-AZ spend is untagged" in md and question in md
    data = json.loads(outs["json"])
    assert data["verdict"] == "within-budget" and data["exitCode"] == 0
    (alert,) = data["alerts"]
    assert alert.startswith("all inter-AZ spend is untagged") and question in alert


def test_spend_for_the_clusters_means_no_untagged_alert(moto_ce: Moto) -> None:
    moto_ce.seed(*three_pages())  # untagged spend exists, but so does gpu-east's
    r = run_audit(load_inventory(INVENTORY), START, END, Capture().factory(), None)
    assert r.alerts == ()


# ----------------------------------------------------------------------------- malformed answers


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "12,50", "abc"])
def test_malformed_amount_is_temporary_and_counts_the_request_that_was_answered(
        moto_ce: Moto, amount: str) -> None:
    # Old code: "NaN" and "Infinity" crashed the budget comparison (exit 70); "abc" was exit 75
    # but claimed "0 Cost Explorer requests" although moto had answered one.
    moto_ce.seed(page([result("2026-11-24", [(f"{KEY}$gpu-east", UT, amount, "100")])]))
    code, out, err = _cli(INVENTORY, "--start", "2026-11-24", "--end", "2026-11-25")
    assert code == 75 and out == ""
    (line,) = err.strip().splitlines()
    assert "non-numeric UnblendedCost" in line and "[exit 75; 1 Cost Explorer request answered]" in line
