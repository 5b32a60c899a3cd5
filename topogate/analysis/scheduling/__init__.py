"""Node-filter semantics: can a pod land on the nodes of a pool, and if not, which constraint says no.

The unit of reasoning is a *node class*: all nodes of one inventory pool share their labels,
taints and GPU count, so the kube-scheduler's filters give the same answer for each of them.
``fit_pool`` runs the filters topogate models on one class and keeps every reason that removes
it, so ``explain`` can say "taint gpu=present:NoSchedule not tolerated" rather than "no".

Only filters are modelled (no scoring): a placement the scheduler merely prefers against is
still a placement that can happen. Everything here is a pure function of a pod spec (the dict
under a pod template's ``spec``) and the inventory model.

Where each part lives (the pages that pin each non-obvious rule are in the module's docstring):
``nodes`` (node classes, their labels, the per-class verdict), ``node_affinity`` (nodeSelector,
required node affinity, nodeName), ``taints`` (taints and tolerations), ``fit`` (the filter over
a cluster's pools, GPUs per node), ``selectors`` (pod label selectors for pod affinity and
topology spread), ``values`` (how loose spec values parse), ``devices`` (which DeviceClass a
pool's DRA devices belong to).
"""

from __future__ import annotations

from topogate.analysis.scheduling.devices import class_counts, class_selects, unreadable
from topogate.analysis.scheduling.fit import feasible_zones, filter_key, fit_pool, fit_pools
from topogate.analysis.scheduling.node_affinity import (
    node_affinity_removals,
    required_node_affinity,
    requirement_matches,
    term_failures,
    term_keys,
)
from topogate.analysis.scheduling.nodes import (
    AFFINITY_CONSTRAINTS,
    ARCH_LABEL,
    HOSTNAME_LABEL,
    OS_LABEL,
    REGION_LABEL,
    UNKNOWN,
    LabelValue,
    NodeClass,
    Pairs,
    PoolFit,
    Removal,
    node_classes,
)
from topogate.analysis.scheduling.selectors import selector_matches, with_label_keys
from topogate.analysis.scheduling.taints import (
    BLOCKING_EFFECTS,
    extended_resources,
    implicit_tolerations,
    taint_str,
    tolerates,
    untolerated_taints,
)

__all__ = [
    "AFFINITY_CONSTRAINTS", "ARCH_LABEL", "BLOCKING_EFFECTS", "HOSTNAME_LABEL", "OS_LABEL", "REGION_LABEL",
    "UNKNOWN", "LabelValue", "NodeClass", "Pairs", "PoolFit", "Removal", "extended_resources",
    "feasible_zones", "filter_key", "fit_pool", "fit_pools", "implicit_tolerations", "node_affinity_removals",
    "node_classes", "required_node_affinity", "requirement_matches", "selector_matches", "taint_str",
    "term_failures", "term_keys", "tolerates", "untolerated_taints", "with_label_keys",
    "class_counts", "class_selects", "unreadable",
]
