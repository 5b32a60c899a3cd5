"""Pure Cost Explorer request building: no clock, no I/O, so each request is testable by equality."""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topogate.audit import prices
from topogate.audit.errors import ConfigError
from topogate.inventory.model import Cluster, Inventory

USAGE_TYPE_GROUP = "EC2: Data Transfer - Inter AZ"
METRICS = ("UnblendedCost", "UsageQuantity")
GRANULARITY = "DAILY"


@dataclass(frozen=True)
class Query:
    """One GetCostAndUsage query chain: all clusters that share a cost tag key.

    Grouping by the tag key gives every value of the key in one answer, so clusters tagged
    `team=a`, `team=b` cost one chain of requests, not two. The second GroupBy slot holds
    USAGE_TYPE so each row says which Region it was billed in.
    """

    tag_key: str
    clusters: tuple[str, ...]
    usage_types: tuple[str, ...]


def aws_clusters(inv: Inventory) -> tuple[Cluster, ...]:
    return tuple(c for c in inv.clusters if c.provider == "aws")


def check_cost_config(inv: Inventory) -> None:
    """Every AWS cluster needs a cost tag, and no two clusters may claim the same tag."""
    missing = [c.name for c in aws_clusters(inv) if c.cost is None or not c.cost.tag_key]
    if missing:
        raise ConfigError(
            "no cost tag in the inventory for AWS cluster(s) " + ", ".join(missing)
            + ": set clusters[].cost.tagKey (and tagValue), e.g. "
            "{tagKey: kubernetes.io/cluster/NAME, tagValue: owned}, and activate it as a "
            "cost allocation tag in the Billing console")
    seen: dict[tuple[str, str | None], str] = {}
    for c in aws_clusters(inv):
        assert c.cost is not None and c.cost.tag_key
        claim = (c.cost.tag_key, c.cost.tag_value or None)
        # A cluster without tagValue claims every value of its key; it then must not share it.
        clash = seen.get(claim) or next(
            (n for (k, v), n in seen.items() if k == claim[0] and (v is None or claim[1] is None)),
            None)
        if clash:
            raise ConfigError(f"clusters {clash} and {c.name} claim the same cost tag "
                              f"{claim[0]}={claim[1] or '*'}: their costs cannot be told apart")
        seen[claim] = c.name


def plan_queries(inv: Inventory) -> tuple[Query, ...]:
    """The fewest query chains that cover every AWS cluster: one per distinct tag key."""
    check_cost_config(inv)
    by_key: dict[str, list[Cluster]] = {}
    for c in aws_clusters(inv):
        assert c.cost is not None and c.cost.tag_key
        by_key.setdefault(c.cost.tag_key, []).append(c)
    out = []
    for key in sorted(by_key):
        cs = by_key[key]
        types = sorted({t for c in cs for t in prices.inter_az_usage_types(c.region)})
        out.append(Query(key, tuple(c.name for c in cs), tuple(types)))
    return tuple(out)


def inter_az_filter(usage_types: Sequence[str]) -> dict[str, Any]:
    """Inter-AZ transfer: the usage type group, or the explicit per-Region usage types.

    Or, not And: the group covers Regions missing from our prefix table, and the explicit
    names still match if AWS renames or regroups the group. A misspelled name in either
    branch returns zero silently, which is what --verify-usage-types is for.
    """
    group = {"Dimensions": {"Key": "USAGE_TYPE_GROUP", "Values": [USAGE_TYPE_GROUP],
                            "MatchOptions": ["EQUALS"]}}
    if not usage_types:
        return group
    types = {"Dimensions": {"Key": "USAGE_TYPE", "Values": list(usage_types),
                            "MatchOptions": ["EQUALS"]}}
    return {"Or": [group, types]}


def cost_and_usage_request(query: Query, start: dt.date, end: dt.date,
                           token: str | None = None) -> dict[str, Any]:
    """The exact GetCostAndUsage parameters for one page of `query`."""
    req: dict[str, Any] = {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Granularity": GRANULARITY,
        "Metrics": list(METRICS),
        "Filter": inter_az_filter(query.usage_types),
        "GroupBy": [{"Type": "TAG", "Key": query.tag_key},
                    {"Type": "DIMENSION", "Key": "USAGE_TYPE"}],
    }
    if token:
        req["NextPageToken"] = token
    return req


def dimension_values_request(dimension: str, search: str, start: dt.date, end: dt.date,
                             token: str | None = None) -> dict[str, Any]:
    req: dict[str, Any] = {
        "TimePeriod": {"Start": start.isoformat(), "End": end.isoformat()},
        "Dimension": dimension,
        "SearchString": search,
        "Context": "COST_AND_USAGE",
    }
    if token:
        req["NextPageToken"] = token
    return req
