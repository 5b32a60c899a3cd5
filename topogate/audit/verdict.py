"""Pure judging: turns the rows read from Cost Explorer into per-cluster verdicts and alerts.

Every row is either claimed by one cluster or reported as unattributed, so no dollar is lost
between the bill and the report.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Sequence
from decimal import ROUND_HALF_UP, Decimal

from topogate.audit import prices
from topogate.audit.model import CENT, ClusterAudit, DayCost, Estimate, Unattributed, qty_text, usd_text
from topogate.audit.page import Row
from topogate.audit.window import days_of
from topogate.inventory.model import Cluster, Inventory

NO_SPLIT_CAUSE = "no job in the inventory can split: look for non-training traffic"
UNKNOWN_CAUSE = ("cause not analysed: the job analysis did not run (see the warnings), so the "
                 "report cannot name jobs that may split across zones")


def _cause(may_split: tuple[str, ...] | None) -> str:
    if may_split is None:
        return UNKNOWN_CAUSE
    if not may_split:
        return NO_SPLIT_CAUSE
    return "expected cause: job(s) that may split across zones: " + ", ".join(may_split)


def _matches(cluster: Cluster, tag_key: str, tag_value: str) -> bool:
    cost = cluster.cost
    if cost is None or cost.tag_key != tag_key:
        return False
    if cost.tag_value:
        return tag_value == cost.tag_value
    return tag_value != ""  # no tagValue: any non-empty value of the key is this cluster


def judge(inv: Inventory, start: dt.date, end: dt.date, rows: Sequence[Row],
          estimated_days: Iterable[dt.date],
          may_split: Mapping[str, Sequence[str]] | None) -> tuple[
              tuple[ClusterAudit, ...], tuple[Unattributed, ...], tuple[str, ...]]:
    """Per cluster and day: GB, USD, budget verdict, expected cause; plus what matched nobody."""
    days = days_of(start, end)
    est = set(estimated_days)
    warnings: list[str] = []
    audits: list[ClusterAudit] = []
    claimed: set[int] = set()
    for c in inv.clusters:
        split = None if may_split is None else tuple(sorted(may_split.get(c.name, ())))
        budget = c.cost.budget_usd_per_day if c.cost else None
        if c.provider != "aws":
            price = prices.PRICES.get(c.provider)
            volume = None
            if price is not None and budget is not None and price.usd_per_unit > 0:
                volume = (Decimal(str(budget)) / price.usd_per_unit).quantize(
                    CENT, rounding=ROUND_HALF_UP)
            audits.append(ClusterAudit(
                c.name, c.provider, c.region, "", budget, measured=False, may_split=split,
                cause=_cause(split), estimate=Estimate(price, volume) if price else None))
            continue
        assert c.cost is not None and c.cost.tag_key
        mine = [i for i, r in enumerate(rows) if _matches(c, r.tag_key, r.tag_value)]
        claimed.update(mine)
        per_day: dict[dt.date, tuple[Decimal, Decimal]] = {d: (Decimal(0), Decimal(0)) for d in days}
        billed_regions: set[str] = set()
        for i in mine:
            r = rows[i]
            gb, usd = per_day.get(r.day, (Decimal(0), Decimal(0)))
            per_day[r.day] = (gb + r.quantity, usd + r.usd)
            region = prices.region_of_usage_type(r.usage_type) if r.usage_type else None
            if r.usage_type and region is None:
                warnings.append(f"{c.name}: usage type {r.usage_type} has a Region prefix not in "
                                "the table; add it to topogate/audit/prices.py")
            elif region is not None:
                billed_regions.add(region)
        for region in sorted(billed_regions - {c.region}):
            warnings.append(f"{c.name}: inventory says region {c.region} but inter-AZ transfer "
                            f"tagged {c.cost.tag_key}={c.cost.tag_value or '*'} is billed in "
                            f"{region}: the tag is shared or the inventory region is wrong")
        day_costs = tuple(
            DayCost(d, gb, usd, d in est,
                    None if budget is None else usd > Decimal(str(budget)))
            for d, (gb, usd) in sorted(per_day.items()))
        audits.append(ClusterAudit(
            c.name, c.provider, c.region, f"{c.cost.tag_key}={c.cost.tag_value or '*'}", budget,
            measured=True, days=day_costs, may_split=split, cause=_cause(split),
            regions_billed=tuple(sorted(billed_regions))))
    # Spend under a tag key no cluster claims: untagged resources ("key$") and other values.
    rest: dict[tuple[str, str], tuple[Decimal, Decimal]] = {}
    for i, r in enumerate(rows):
        if i in claimed:
            continue
        gb, usd = rest.get((r.tag_key, r.tag_value), (Decimal(0), Decimal(0)))
        rest[(r.tag_key, r.tag_value)] = (gb + r.quantity, usd + r.usd)
    unattributed = tuple(Unattributed(k, v, gb, usd) for (k, v), (gb, usd) in sorted(rest.items())
                         if gb or usd)
    return tuple(audits), unattributed, tuple(dict.fromkeys(warnings))





def attribution_alerts(clusters: Sequence[ClusterAudit], unattributed: Sequence[Unattributed],
                       tag_keys: Mapping[str, str]) -> tuple[str, ...]:
    """Spend exists under a tag key, yet none of it reached the clusters that use that key.

    The usual cause: the key is not activated as a cost allocation tag in Billing, so Cost
    Explorer returns everything under `key$` (no value) and every cluster looks within budget.
    `tag_keys` maps cluster name -> its cost tag key (AWS clusters only).
    """
    out: list[str] = []
    for key in sorted(set(tag_keys.values())):
        mine = [c for c in clusters if c.measured and tag_keys.get(c.name) == key]
        if not mine or any(c.total_usd or c.total_gb for c in mine):
            continue
        spent = [u for u in unattributed if u.tag_key == key and (u.usd or u.gb)]
        if not spent:
            continue
        usd = sum((u.usd for u in spent), Decimal(0))
        gb = sum((u.gb for u in spent), Decimal(0))
        names = ", ".join(c.name for c in mine)
        if all(u.tag_value == "" for u in spent):
            out.append(
                f"all inter-AZ spend is untagged ({usd_text(usd)}, {qty_text(gb)} GB under "
                f"{key} with no value; nothing attributed to {names}): is {key} activated as a "
                "cost allocation tag in Billing? Until it is, Cost Explorer reports all spend "
                "as untagged and the budget verdict means nothing")
        else:
            others = ", ".join(sorted(u.tag_value for u in spent if u.tag_value))
            out.append(
                f"no inter-AZ spend was attributed to {names}, yet {usd_text(usd)} "
                f"({qty_text(gb)} GB) was billed under {key} (untagged or other values: "
                f"{others}): check that cost.tagValue matches the tag on the resources and that "
                f"{key} is activated as a cost allocation tag in Billing")
    return tuple(out)
