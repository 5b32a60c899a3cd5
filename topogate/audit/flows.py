"""`audit egress --flow-logs`: read every source, attribute the window's inter-AZ bytes to jobs,
reconcile them with the cluster's Cost Explorer figure.

Records are summed as they are read (topogate.audit.attribute.Tally), before any paid request;
the sums wait for Cost Explorer's figure of the cluster to become the per-job report."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import replace
from decimal import Decimal

from topogate.audit import prices
from topogate.audit.attribute import AddressBook, FlowAudit, Tally
from topogate.audit.errors import InvocationError, TemporaryError
from topogate.audit.flowlog import (
    DEFAULT_LOG_FORMAT,
    FlowLogProblems,
    Problems,
    format_from_log_format,
    parse_lines,
)
from topogate.audit.flowsource import Deadline, chunks
from topogate.audit.model import ClusterAudit


class FlowLogError(InvocationError):
    """Lines that are not flow-log records (exit 2): each named by object and line."""


def _no_deadline() -> None:
    return None


def read_records(book: AddressBook, sources: Sequence[str], start: dt.date, end: dt.date,
                 log_format: str | None = None, deadline: Deadline = _no_deadline,
                 max_attempts: int = 4) -> Tally:
    """Every record of every source, summed as it is read (module doc).

    Raises FlowLogError naming the problems of all the sources at once (the first ten, and
    how many there are)."""
    try:
        fmt = format_from_log_format(log_format or DEFAULT_LOG_FORMAT)
    except FlowLogProblems as err:
        raise FlowLogError("; ".join(err.problems)) from None
    problems = Problems()
    tally = Tally(book, start, end)
    for source in sources:
        for chunk in chunks(source, start, end, deadline, max_attempts):
            tally.sources[chunk.name] = None
            tally.skipped += parse_lines(chunk.name, chunk.lines, fmt, problems, tally.add,
                                         header=chunk.header)
    if problems.total:
        shown = problems.shown[:10]
        more = f" (+{problems.total - len(shown)} more)" if problems.total > len(shown) else ""
        raise FlowLogError(f"{problems.total} flow-log line(s) are not VPC Flow Logs records, so "
                           "no job's bytes are judged: " + "; ".join(shown) + more)
    return tally


def flow_audit(tally: Tally, cluster: ClusterAudit, causes: Mapping[str, str],
               job_budget: Decimal | None = None) -> FlowAudit:
    price = prices.PRICES["aws"].usd_per_unit
    result = tally.audit(price, causes, cluster=cluster.name, region=cluster.region,
                         billed_gb=cluster.total_gb if cluster.measured else None,
                         job_budget=job_budget)
    if result.records == 0:
        raise TemporaryError(f"no flow-log record of {tally.start}..{tally.end} in "
                             f"{len(result.sources)} object(s) read: never read as no traffic; "
                             "delivery may lag, or the source covers other days")
    if tally.skipped:
        result = replace(result, warnings=(*result.warnings, (
            f"{tally.skipped} SKIPDATA record(s): AWS skipped records in those intervals, so the "
            "measured bytes are a lower bound")))
    rest = result.rest_gb
    if rest is not None and rest < 0:
        result = replace(result, warnings=(*result.warnings, (
            "the flow logs attribute more than Cost Explorer billed to the cluster's tag: they "
            "cover interfaces the cost tag does not, or the days differ")))
    return result


__all__ = ["flow_audit", "read_records"]
