"""The rules: one module per rule, a stable ID, a kebab-case name, the docstring is its doc.

The registry is explicit so an ID can never change by renaming a file.
"""

from __future__ import annotations

from types import ModuleType

from topogate.policies import (
    tg001_inventory_invalid,
    tg002_drift,
    tg003_waiver_expired,
    tg004_unknown_cluster,
    tg010_suppression_invalid,
    tg101_hard_block,
    tg102_may_split,
    tg103_unschedulable,
    tg104_over_capacity,
    tg105_spread_splits,
    tg106_zone_label_lies,
    tg107_opens_boundary,
    tg108_dns_blocked,
    tg109_dangling_policy,
    tg110_unprotected_job,
    tg111_may_strand,
)

REGISTRY: dict[str, ModuleType] = {
    "TG001": tg001_inventory_invalid,
    "TG002": tg002_drift,
    "TG003": tg003_waiver_expired,
    "TG004": tg004_unknown_cluster,
    "TG010": tg010_suppression_invalid,
    "TG101": tg101_hard_block,
    "TG102": tg102_may_split,
    "TG103": tg103_unschedulable,
    "TG104": tg104_over_capacity,
    "TG105": tg105_spread_splits,
    "TG106": tg106_zone_label_lies,
    "TG107": tg107_opens_boundary,
    "TG108": tg108_dns_blocked,
    "TG109": tg109_dangling_policy,
    "TG110": tg110_unprotected_job,
    "TG111": tg111_may_strand,
}
