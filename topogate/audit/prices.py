"""Reference tables the audit needs: AWS usage-type region prefixes and inter-zone prices.

Both tables are data with their sources, so a reader can check each figure against the page it
came from. The price table lives in topogate/core/zoneprices.py (the monitoring rules read it
too) and is re-exported here.
"""

from __future__ import annotations

from topogate.core.zoneprices import PRICES, InterZonePrice

# Cost Explorer usage types start with a billing code for the Region ("USW2-DataTransfer-...").
# Source: "AWS Region billing codes",
# https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-region-billing-codes.html
# (read 2026-11-29), cross-checked for the European codes against the S3 usage-report page
# (https://docs.aws.amazon.com/AmazonS3/latest/userguide/aws-usage-report-understand.html).
# us-east-1 is special: its usage types carry USE1 or no prefix at all.
REGION_PREFIXES: dict[str, str] = {
    # North America
    "USE1": "us-east-1",
    "USE2": "us-east-2",
    "USW1": "us-west-1",
    "USW2": "us-west-2",
    "CAN1": "ca-central-1",
    "CAN2": "ca-west-1",
    "MXC1": "mx-central-1",
    # Africa
    "AFS1": "af-south-1",
    # Asia Pacific
    "APE1": "ap-east-1",
    "APE2": "ap-east-2",
    "APN1": "ap-northeast-1",
    "APN2": "ap-northeast-2",
    "APN3": "ap-northeast-3",
    "APS1": "ap-southeast-1",
    "APS2": "ap-southeast-2",
    "APS3": "ap-south-1",
    "APS4": "ap-southeast-3",
    "APS5": "ap-south-2",
    "APS6": "ap-southeast-4",
    "APS7": "ap-southeast-5",
    "APS8": "ap-southeast-6",
    "APS9": "ap-southeast-7",
    # Europe: Ireland is plain "EU", the oldest code.
    "EU": "eu-west-1",
    "EUW2": "eu-west-2",
    "EUW3": "eu-west-3",
    "EUC1": "eu-central-1",
    "EUC2": "eu-central-2",
    "EUN1": "eu-north-1",
    "EUS1": "eu-south-1",
    "EUS2": "eu-south-2",
    # Middle East, Israel, South America
    "MES1": "me-south-1",
    "MEC1": "me-central-1",
    "ILC1": "il-central-1",
    "SAE1": "sa-east-1",
    # GovCloud
    "UGW1": "us-gov-west-1",
    "UGE1": "us-gov-east-1",
}

REGION_TO_PREFIX: dict[str, str] = {region: prefix for prefix, region in REGION_PREFIXES.items()}

# The inter-AZ usage type, after the region prefix.
INTER_AZ_SUFFIX = "DataTransfer-Regional-Bytes"
NO_PREFIX_REGION = "us-east-1"


def region_of_usage_type(usage_type: str) -> str | None:
    """The Region a usage type is billed in, or None when its prefix is not in the table.

    "USE2-DataTransfer-Regional-Bytes" -> "us-east-2"; "DataTransfer-Regional-Bytes" (no
    prefix) -> "us-east-1"; "XYZ9-DataTransfer-Regional-Bytes" -> None.
    """
    head, sep, _rest = usage_type.partition("-")
    if not sep:
        return NO_PREFIX_REGION
    if head in REGION_PREFIXES:
        return REGION_PREFIXES[head]
    # A prefix is 2-4 upper-case letters/digits. Anything else ("DataTransfer-...") is the
    # usage type itself with no prefix, which means us-east-1.
    if head.isalnum() and head.isupper() and 2 <= len(head) <= 4:
        return None
    return NO_PREFIX_REGION


def inter_az_usage_types(region: str) -> tuple[str, ...]:
    """The usage type names inter-AZ transfer in `region` is billed under.

    us-east-1 appears both with and without the USE1 prefix in bills, so both are asked for;
    an unknown region yields nothing (the usage type group filter still covers it).
    """
    prefix = REGION_TO_PREFIX.get(region)
    if prefix is None:
        return ()
    names = [f"{prefix}-{INTER_AZ_SUFFIX}"]
    if region == NO_PREFIX_REGION:
        names.append(INTER_AZ_SUFFIX)
    return tuple(names)



__all__ = ["INTER_AZ_SUFFIX", "PRICES", "REGION_PREFIXES", "InterZonePrice", "inter_az_usage_types",
           "region_of_usage_type"]
