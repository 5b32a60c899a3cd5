"""What the audit found, and how its amounts are shown: shared by the judge, the run and the reports."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Context, Decimal
from typing import Any

from topogate.audit import prices
from topogate.audit.attribute import FlowAudit
from topogate.audit.page import Row
from topogate.core.exitcodes import exit_when

CE_PRICE_PER_REQUEST = Decimal("0.01")
CENT = Decimal("0.01")


@dataclass(frozen=True)
class DayCost:
    day: dt.date
    gb: Decimal
    usd: Decimal
    estimated: bool
    over_budget: bool | None  # None: no budget in the inventory


@dataclass(frozen=True)
class Estimate:
    """For clusters Cost Explorer cannot see: the price, and the volume the budget buys."""

    price: prices.InterZonePrice
    budget_volume_per_day: Decimal | None  # units (GB/GiB) per day the budget allows


@dataclass(frozen=True)
class ClusterAudit:
    name: str
    provider: str
    region: str
    tag: str  # "key=value" as in the inventory ("key=*" without tagValue); "" if not measured
    budget_usd_per_day: float | None
    measured: bool  # True: figures from Cost Explorer; False: estimate or nothing
    days: tuple[DayCost, ...] = ()
    may_split: tuple[str, ...] | None = None  # None: the analysis did not run
    cause: str = ""
    estimate: Estimate | None = None
    regions_billed: tuple[str, ...] = ()  # usage-type Regions seen for this cluster

    @property
    def total_gb(self) -> Decimal:
        return sum((d.gb for d in self.days), Decimal(0))

    @property
    def total_usd(self) -> Decimal:
        return sum((d.usd for d in self.days), Decimal(0))

    @property
    def over_budget(self) -> bool:
        return any(d.over_budget for d in self.days)


@dataclass(frozen=True)
class Unattributed:
    """Inter-AZ spend under a tag key that matches no cluster (untagged, or another value)."""

    tag_key: str
    tag_value: str  # "" = resources without a value for the key
    gb: Decimal
    usd: Decimal


@dataclass(frozen=True)
class RequestRecord:
    operation: str
    params: Mapping[str, Any]


@dataclass(frozen=True)
class AuditResult:
    start: dt.date
    end: dt.date  # exclusive
    clusters: tuple[ClusterAudit, ...]
    unattributed: tuple[Unattributed, ...] = ()
    warnings: tuple[str, ...] = ()
    estimated_days: tuple[dt.date, ...] = ()
    rows: tuple[Row, ...] = ()  # every row read, for tracing figures to responses
    requests: int = 0  # API calls Cost Explorer answered (each is billed $0.01)
    attempts: int = 0  # HTTP attempts including botocore retries (answered or not)
    verified_usage_types: tuple[str, ...] | None = None  # None: --verify-usage-types not used
    all_zero: bool = False
    # Prominent warnings that put the verdict itself in doubt (e.g. the cost tag is not
    # activated, so every dollar is "untagged" and every cluster looks within budget).
    alerts: tuple[str, ...] = ()
    flows: FlowAudit | None = None  # --flow-logs: measured inter-AZ bytes per training job

    @property
    def over_budget(self) -> tuple[ClusterAudit, ...]:
        return tuple(c for c in self.clusters if c.measured and c.over_budget)

    @property
    def exit_code(self) -> int:
        jobs_over = self.flows is not None and bool(self.flows.over_budget)
        return exit_when(bool(self.over_budget) or jobs_over)

    @property
    def request_cost_usd(self) -> Decimal:
        return CE_PRICE_PER_REQUEST * self.requests



def _cents(x: Decimal) -> Decimal:
    # A context wide enough for any finite amount: quantize in the default 28-digit context
    # raised InvalidOperation on 1e30 and crashed the renderers after the verdict was made.
    if not x.is_finite():
        return x
    prec = max(28, x.adjusted() + 4)
    return x.quantize(CENT, rounding=ROUND_HALF_UP, context=Context(prec=prec))


def usd_text(x: Decimal) -> str:
    """Dollars for display, rounded half up ($1.505 -> $1.51); sums use unrounded amounts."""
    return f"${_cents(x):,.2f}"


def qty_text(x: Decimal) -> str:
    """A quantity (GB, GiB) for display, rounded half up to two decimals."""
    return f"{_cents(x):,.2f}"
