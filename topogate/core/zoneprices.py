"""Inter-zone transfer list prices per provider, with their sources: the audit's dollars and the
monitoring rules' dollars-per-day estimate read this one table.

Prices for providers other than AWS are ESTIMATES from public list prices: the audit measures
AWS through Cost Explorer and only estimates the rest.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal


@dataclass(frozen=True)
class InterZonePrice:
    """A list price for traffic between zones of one region, per unit, each direction."""

    provider: str
    usd_per_unit: Decimal
    unit: str  # "GB" (10^9 bytes) or "GiB" (2^30 bytes): providers differ and so do bills
    source: str
    read_on: str  # the date the source was read: prices change
    note: str = ""
    # Sides of one transfer that are billed: AWS bills the bytes out of one zone and into the
    # other, so one byte sent costs usd_per_unit twice when both ends are in the account.
    billed_sides: int = 1

    @property
    def bytes_per_unit(self) -> int:
        return 10**9 if self.unit == "GB" else 2**30


# AWS is measured, not estimated; its list price is kept for the report's context line.
PRICES: dict[str, InterZonePrice] = {
    "aws": InterZonePrice(
        provider="aws",
        usd_per_unit=Decimal("0.01"),
        unit="GB",
        source="https://aws.amazon.com/ec2/pricing/on-demand/#Data_Transfer_within_the_same_AWS_Region",
        read_on="2026-11-29",
        note="charged in each direction; measured from Cost Explorer, not estimated",
        billed_sides=2,
    ),
    "gcp": InterZonePrice(
        provider="gcp",
        usd_per_unit=Decimal("0.01"),
        unit="GiB",
        source="https://cloud.google.com/vpc/network-pricing (VM-to-VM data transfer, "
               "between zones in the same region)",
        read_on="2026-11-29",
        note="estimate: list price, each direction; committed-use or negotiated prices differ",
    ),
    "azure": InterZonePrice(
        provider="azure",
        usd_per_unit=Decimal("0"),
        unit="GB",
        source="https://learn.microsoft.com/azure/reliability/availability-zones-overview "
               "(\"Azure doesn't charge for data transfer between availability zones in the same "
               "region, whether you use private or public IP addressing.\")",
        read_on="2026-11-29",
        note="estimate: Microsoft announced in May 2024 that inter-AZ transfer is not billed; "
             "traffic across peered VNets is still billed as VNet peering (about $0.01/GB "
             "each side)",
    ),
}


__all__ = ["PRICES", "InterZonePrice"]
