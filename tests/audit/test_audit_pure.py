"""Pure parts of the egress audit: window, region prefixes, query building, parsing, judging."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from topogate.audit import prices
from topogate.audit.egress import (
    NO_SPLIT_CAUSE,
    UNKNOWN_CAUSE,
    USAGE_TYPE_GROUP,
    Query,
    ce_region_for,
    cost_and_usage_request,
    default_window,
    judge,
    parse_page,
    plan_queries,
    resolve_window,
)
from topogate.audit.errors import ConfigError, InvocationError, scrub
from topogate.audit.report import REPORT
from topogate.core.exitcodes import ExitCode
from topogate.inventory.model import Cluster, CostConfig, Inventory

D = dt.date.fromisoformat
KEY = "topogate.dev/cluster"


def inv(*clusters: Cluster) -> Inventory:
    return Inventory(name="t", path="t.yaml", clusters=clusters)


def aws(name: str, region: str = "us-east-1", key: str | None = KEY, value: str | None = "",
        budget: float | None = 5) -> Cluster:
    return Cluster(name=name, provider="aws", region=region,
                   cost=CostConfig(key, value if value != "" else name, budget))


# --------------------------------------------------------------------------- window


def test_default_window_is_three_days_ending_two_days_ago_end_exclusive() -> None:
    assert default_window(D("2026-11-29")) == (D("2026-11-24"), D("2026-11-27"))
    # across a month and a year boundary, no clock involved
    assert default_window(D("2027-01-02")) == (D("2026-12-28"), D("2026-12-31"))


def test_resolve_window_fills_the_missing_bound_and_rejects_empty() -> None:
    today = D("2026-11-29")
    assert resolve_window(None, None, today) == default_window(today)
    assert resolve_window(D("2026-11-01"), None, today) == (D("2026-11-01"), D("2026-11-04"))
    assert resolve_window(None, D("2026-11-10"), today) == (D("2026-11-07"), D("2026-11-10"))
    with pytest.raises(InvocationError) as e:
        resolve_window(D("2026-11-10"), D("2026-11-10"), today)
    assert e.value.code == ExitCode.BAD_INVOCATION


# --------------------------------------------------------------------------- region prefixes


@pytest.mark.parametrize(("usage_type", "region"), [
    ("USE1-DataTransfer-Regional-Bytes", "us-east-1"),
    ("DataTransfer-Regional-Bytes", "us-east-1"),  # no prefix = us-east-1
    ("USE2-DataTransfer-Regional-Bytes", "us-east-2"),
    ("USW1-DataTransfer-Regional-Bytes", "us-west-1"),
    ("USW2-DataTransfer-Regional-Bytes", "us-west-2"),
    ("EU-DataTransfer-Regional-Bytes", "eu-west-1"),
    ("EUC1-DataTransfer-Regional-Bytes", "eu-central-1"),
    ("EUW2-DataTransfer-Regional-Bytes", "eu-west-2"),
    ("EUN1-DataTransfer-Regional-Bytes", "eu-north-1"),
    ("APN1-DataTransfer-Regional-Bytes", "ap-northeast-1"),
    ("APS1-DataTransfer-Regional-Bytes", "ap-southeast-1"),
    ("APS2-DataTransfer-Regional-Bytes", "ap-southeast-2"),
    ("APS3-DataTransfer-Regional-Bytes", "ap-south-1"),
    ("CAN1-DataTransfer-Regional-Bytes", "ca-central-1"),
    ("SAE1-DataTransfer-Regional-Bytes", "sa-east-1"),
    ("ZZZ9-DataTransfer-Regional-Bytes", None),  # a prefix we do not know: say so
])
def test_region_prefix_table(usage_type: str, region: str | None) -> None:
    assert prices.region_of_usage_type(usage_type) == region


def test_prefix_table_is_a_bijection() -> None:
    assert len(set(prices.REGION_PREFIXES.values())) == len(prices.REGION_PREFIXES)


def test_inter_az_usage_types_per_region() -> None:
    assert prices.inter_az_usage_types("us-east-1") == (
        "USE1-DataTransfer-Regional-Bytes", "DataTransfer-Regional-Bytes")
    assert prices.inter_az_usage_types("eu-west-1") == ("EU-DataTransfer-Regional-Bytes",)
    assert prices.inter_az_usage_types("xx-nowhere-1") == ()


def test_price_table_cites_sources_and_dates() -> None:
    for p in prices.PRICES.values():
        assert p.source.startswith("https://") and p.read_on
    assert prices.PRICES["gcp"].usd_per_unit == Decimal("0.01") and prices.PRICES["gcp"].unit == "GiB"
    assert prices.PRICES["azure"].usd_per_unit == 0
    assert "estimate" in prices.PRICES["gcp"].note and "estimate" in prices.PRICES["azure"].note


def test_ce_client_region_is_the_partition_endpoint_region() -> None:
    assert ce_region_for(None) == "us-east-1"
    assert ce_region_for("eu-west-1") == "us-east-1"
    assert ce_region_for("cn-north-1") == "cn-northwest-1"


# --------------------------------------------------------------------------- query plan


def test_one_query_chain_per_distinct_tag_key() -> None:
    i = inv(aws("a", "us-east-1"), aws("b", "us-west-2"),
            aws("c", "eu-west-1", key="kubernetes.io/cluster/c", value="owned"))
    qs = plan_queries(i)
    assert [q.tag_key for q in qs] == ["kubernetes.io/cluster/c", KEY]
    assert qs[1].clusters == ("a", "b")
    assert qs[1].usage_types == ("DataTransfer-Regional-Bytes", "USE1-DataTransfer-Regional-Bytes",
                                 "USW2-DataTransfer-Regional-Bytes")


def test_no_queries_without_aws_clusters() -> None:
    assert plan_queries(inv(Cluster("g", "gcp", "europe-west4", cost=CostConfig(None, None, 5)))) == ()


def test_missing_cost_tag_is_a_configuration_error_before_any_request() -> None:
    with pytest.raises(ConfigError) as e:
        plan_queries(inv(aws("a"), Cluster("lab", "aws", "us-east-1")))
    assert e.value.code == ExitCode.CONFIG and "lab" in e.value.message and "tagKey" in e.value.message


def test_two_clusters_claiming_one_tag_is_a_configuration_error() -> None:
    with pytest.raises(ConfigError, match="same cost tag"):
        plan_queries(inv(aws("a", value="x"), aws("b", value="x")))
    with pytest.raises(ConfigError, match="same cost tag"):
        plan_queries(inv(aws("a", value=None), aws("b", value="x")))


def test_request_shape() -> None:
    q = Query(KEY, ("a",), ("USE1-DataTransfer-Regional-Bytes",))
    req = cost_and_usage_request(q, D("2026-11-24"), D("2026-11-27"))
    assert req == {
        "TimePeriod": {"Start": "2026-11-24", "End": "2026-11-27"},
        "Granularity": "DAILY",
        "Metrics": ["UnblendedCost", "UsageQuantity"],
        "Filter": {"Or": [
            {"Dimensions": {"Key": "USAGE_TYPE_GROUP", "Values": [USAGE_TYPE_GROUP],
                            "MatchOptions": ["EQUALS"]}},
            {"Dimensions": {"Key": "USAGE_TYPE", "Values": ["USE1-DataTransfer-Regional-Bytes"],
                            "MatchOptions": ["EQUALS"]}}]},
        "GroupBy": [{"Type": "TAG", "Key": KEY}, {"Type": "DIMENSION", "Key": "USAGE_TYPE"}],
    }
    assert cost_and_usage_request(q, D("2026-11-24"), D("2026-11-27"), "tok")["NextPageToken"] == "tok"
    # Or needs two operands: with no known usage type the group alone is the filter
    assert cost_and_usage_request(Query(KEY, ("a",), ()), D("2026-11-24"),
                                  D("2026-11-27"))["Filter"]["Dimensions"]["Key"] == "USAGE_TYPE_GROUP"


def test_request_validates_against_the_botocore_model() -> None:
    """The built request is valid for the real GetCostAndUsage input shape."""
    import botocore.session
    from botocore.validate import ParamValidator

    model = botocore.session.get_session().get_service_model("ce")
    shape = model.operation_model("GetCostAndUsage").input_shape
    req = cost_and_usage_request(Query(KEY, ("a",), ("USE1-DataTransfer-Regional-Bytes",)),
                                 D("2026-11-24"), D("2026-11-27"), "tok")
    report = ParamValidator().validate(req, shape)
    assert not report.has_errors(), report.generate_report()


# --------------------------------------------------------------------------- parsing + judging


def _resp(*results: dict) -> dict:
    return {"ResultsByTime": list(results)}


def _res(day: str, groups: list[tuple[str, str, str, str]], est: bool = False) -> dict:
    nxt = (D(day) + dt.timedelta(days=1)).isoformat()
    return {"TimePeriod": {"Start": day, "End": nxt}, "Estimated": est, "Total": {},
            "Groups": [{"Keys": [t, u], "Metrics": {"UnblendedCost": {"Amount": c, "Unit": "USD"},
                                                     "UsageQuantity": {"Amount": g, "Unit": "GB"}}}
                       for t, u, c, g in groups]}


def test_parse_keeps_raw_amounts_and_missing_tag_values() -> None:
    rows, est = parse_page(_resp(
        _res("2026-11-24", [(f"{KEY}$a", "USE1-DataTransfer-Regional-Bytes", "1.2345678", "123.45678"),
                            (f"{KEY}$", "DataTransfer-Regional-Bytes", "0.5", "50")], est=True)),
        KEY, page=3)
    assert est == {D("2026-11-24")}
    assert rows[0].usd == Decimal("1.2345678") and rows[0].quantity == Decimal("123.45678")
    assert rows[0].page == 3 and rows[0].group_key == f"{KEY}$a" and rows[0].tag_value == "a"
    assert rows[1].tag_value == "" and rows[1].usage_type == "DataTransfer-Regional-Bytes"


def test_tag_keys_containing_dollar_split_on_the_key_not_the_first_dollar() -> None:
    rows, _ = parse_page(_resp(_res("2026-11-24", [("odd$key$v$1", "EU-DataTransfer-Regional-Bytes",
                                                    "1", "100")])), "odd$key", page=1)
    assert rows[0].tag_value == "v$1"


def test_judge_budget_causes_estimates_and_unattributed() -> None:
    gcp = Cluster("gke", "gcp", "europe-west4", cost=CostConfig(None, None, 5))
    azure = Cluster("aks", "azure", "westeurope", cost=CostConfig(None, None, 2))
    i = inv(aws("a"), aws("b", "us-west-2", budget=None), gcp, azure)
    rows, est = parse_page(_resp(
        _res("2026-11-24", [(f"{KEY}$a", "DataTransfer-Regional-Bytes", "6.00", "600"),
                            (f"{KEY}$", "DataTransfer-Regional-Bytes", "0.25", "25"),
                            (f"{KEY}$other", "USE2-DataTransfer-Regional-Bytes", "0.10", "10")]),
        _res("2026-11-25", [(f"{KEY}$a", "DataTransfer-Regional-Bytes", "1.00", "100")], est=True)),
        KEY, 1)
    clusters, unattributed, warnings = judge(i, D("2026-11-24"), D("2026-11-27"), rows, est,
                                             {"a": ["PyTorchJob/ml/llama"]})
    a, b, gke, aks = clusters
    assert [d.over_budget for d in a.days] == [True, False, False]
    assert [d.estimated for d in a.days] == [False, True, False]
    assert a.total_usd == Decimal("7.00") and a.over_budget
    assert a.cause.endswith("PyTorchJob/ml/llama")
    assert b.measured and b.total_gb == 0 and [d.over_budget for d in b.days] == [None] * 3
    assert b.cause == NO_SPLIT_CAUSE  # the analysis ran and named nothing in b
    assert not gke.measured and gke.estimate is not None
    assert gke.estimate.budget_volume_per_day == Decimal("500.00")
    assert aks.estimate is not None and aks.estimate.budget_volume_per_day is None
    assert [(u.tag_value, u.usd) for u in unattributed] == [("", Decimal("0.25")),
                                                           ("other", Decimal("0.10"))]
    assert warnings == ()
    # None = the analysis did not run: never claim that no job can split
    clusters, _, _ = judge(i, D("2026-11-24"), D("2026-11-27"), rows, est, None)
    assert clusters[0].cause == UNKNOWN_CAUSE and clusters[0].may_split is None


def test_judge_checks_billed_region_against_the_inventory() -> None:
    rows, _ = parse_page(_resp(_res("2026-11-24", [
        (f"{KEY}$a", "USW2-DataTransfer-Regional-Bytes", "1", "100"),
        (f"{KEY}$a", "QQQ1-DataTransfer-Regional-Bytes", "1", "100")])), KEY, 1)
    _, _, warnings = judge(inv(aws("a", "us-east-1")), D("2026-11-24"), D("2026-11-25"), rows, (), {})
    assert any("billed in us-west-2" in w for w in warnings)
    assert any("QQQ1" in w and "prices.py" in w for w in warnings)


def test_renderers_agree_and_json_traces_every_figure_to_rows() -> None:
    from topogate.audit.egress import AuditResult

    rows, est = parse_page(_resp(
        _res("2026-11-24", [(f"{KEY}$a", "DataTransfer-Regional-Bytes", "6.004", "600.4")], est=True)),
        KEY, 1)
    i = inv(aws("a"), Cluster("gke", "gcp", "europe-west4", cost=CostConfig(None, None, 5)))
    clusters, un, warn = judge(i, D("2026-11-24"), D("2026-11-25"), rows, est, {"a": []})
    r = AuditResult(D("2026-11-24"), D("2026-11-25"), clusters, un, warn, tuple(sorted(est)),
                    tuple(rows), requests=1, attempts=1)
    text = REPORT.render(r, "text")
    assert "2026-11-24*" in text and "$6.00" in text and "OVER" in text
    assert "ESTIMATE (not measured)" in text and "500.00 GiB/day" in text
    assert "1 Cost Explorer request answered ($0.01)" in text
    md = REPORT.render(r, "markdown")
    assert "| a | aws | us-east-1 | 600.40 | $6.00 | $5.00/day | **over** |" in md
    assert "(estimated)" in md and "estimate only" in md
    data = json.loads(REPORT.render(r, "json"))
    assert data["exitCode"] == 1 and data["verdict"] == "over-budget"
    a = data["clusters"][0]
    assert a["totalUSD"] == "6.004"  # exact, as Cost Explorer sent it
    assert sum(Decimal(x["unblendedCostUSD"]) for x in data["rows"]
               if x["groupKey"] == f"{KEY}$a") == Decimal(a["totalUSD"])
    assert data["clusters"][1]["estimate"]["unit"] == "GiB"


def test_all_zero_result_points_at_verify_usage_types() -> None:
    from topogate.audit.egress import AuditResult

    clusters, _, _ = judge(inv(aws("a")), D("2026-11-24"), D("2026-11-25"), [], (), None)
    r = AuditResult(D("2026-11-24"), D("2026-11-25"), clusters, requests=1, all_zero=True)
    assert "--verify-usage-types" in REPORT.render(r, "text")
    assert "--verify-usage-types" in REPORT.render(r, "markdown")


def test_scrub_removes_credential_shapes_and_newlines() -> None:
    s = scrub("key AKIAIOSFODNN7EXAMPLE secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nnext")
    assert "AKIA" not in s and "wJalr" not in s and "\n" not in s


def test_scrub_removes_url_userinfo_and_session_tokens() -> None:
    token = "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQD" + "x" * 300
    legacy = "FwoGZXIvYXdzEBYaDH" + "A" * 200
    s = scrub(f'Could not connect to "https://bob:hunter2@ce.example:8443/path" token {token} '
              f"old {legacy} env AWS_SESSION_TOKEN=abc123short and aws_session_token: 'q1w2e3'")
    assert "hunter2" not in s and "bob" not in s and "https://[redacted]@ce.example:8443/path" in s
    assert "IQoJ" not in s and "FwoG" not in s and "xxxxxxxx" not in s
    assert "abc123short" not in s and "q1w2e3" not in s
    unprefixed = "Zm9v" * 40  # 160 base64 characters, no known prefix
    assert "Zm9vZm9v" not in scrub(f"token {unprefixed} end")
    # ordinary messages pass unchanged, long file paths included (the cause warning names them)
    ordinary = "GetCostAndUsage: LimitExceededException: Rate exceeded (req 1a2b-3c4d)"
    assert scrub(ordinary) == ordinary
    path = ("/home/runner/work/inventory-repo/inventory-repo/deploy/overlays/production/"
            "gpu-east/ml-team/llama-ft/kustomization.yaml:1: kubectl kustomize failed")
    assert scrub(path) == path


def test_resolve_window_refuses_days_that_have_not_happened() -> None:
    today = D("2026-11-29")
    assert resolve_window(None, today, today) == (D("2026-11-26"), today)  # end exclusive: ok
    with pytest.raises(InvocationError) as e:
        resolve_window(None, D("2026-11-30"), today)
    assert "after today" in e.value.message and e.value.code == ExitCode.BAD_INVOCATION
    with pytest.raises(InvocationError):
        resolve_window(D("2026-11-20"), D("2026-12-01"), today)
    # a missing --end is three days after --start, but never after today
    assert resolve_window(D("2026-11-27"), None, today) == (D("2026-11-27"), today)
    with pytest.raises(InvocationError) as e:
        resolve_window(today, None, today)
    assert "not before today" in e.value.message


def test_money_is_rounded_half_up_for_display_and_exact_in_json() -> None:
    from topogate.audit.egress import AuditResult, qty_text, usd_text

    # Decimal's default (half even) showed $1.505 as $1.50 and $0.125 as $0.12
    assert usd_text(Decimal("1.505")) == "$1.51" and usd_text(Decimal("0.125")) == "$0.13"
    assert usd_text(Decimal("1234.5649")) == "$1,234.56" and qty_text(Decimal("2.675")) == "2.68"
    rows, est = parse_page(_resp(
        _res("2026-11-24", [(f"{KEY}$a", "DataTransfer-Regional-Bytes", "1.505", "150.5")]),
        _res("2026-11-25", [(f"{KEY}$a", "DataTransfer-Regional-Bytes", "1.505", "150.5")])),
        KEY, 1)
    clusters, un, warn = judge(inv(aws("a", budget=1.505)), D("2026-11-24"), D("2026-11-26"),
                               rows, est, {"a": []})
    r = AuditResult(D("2026-11-24"), D("2026-11-26"), clusters, un, warn, (), tuple(rows),
                    requests=1, attempts=1)
    text = REPORT.render(r, "text")
    assert "      $1.51  under" in text and "$3.01" in text  # 3.010 total, from unrounded days
    assert "$1.51/day" in text  # the budget too
    assert "totals and budget verdicts use the unrounded Cost Explorer amounts" in text
    md = REPORT.render(r, "markdown")
    assert "| 2026-11-24 | 150.50 | $1.51 | under |" in md
    assert "totals and budget verdicts use the unrounded Cost Explorer amounts" in md
    data = json.loads(REPORT.render(r, "json"))
    assert [d["usd"] for d in data["clusters"][0]["days"]] == ["1.505", "1.505"]
    assert data["clusters"][0]["totalUSD"] == "3.010"


def test_docs_exit_code_table_is_the_code_table() -> None:
    from pathlib import Path

    from topogate.audit.errors import EXIT_CODE_DOCS

    docs = (Path(__file__).resolve().parent.parent.parent / "docs" / "audit.md").read_text()
    for code, meaning in EXIT_CODE_DOCS:
        assert f"| {int(code)} | {meaning} |" in docs, f"docs/audit.md: exit code {int(code)}"
