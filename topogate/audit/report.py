"""Render an AuditResult as text (terminals, cron mail), JSON (machines) or Markdown (CI summary).

Rendering is pure: the same result gives the same bytes. JSON amounts are decimal strings,
exactly as Cost Explorer sends its `Amount`s, so sums can be re-checked against the `rows`
(each row names the page and the group keys it was read from).
"""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

from topogate.audit import flowreport
from topogate.audit.egress import (
    USAGE_TYPE_GROUP,
    AuditResult,
    ClusterAudit,
    Estimate,
    qty_text,
    usd_text,
)
from topogate.audit.errors import redact_known, requests_phrase
from topogate.core import escape
from topogate.report.formats import Formats, as_written

# Display rounding is half up ($1.505 -> $1.51), on the unrounded figure; JSON keeps the exact
# decimal strings. Totals and budget verdicts use unrounded amounts, which the reports say.
_money = usd_text
_gb = qty_text
ROUNDING_NOTE = ("Amounts rounded half up to the cent for display; totals and budget verdicts "
                 "use the unrounded Cost Explorer amounts, so rounded days may not add up to "
                 "the total.")


def _budget(c: ClusterAudit) -> str:
    if c.budget_usd_per_day is None:
        return "no budget"
    return f"{_money(Decimal(str(c.budget_usd_per_day)))}/day"


def _verdict(over: bool | None) -> str:
    return "-" if over is None else ("OVER" if over else "under")


def _estimate_line(c: ClusterAudit) -> str:
    e = c.estimate
    if e is None:
        return f"not measured: no price table for provider {c.provider!r}"
    p = e.price
    if p.usd_per_unit == 0:
        head = f"ESTIMATE (not measured): {c.provider} lists inter-zone transfer at $0/{p.unit}"
    else:
        head = (f"ESTIMATE (not measured): {c.provider} lists inter-zone transfer at "
                f"${p.usd_per_unit}/{p.unit} each direction")
        if e.budget_volume_per_day is not None:
            head += f"; the {_budget(c)} budget covers {_gb(e.budget_volume_per_day)} {p.unit}/day"
    return head


def _source_line(e: Estimate) -> str:
    p = e.price
    return f"source: {p.source} (read {p.read_on}); {p.note}"


def _summary(r: AuditResult) -> str:
    over = r.over_budget
    jobs = r.flows.over_budget if r.flows is not None else ()
    if over or jobs:
        parts = [f"{c.name} ({sum(1 for d in c.days if d.over_budget)} of {len(c.days)} days)"
                 for c in over] + [f"job {j.job}" for j in jobs]
        return "OVER BUDGET: " + ", ".join(parts)
    if r.alerts:
        return "within budget, UNVERIFIED: inter-AZ spend was not attributed to the clusters"
    return "within budget"


def _requests(r: AuditResult) -> str:
    return f"{requests_phrase(r.requests)} ({_money(r.request_cost_usd)})"


def _zero_note(r: AuditResult) -> str:
    if not r.all_zero:
        return ""
    if r.verified_usage_types is not None:
        return ("All measured figures are zero; --verify-usage-types confirmed the usage type "
                "names exist, so there was no tagged inter-AZ transfer in the window.")
    return ("All measured figures are zero. A misspelled usage type filter also returns zero: "
            "run with --verify-usage-types to confirm the names with GetDimensionValues.")


def render_text(r: AuditResult) -> str:
    out: list[str] = []
    out.append(f"Inter-AZ data transfer {r.start} .. {r.end} (end exclusive)")
    out.append(f"Source: AWS Cost Explorer GetCostAndUsage, DAILY, UnblendedCost + UsageQuantity, "
               f"usage type group {USAGE_TYPE_GROUP!r} or <REGION>-DataTransfer-Regional-Bytes")
    out.append(ROUNDING_NOTE)
    for a in r.alerts:
        out.append("")
        out.append(f"WARNING: {a}")
    for c in r.clusters:
        out.append("")
        if not c.measured:
            out.append(f"{c.name}  {c.provider} {c.region}  {_budget(c)}")
            out.append(f"  {_estimate_line(c)}")
            if c.estimate is not None:
                out.append(f"  {_source_line(c.estimate)}")
            out.append(f"  {c.cause}")
            continue
        out.append(f"{c.name}  {c.provider} {c.region}  tag {c.tag}  {_budget(c)}")
        out.append(f"  {'day':<12} {'GB':>12} {'USD':>10}  budget")
        for d in c.days:
            mark = "*" if d.estimated else " "
            out.append(f"  {d.day.isoformat()}{mark} {_gb(d.gb):>12} {_money(d.usd):>10}  "
                       f"{_verdict(d.over_budget)}")
        out.append(f"  {'total':<12} {_gb(c.total_gb):>12} {_money(c.total_usd):>10}")
        if c.total_gb == 0 and c.total_usd == 0:
            out.append("  no inter-AZ transfer billed to this tag in the window")
        else:
            out.append(f"  {c.cause}")
    if r.flows is not None:
        out.extend(flowreport.text_lines(r.flows))
    if r.estimated_days:
        out.append("")
        out.append("* estimated by Cost Explorer (not final): "
                   + ", ".join(d.isoformat() for d in r.estimated_days))
    if r.unattributed:
        out.append("")
        out.append("Not attributed to any cluster in the inventory:")
        for u in r.unattributed:
            who = f"{u.tag_key}={u.tag_value}" if u.tag_value else f"{u.tag_key} (no value: untagged)"
            out.append(f"  {who}: {_gb(u.gb)} GB, {_money(u.usd)}")
    note = _zero_note(r)
    if note:
        out.append("")
        out.append(note)
    if r.warnings:
        out.append("")
        out.append("Warnings:")
        out.extend(f"  {w}" for w in r.warnings)
    out.append("")
    out.append(f"Verdict: {_summary(r)}")
    out.append(f"{_requests(r)}; HTTP attempts incl. retries: {r.attempts}")
    return "\n".join(out) + "\n"


def _dec(x: Decimal) -> str:
    # Normalised decimal string without exponent: "16.00" stays, "1E+1" becomes "10".
    return format(x, "f")


def to_dict(r: AuditResult) -> dict[str, Any]:
    def cluster(c: ClusterAudit) -> dict[str, Any]:
        d: dict[str, Any] = {
            "name": c.name, "provider": c.provider, "region": c.region,
            "measured": c.measured, "tag": c.tag or None,
            "budgetUSDPerDay": c.budget_usd_per_day,
            "maySplit": None if c.may_split is None else list(c.may_split),
            "cause": c.cause,
        }
        if c.measured:
            d.update({
                "totalGB": _dec(c.total_gb), "totalUSD": _dec(c.total_usd),
                "overBudget": c.over_budget, "regionsBilled": list(c.regions_billed),
                "days": [{"date": x.day.isoformat(), "gb": _dec(x.gb), "usd": _dec(x.usd),
                          "estimated": x.estimated, "overBudget": x.over_budget}
                         for x in c.days],
            })
        elif c.estimate is not None:
            p = c.estimate.price
            d["estimate"] = {
                "usdPerUnit": _dec(p.usd_per_unit), "unit": p.unit, "source": p.source,
                "readOn": p.read_on, "note": p.note,
                "budgetVolumePerDay": None if c.estimate.budget_volume_per_day is None
                else _dec(c.estimate.budget_volume_per_day),
            }
        return d

    return {
        "window": {"start": r.start.isoformat(), "end": r.end.isoformat(), "endExclusive": True},
        "verdict": "over-budget" if r.over_budget else "within-budget",
        "exitCode": r.exit_code,
        "clusters": [cluster(c) for c in r.clusters],
        "unattributed": [{"tagKey": u.tag_key, "tagValue": u.tag_value, "gb": _dec(u.gb),
                          "usd": _dec(u.usd)} for u in r.unattributed],
        "estimatedDays": [d.isoformat() for d in r.estimated_days],
        "allZero": r.all_zero,
        "verifiedUsageTypes": None if r.verified_usage_types is None
        else list(r.verified_usage_types),
        # Prominent: the verdict is in doubt (e.g. the cost tag is not activated in Billing).
        "alerts": list(r.alerts),
        "flowLogs": None if r.flows is None else flowreport.to_dict(r.flows),
        "warnings": list(r.warnings),
        # Requests Cost Explorer answered (each billed $0.01); httpAttempts includes retries
        # and attempts that got no answer.
        "requestsAnswered": r.requests,
        "requestCostUSD": _dec(r.request_cost_usd),
        "httpAttempts": r.attempts,
        # Every figure above is a sum of these rows, exactly as Cost Explorer returned them.
        "rows": [{"page": x.page, "tagKey": x.tag_key, "groupKey": x.group_key,
                  "usageType": x.usage_type, "date": x.day.isoformat(),
                  "estimated": x.estimated, "unblendedCostUSD": _dec(x.usd),
                  "usageQuantity": _dec(x.quantity), "usageUnit": x.quantity_unit}
                 for x in r.rows],
    }


def render_json(r: AuditResult) -> str:
    return json.dumps(to_dict(r), indent=2, sort_keys=False) + "\n"


def _md_escape(s: str) -> str:
    return s.replace("|", "\\|")


def render_markdown(r: AuditResult) -> str:
    out: list[str] = []
    icon = "❌" if r.over_budget else ("⚠️" if r.alerts else "✅")
    out.append(f"## {icon} Inter-AZ egress audit: {_summary(r)}")
    out.append("")
    out.append(f"Window **{r.start} .. {r.end}** (end exclusive). Source: AWS Cost Explorer "
               f"`GetCostAndUsage` (DAILY, UnblendedCost, UsageQuantity; usage type group "
               f"`{USAGE_TYPE_GROUP}` or `<REGION>-DataTransfer-Regional-Bytes`). "
               f"{ROUNDING_NOTE}")
    for a in r.alerts:
        out.append("")
        out.append(f"> **Warning:** {_md_escape(a)}")
    out.append("")
    out.append("| Cluster | Provider | Region | Inter-AZ GB | USD | Budget | Verdict |")
    out.append("|---|---|---|---:|---:|---|---|")
    for c in r.clusters:
        if c.measured:
            verdict = "-" if c.budget_usd_per_day is None else ("**over**" if c.over_budget else "under")
            out.append(f"| {c.name} | {c.provider} | {c.region} | {_gb(c.total_gb)} | "
                       f"{_money(c.total_usd)} | {_budget(c)} | {verdict} |")
        else:
            out.append(f"| {c.name} | {c.provider} | {c.region} | n/a | n/a | {_budget(c)} | "
                       "estimate only |")
    for c in r.clusters:
        out.append("")
        out.append(f"### {c.name}")
        out.append("")
        if not c.measured:
            out.append(f"_{_estimate_line(c)}._")
            if c.estimate is not None:
                out.append("")
                out.append(_md_escape(_source_line(c.estimate)))
            out.append("")
            out.append(c.cause)
            continue
        out.append(f"Tag `{c.tag}`, {_budget(c)}.")
        out.append("")
        out.append("| Day | GB | USD | Budget |")
        out.append("|---|---:|---:|---|")
        for d in c.days:
            day = f"{d.day}" + (" (estimated)" if d.estimated else "")
            out.append(f"| {day} | {_gb(d.gb)} | {_money(d.usd)} | {_verdict(d.over_budget)} |")
        out.append("")
        if c.total_gb == 0 and c.total_usd == 0:
            out.append("No inter-AZ transfer billed to this tag in the window.")
        else:
            out.append(_md_escape(c.cause))
    if r.flows is not None:
        out.extend(flowreport.markdown_lines(r.flows))
    if r.unattributed:
        out.append("")
        out.append("### Not attributed to any cluster")
        out.append("")
        for u in r.unattributed:
            who = f"`{u.tag_key}={u.tag_value}`" if u.tag_value else f"`{u.tag_key}` with no value (untagged)"
            out.append(f"- {who}: {_gb(u.gb)} GB, {_money(u.usd)}")
    note = _zero_note(r)
    if note:
        out.append("")
        out.append(f"> {note}")
    if r.warnings:
        out.append("")
        out.append("### Warnings")
        out.append("")
        out.extend(f"- {_md_escape(w)}" for w in r.warnings)
    out.append("")
    out.append(f"<sub>{_requests(r)}; HTTP attempts incl. retries: {r.attempts}.</sub>")
    return "\n".join(out) + "\n"


# audit egress's table in the report registry. Each renderer's text is safe for a CI log: no
# credential value this process was given (an endpoint may echo one back in a group key), no
# workflow command (see core.escape); the output path adds no escape of its own.
REPORT: Formats[AuditResult] = Formats({
    "text": lambda r: escape.lines(redact_known(render_text(r))),
    "json": lambda r: escape.json_text(redact_known(render_json(r))),
    "markdown": lambda r: escape.lines(redact_known(render_markdown(r))),
}, escape=as_written, fallback="text")
__all__ = ["REPORT", "render_markdown", "render_text", "to_dict"]
