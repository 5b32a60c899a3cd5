"""The rules: one module per rule, a stable ID, a kebab-case name, the docstring is its doc.

The registry is explicit so an ID can never change by renaming a file. `FACTS` is every fact a
family declares (policies/<family>/facts.py), for the map to compute (analysis.map.build_map).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from topogate.analysis.map.facts import Fact
from topogate.policies.coverage import facts as coverage_facts
from topogate.policies.coverage import (
    tg120_not_modelled,
    tg121_no_pods,
    tg122_runtime_missing,
    tg123_skipped_file,
    tg124_unread_kind,
    tg125_policy_refused,
    tg126_selects_no_pod,
    tg127_peer_selects_no_pod,
    tg128_dra_claim_not_modelled,
    tg129_other_scheduler,
)
from topogate.policies.inputs import facts as inputs_facts
from topogate.policies.inputs import (
    tg001_inventory_invalid,
    tg002_drift,
    tg003_waiver_expired,
    tg004_unknown_cluster,
    tg005_ungrouped_pods,
    tg006_nothing_analysed,
    tg007_duplicate_object,
    tg008_workload_absent,
    tg009_remote_root,
    tg010_suppression_invalid,
    tg011_settings_weakened,
    tg012_gitops_not_rendered,
    tg013_gitops_variable_unset,
    tg014_gitops_render_fails,
)
from topogate.policies.jobs import facts as jobs_facts
from topogate.policies.jobs import (
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
    tg112_job_open_ingress,
    tg113_door_closed,
    tg114_fqdn_wildcard_apex,
)
from topogate.policies.kueue import facts as kueue_facts
from topogate.policies.kueue import (
    tg301_kueue_no_queue,
    tg302_kueue_flavor_without_topology,
    tg303_kueue_unknown_level,
    tg304_kueue_preferred_topology,
    tg305_kueue_podset_left_out,
    tg306_kueue_invalid_group,
    tg307_kueue_queue_unverified,
)
from topogate.policies.live import (
    tg201_zone_drift,
    tg202_pool_size_drift,
    tg203_pool_scheduling_drift,
    tg204_gpu_drift,
    tg205_undescribed_nodes,
    tg206_running_split,
    tg207_pending_no_fit,
    tg208_unmanaged_policy,
    tg209_policy_differs,
    tg210_carried_flow_denied,
)

REGISTRY: dict[str, ModuleType] = {
    "TG001": tg001_inventory_invalid,
    "TG002": tg002_drift,
    "TG003": tg003_waiver_expired,
    "TG004": tg004_unknown_cluster,
    "TG005": tg005_ungrouped_pods,
    "TG006": tg006_nothing_analysed,
    "TG007": tg007_duplicate_object,
    "TG008": tg008_workload_absent,
    "TG009": tg009_remote_root,
    "TG010": tg010_suppression_invalid,
    "TG011": tg011_settings_weakened,
    "TG012": tg012_gitops_not_rendered,
    "TG013": tg013_gitops_variable_unset,
    "TG014": tg014_gitops_render_fails,
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
    "TG112": tg112_job_open_ingress,
    "TG113": tg113_door_closed,
    "TG114": tg114_fqdn_wildcard_apex,
    "TG120": tg120_not_modelled,
    "TG121": tg121_no_pods,
    "TG122": tg122_runtime_missing,
    "TG123": tg123_skipped_file,
    "TG124": tg124_unread_kind,
    "TG125": tg125_policy_refused,
    "TG126": tg126_selects_no_pod,
    "TG127": tg127_peer_selects_no_pod,
    "TG128": tg128_dra_claim_not_modelled,
    "TG129": tg129_other_scheduler,
    "TG201": tg201_zone_drift,
    "TG202": tg202_pool_size_drift,
    "TG203": tg203_pool_scheduling_drift,
    "TG204": tg204_gpu_drift,
    "TG205": tg205_undescribed_nodes,
    "TG206": tg206_running_split,
    "TG207": tg207_pending_no_fit,
    "TG208": tg208_unmanaged_policy,
    "TG209": tg209_policy_differs,
    "TG210": tg210_carried_flow_denied,
    "TG301": tg301_kueue_no_queue,
    "TG302": tg302_kueue_flavor_without_topology,
    "TG303": tg303_kueue_unknown_level,
    "TG304": tg304_kueue_preferred_topology,
    "TG305": tg305_kueue_podset_left_out,
    "TG306": tg306_kueue_invalid_group,
    "TG307": tg307_kueue_queue_unverified,
}

FACTS: tuple[Fact[Any, Any], ...] = (*inputs_facts.FACTS, *jobs_facts.FACTS, *coverage_facts.FACTS,
                                     *kueue_facts.FACTS)

__all__ = ["FACTS", "REGISTRY"]
