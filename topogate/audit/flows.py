"""`audit egress --flow-logs`: read every source, attribute the window's inter-AZ bytes to jobs,
reconcile them with the cluster's Cost Explorer figure."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal

from topogate.audit import prices
from topogate.audit.attribute import AddressBook, FlowAudit, attribute
from topogate.audit.errors import InvocationError, TemporaryError
from topogate.audit.flowlog import (
    DEFAULT_LOG_FORMAT,
    FlowLogProblems,
    FlowRecord,
    format_from_log_format,
    parse_lines,
)
from topogate.audit.flowsource import Deadline, chunks
from topogate.audit.model import ClusterAudit


class FlowLogError(InvocationError):
    """Lines that are not flow-log records (exit 2): each named by object and line."""


def _no_deadline() -> None:
    return None


def read_records(sources: Sequence[str], start: dt.date, end: dt.date,
                 log_format: str | None = None, deadline: Deadline = _no_deadline,
                 max_attempts: int = 4) -> tuple[list[FlowRecord], list[str], int]:
    """Every record of every source, the names read, and SKIPDATA records (AWS lost them).

    Raises FlowLogError listing all the problems of all the sources at once."""
    try:
        fmt = format_from_log_format(log_format or DEFAULT_LOG_FORMAT)
    except FlowLogProblems as err:
        raise FlowLogError("; ".join(err.problems)) from None
    problems: list[str] = []
    records: list[FlowRecord] = []
    names: list[str] = []
    skipped = 0
    for source in sources:
        for chunk in chunks(source, start, end, deadline, max_attempts):
            names.append(chunk.name)
            got, lost = parse_lines(chunk.name, chunk.lines, fmt, problems, header=chunk.header)
            records.extend(got)
            skipped += lost
    if problems:
        shown = problems[:10]
        more = f" (+{len(problems) - len(shown)} more)" if len(problems) > len(shown) else ""
        raise FlowLogError(f"{len(problems)} flow-log line(s) are not VPC Flow Logs records, so "
                           "no job's bytes are judged: " + "; ".join(shown) + more)
    return records, names, skipped


def flow_audit(book: AddressBook, cluster: ClusterAudit, records: Sequence[FlowRecord],
               names: Sequence[str], skipped: int, start: dt.date, end: dt.date,
               causes: Mapping[str, str], job_budget: Decimal | None = None) -> FlowAudit:
    price = prices.PRICES["aws"].usd_per_unit
    result = attribute(book, records, start, end, price, causes, cluster=cluster.name,
                       region=cluster.region, sources=names,
                       billed_gb=cluster.total_gb if cluster.measured else None,
                       job_budget=job_budget)
    if result.records == 0:
        raise TemporaryError(f"no flow-log record of {start}..{end} in {len(names)} object(s) "
                             "read: never read as no traffic; delivery may lag, or the source "
                             "covers other days")
    if skipped:
        result = replace(result, warnings=(*result.warnings, (
            f"{skipped} SKIPDATA record(s): AWS skipped records in those intervals, so the "
            "measured bytes are a lower bound")))
    rest = result.rest_gb
    if rest is not None and rest < 0:
        result = replace(result, warnings=(*result.warnings, (
            "the flow logs attribute more than Cost Explorer billed to the cluster's tag: they "
            "cover interfaces the cost tag does not, or the days differ")))
    return result


__all__ = ["FlowLogError", "flow_audit", "read_records"]
