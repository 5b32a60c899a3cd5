"""Inter-AZ egress audit: run the Cost Explorer queries, page through them, parse, judge.

Three layers, so that every figure in the report can be traced to the response it came from:
- pure query building (`topogate.audit.query`, `topogate.audit.window`): no clock, no I/O,
  testable by equality;
- the only code that talks to AWS (`topogate.audit.session`), which counts requests (each
  costs $0.01) and follows NextPageToken to the end;
- pure parsing and judging (`topogate.audit.page`, `topogate.audit.verdict`), which keeps, for
  every row, the page and the group keys it was read from.

This module joins them into one run; it also re-exports their public names, because
callers and tests have always imported the audit from here.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from topogate.audit import prices
from topogate.audit.errors import (
    AuditError,
    ConfigError,
    DeadlineExceeded,
    InvocationError,
    classify,
    deadline_error,
)
from topogate.audit.model import (
    CE_PRICE_PER_REQUEST,
    CENT,
    AuditResult,
    ClusterAudit,
    DayCost,
    Estimate,
    RequestRecord,
    Unattributed,
    qty_text,
    usd_text,
)
from topogate.audit.page import Row, answered_days, dimension_values, missing_days_error, parse_page
from topogate.audit.query import (
    GRANULARITY,
    METRICS,
    USAGE_TYPE_GROUP,
    Query,
    aws_clusters,
    check_cost_config,
    cost_and_usage_request,
    dimension_values_request,
    inter_az_filter,
    plan_queries,
)
from topogate.audit.session import (
    MAX_PAGES,
    ClientFactory,
    CostExplorerSession,
    ce_region_for,
    default_client_factory,
)
from topogate.audit.verdict import NO_SPLIT_CAUSE, UNKNOWN_CAUSE, attribution_alerts, judge
from topogate.audit.window import LAG_DAYS, WINDOW_DAYS, days_of, default_window, resolve_window
from topogate.inventory.model import Inventory

__all__ = [
    "CE_PRICE_PER_REQUEST",
    "CENT",
    "GRANULARITY",
    "LAG_DAYS",
    "MAX_PAGES",
    "METRICS",
    "NO_SPLIT_CAUSE",
    "UNKNOWN_CAUSE",
    "USAGE_TYPE_GROUP",
    "WINDOW_DAYS",
    "AuditResult",
    "ClientFactory",
    "ClusterAudit",
    "CostExplorerSession",
    "DayCost",
    "Estimate",
    "Query",
    "RequestRecord",
    "Row",
    "Unattributed",
    "attribution_alerts",
    "aws_clusters",
    "ce_region_for",
    "check_cost_config",
    "cost_and_usage_request",
    "days_of",
    "default_client_factory",
    "default_window",
    "dimension_values_request",
    "inter_az_filter",
    "judge",
    "parse_page",
    "plan_queries",
    "qty_text",
    "resolve_window",
    "run_audit",
    "usd_text",
    "verify_usage_types",
]


def _dimension_page(dim: str, search: str, start: dt.date, end: dt.date,
                    token: str | None) -> dict[str, Any]:
    return dimension_values_request(dim, search, start, end, token)


def _cost_page(q: Query, start: dt.date, end: dt.date, token: str | None) -> dict[str, Any]:
    return cost_and_usage_request(q, start, end, token)


def verify_usage_types(session: CostExplorerSession, queries: Sequence[Query], start: dt.date,
                       end: dt.date) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Confirm the filter's names exist in this account's data with GetDimensionValues.

    Returns (names found, warnings). Raises ConfigError if the usage type group is absent:
    then GetCostAndUsage would silently return zero. Costs two requests (one per dimension).
    """
    found: set[str] = set()
    for dim, search in (("USAGE_TYPE_GROUP", "Inter AZ"), ("USAGE_TYPE", prices.INTER_AZ_SUFFIX)):
        build = functools.partial(_dimension_page, dim, search, start, end)
        for resp in session.pages("GetDimensionValues", build):
            try:
                found.update(dimension_values(resp))
            except AuditError as err:
                err.requests = session.requests
                raise
    if USAGE_TYPE_GROUP not in found:
        raise ConfigError(
            f"--verify-usage-types: usage type group {USAGE_TYPE_GROUP!r} not found by "
            f"GetDimensionValues for {start}..{end}: the filter would match nothing "
            "(misspelled name, or no inter-AZ transfer at all in the account in that window)",
            requests=session.requests)
    expected = sorted({t for q in queries for t in q.usage_types})
    warnings = tuple(f"--verify-usage-types: usage type {t} not found in {start}..{end} (no "
                     "inter-AZ transfer billed in that Region, or the prefix table is wrong)"
                     for t in expected if t not in found)
    return tuple(sorted(n for n in found if n == USAGE_TYPE_GROUP or n in expected)), warnings


def _query_chain(session: CostExplorerSession, q: Query, start: dt.date,
                 end: dt.date) -> tuple[list[Row], set[dt.date]]:
    """Every page of one query chain; each day of the window must be answered on some page."""
    build = functools.partial(_cost_page, q, start, end)
    rows: list[Row] = []
    estimated: set[dt.date] = set()
    answered: set[dt.date] = set()
    pages = 0
    for page_no, resp in enumerate(session.pages("GetCostAndUsage", build), start=1):
        pages = page_no
        try:
            page_rows, page_est = parse_page(resp, q.tag_key, page_no, (start, end))
        except AuditError as err:
            # the page that could not be read was still answered (and billed)
            err.requests = session.requests
            raise
        rows.extend(page_rows)
        estimated.update(page_est)
        answered |= answered_days(resp)
    missing = [d for d in days_of(start, end) if d not in answered]
    if missing:
        unanswered = missing_days_error(missing, (start, end), q.tag_key, pages)
        unanswered.requests = session.requests
        raise unanswered
    return rows, estimated


def run_audit(inv: Inventory, start: dt.date, end: dt.date, client_factory: ClientFactory,
              may_split: Mapping[str, Sequence[str]] | None = None, *,
              verify: bool = False, analysis_error: str | None = None) -> AuditResult:
    """Audit inter-AZ transfer cost of every cluster in `inv` for [start, end).

    `may_split` maps cluster name -> object ids of jobs the analysis says may split across
    zones; None means the analysis did not run (the report then says the cause is unknown,
    rather than wrongly claiming no job can split). `analysis_error` says why it did not run;
    it becomes a warning in the report.
    """
    if end <= start:
        raise InvocationError(f"--end {end} must be after --start {start} (--end is exclusive)")
    queries = plan_queries(inv)  # configuration errors surface before any paid request
    rows: list[Row] = []
    estimated: set[dt.date] = set()
    warnings: list[str] = []
    if may_split is None and analysis_error:
        warnings.append(f"cause not analysed: {analysis_error}")
    verified: tuple[str, ...] | None = None
    session: CostExplorerSession | None = None
    if queries:
        try:
            client = client_factory()
        except Exception as exc:  # noqa: BLE001 - e.g. NoRegionError, ProfileNotFound
            raise classify(exc, requests=0) from None
        session = CostExplorerSession(client)
        try:
            if verify:
                verified, vwarn = verify_usage_types(session, queries, start, end)
                warnings.extend(vwarn)
            for q in queries:
                q_rows, q_est = _query_chain(session, q, start, end)
                rows.extend(q_rows)
                estimated.update(q_est)
        except DeadlineExceeded as late:
            # the requests answered so far were billed: the line says how many
            raise deadline_error(late.args[0] if late.args else 0, session.requests) from None
    clusters, unattributed, jwarn = judge(inv, start, end, rows, estimated, may_split)
    warnings.extend(jwarn)
    measured = [c for c in clusters if c.measured]
    all_zero = bool(measured) and all(c.total_usd == 0 and c.total_gb == 0 for c in measured) \
        and not unattributed
    alerts = attribution_alerts(clusters, unattributed,
                                {c.name: c.cost.tag_key for c in aws_clusters(inv)
                                 if c.cost is not None and c.cost.tag_key})
    return AuditResult(
        start=start, end=end, clusters=clusters, unattributed=unattributed,
        warnings=tuple(warnings), estimated_days=tuple(sorted(estimated)), rows=tuple(rows),
        requests=session.requests if session else 0, attempts=session.attempts if session else 0,
        verified_usage_types=verified, all_zero=all_zero, alerts=alerts)
