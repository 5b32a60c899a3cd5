"""A cluster's `cilium:` block: the Cilium agent as configured (what of its cilium-config changes a
verdict). The schema checks each value's shape; here what the schema cannot: each entry of
`labels` must be a regular expression the agent could compile. `analysis.netpolicy.agent_for`
turns the block into the agent the evaluator asks."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from topogate.inventory.model import CiliumConfig

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath

__all__ = ["read_cilium"]


def _words(value: Any) -> tuple[str, ...] | None:
    return tuple(value.split()) if isinstance(value, str) else None


def _flag(value: Any) -> bool | None:
    return value if isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def read_cilium(chk: Checker, base: YPath, c: dict[str, Any]) -> CiliumConfig | None:
    block = c.get("cilium")
    if not isinstance(block, dict):
        return None
    path = base + ("cilium",)
    labels = _words(block.get("labels"))
    for entry in labels or ():
        prefix = entry.partition(":")[2] if ":" in entry else entry
        prefix = prefix[1:] if prefix.startswith("!") else prefix
        if not prefix:
            chk.err(path + ("labels",), f"labels entry {entry!r} has no prefix after its source and '!': "
                                        "the agent refuses to start with it; write e.g. k8s:app")
            continue
        try:
            re.compile(prefix)
        except re.error as err:
            chk.err(path + ("labels",), f"labels entry {entry!r} is not a regular expression ({err}): the "
                                        "agent refuses to start with it; escape dots and brackets, e.g. "
                                        r"k8s:app\.kubernetes\.io")
    return CiliumConfig(
        version=_text(block.get("version")),
        labels=labels,
        policy_cidr_match_mode=_words(block.get("policyCIDRMatchMode")),
        enable_node_selector_labels=_flag(block.get("enableNodeSelectorLabels")),
        allow_localhost=_text(block.get("allowLocalhost")),
        policy_enforcement=_text(block.get("policyEnforcement")),
        cluster_name=_text(block.get("clusterName")),
        kube_api_server=_text(block.get("kubeAPIServer")),
        enable_k8s_cluster_network_policy=_flag(block.get("enableK8sClusterNetworkPolicy")),
        pos=chk.loc.at(path),
    )
