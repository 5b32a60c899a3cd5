"""The per-job section of the egress report (`--flow-logs`): text, JSON and Markdown."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from topogate.audit.attribute import BYTES_PER_GB, MODE_TEXT, FlowAudit, JobEgress
from topogate.audit.model import qty_text, usd_text


def _gb(n: int) -> str:
    return qty_text(Decimal(n) / BYTES_PER_GB)


def _usd(f: FlowAudit, n: int | Decimal) -> Decimal:
    gb = n if isinstance(n, Decimal) else Decimal(n) / BYTES_PER_GB
    return gb * f.usd_per_gb


def _pairs(j: JobEgress) -> str:
    return ", ".join(f"{a} -> {b} {_gb(n)} GB" for a, b, n in j.pairs)


def _reconcile(f: FlowAudit) -> list[str]:
    if f.billed_gb is None:
        return ["Cost Explorer: not measured for this cluster, nothing to reconcile"]
    rest = f.rest_gb
    assert rest is not None
    return [f"Cost Explorer billed {qty_text(f.billed_gb)} GB ({usd_text(_usd(f, f.billed_gb))}) "
            f"to the cluster's tag; attributed to jobs {qty_text(f.attributed_gb)} GB "
            f"({usd_text(_usd(f, f.attributed_gb))}); unattributed rest {qty_text(rest)} GB "
            f"({usd_text(_usd(f, rest))})",
            f"  of which measured between addresses of no training job: {_gb(f.other_bytes)} GB; "
            f"with a peer the snapshot does not know: {_gb(f.unknown_bytes)} GB"]


def text_lines(f: FlowAudit) -> list[str]:
    out = ["", f"Measured inter-AZ bytes per training job, cluster {f.cluster} ({f.region}), "
               f"from VPC Flow Logs ({f.records} records of {len(f.sources)} object(s))",
           f"  addresses: {MODE_TEXT[f.mode]}; snapshot {f.snapshot}",
           f"  price: ${f.usd_per_gb}/GB, each side of the transfer (both interfaces' records "
           "are counted, as the bill does)"]
    if f.job_budget_usd_per_day is not None:
        out.append(f"  job budget: {usd_text(f.job_budget_usd_per_day)}/day")
    if not f.jobs:
        out.append("  no inter-AZ byte of a training job in the window")
    for j in f.jobs:
        over = "" if j.over_budget is None else ("  OVER job budget" if j.over_budget else "  under")
        out.append(f"  {j.job}: {_gb(j.bytes)} GB, {usd_text(j.usd)}{over}")
        out.append(f"    zones: {_pairs(j)}")
        out.append("    days: " + ", ".join(f"{d} {_gb(n)} GB" for d, n in j.per_day))
        out.append(f"    why: {j.cause}")
    out.extend("  " + ln for ln in _reconcile(f))
    out.extend(f"  warning: {w}" for w in f.warnings)
    return out


def markdown_lines(f: FlowAudit) -> list[str]:
    out = ["", f"### Measured inter-AZ bytes per job: {f.cluster}", "",
           f"VPC Flow Logs, {f.records} records of {len(f.sources)} object(s); addresses: "
           f"{MODE_TEXT[f.mode]}; ${f.usd_per_gb}/GB each side.", "",
           "| Job | GB | USD | Zones | Why |", "|---|---:|---:|---|---|"]
    for j in f.jobs:
        out.append(f"| {j.job} | {_gb(j.bytes)} | {usd_text(j.usd)} | "
                   f"{_pairs(j).replace('->', '&rarr;')} | {j.cause.replace('|', '/')} |")
    out.append("")
    out.extend(_reconcile(f)[:1])
    out.extend(f"- warning: {w}" for w in f.warnings)
    return out


def to_dict(f: FlowAudit) -> dict[str, Any]:
    return {
        "cluster": f.cluster, "region": f.region, "addresses": f.mode, "snapshot": f.snapshot,
        "records": f.records, "objects": list(f.sources), "usdPerGB": format(f.usd_per_gb, "f"),
        "jobs": [{"job": j.job, "bytes": j.bytes, "gb": format(j.gb, "f"),
                  "usd": format(j.usd, "f"), "cause": j.cause, "overBudget": j.over_budget,
                  "zonePairs": [{"from": a, "to": b, "bytes": n} for a, b, n in j.pairs],
                  "days": [{"date": d.isoformat(), "bytes": n} for d, n in j.per_day]}
                 for j in f.jobs],
        "attributedBytes": f.attributed_bytes,
        "otherBytes": f.other_bytes, "unknownPeerBytes": f.unknown_bytes,
        "billedGB": None if f.billed_gb is None else format(f.billed_gb, "f"),
        "unattributedGB": None if f.rest_gb is None else format(f.rest_gb, "f"),
        "warnings": list(f.warnings),
    }


__all__ = ["markdown_lines", "text_lines", "to_dict"]
