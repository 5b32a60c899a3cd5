"""The Cilium agent's configuration as a cluster holds it, for `topogate import`: the ConfigMap
kube-system/cilium-config (the settings) and the DaemonSet kube-system/cilium (the version, from
the agent container's image tag), turned into the inventory's `cilium:` block.

Only the keys that change a verdict are read, each checked against what the inventory accepts;
any other key of the ConfigMap is never looked at or printed. Neither object is a Secret. A
cluster that does not serve them, or an account not allowed to read them, leaves the block out
(the import says so): the version's defaults then decide, as for any inventory without one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from topogate.live.errors import LiveError
from topogate.live.http import Budget, get

__all__ = ["cilium_block", "fetch_agent_objects", "is_agent_object"]

NAMESPACE = "kube-system"
CONFIGMAP = "cilium-config"
DAEMONSET = "cilium"
_PATHS = {
    "ConfigMap": f"/api/v1/namespaces/{NAMESPACE}/configmaps/{CONFIGMAP}",
    "DaemonSet": f"/apis/apps/v1/namespaces/{NAMESPACE}/daemonsets/{DAEMONSET}",
}
_VERSION = re.compile(r":v?(1\.(?:18|19|20)(?:\.\d{1,3})?)(?:[-@].*)?$")
_CLUSTER_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$")
_MODES = re.compile(r"^ *((nodes|pods)( +(nodes|pods))* *)?$")


def is_agent_object(obj: Mapping[str, Any]) -> bool:
    raw = obj.get("metadata")
    md: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    key = (obj.get("kind"), md.get("namespace"), md.get("name"))
    return key in (("ConfigMap", NAMESPACE, CONFIGMAP), ("DaemonSet", NAMESPACE, DAEMONSET))


def fetch_agent_objects(api: Any, server: str, timeout: float, budget: Budget) -> tuple[list[dict[str, Any]], str]:
    """The two objects as far as the cluster serves them and the account may read them, and a
    note on what could not be read ("" when both were)."""
    got: list[dict[str, Any]] = []
    missing: list[str] = []
    for kind, path in _PATHS.items():
        name = f"{kind.lower()} {NAMESPACE}/{path.rsplit('/', 1)[1]}"
        try:
            answer = get(api, path, {}, timeout, budget, name, server)
        except LiveError:
            missing.append(name)
            continue
        doc: Any = None
        if answer.status == 200:
            try:
                doc = json.loads(answer.body)
            except (ValueError, RecursionError):
                doc = None
        if isinstance(doc, dict):
            doc.setdefault("kind", kind)
            got.append(doc)
        else:
            missing.append(f"{name} ({answer.status})")
    note = (f"could not read {', '.join(missing)}: the cilium: block is filled only from what was read"
            if missing else "")
    return got, note


def _flag(value: Any) -> bool | None:
    text = str(value).strip().lower()
    return {"true": True, "false": False}.get(text)


def _version(daemonset: Mapping[str, Any] | None) -> str | None:
    if not isinstance(daemonset, Mapping):
        return None
    spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict) and c.get("name") == "cilium-agent":
            m = _VERSION.search(str(c.get("image") or ""))
            return m.group(1) if m else None
    return None


def cilium_block(objects: list[dict[str, Any]], provider: str) -> dict[str, Any] | None:
    """The inventory's `cilium:` block from the agent's objects (None when there are none).
    `provider` (the cloud the nodes' labels say) names where the kube-apiserver runs when it is
    a managed control plane."""
    cm = next((o for o in objects if o.get("kind") == "ConfigMap"), None)
    ds = next((o for o in objects if o.get("kind") == "DaemonSet"), None)
    if cm is None and ds is None:
        return None
    raw = cm.get("data") if isinstance(cm, dict) else None
    data: Mapping[str, Any] = raw if isinstance(raw, dict) else {}
    block: dict[str, Any] = {}
    version = _version(ds)
    if version:
        block["version"] = version
    labels = data.get("labels")
    if isinstance(labels, str) and labels.strip() and len(labels) <= 8192:
        block["labels"] = " ".join(labels.split())
    mode = data.get("policy-cidr-match-mode")
    if isinstance(mode, str) and mode.strip() and _MODES.match(mode):
        block["policyCIDRMatchMode"] = " ".join(mode.split())
    for key, name in (("enable-node-selector-labels", "enableNodeSelectorLabels"),
                      ("enable-k8s-cluster-network-policy", "enableK8sClusterNetworkPolicy")):
        flag = _flag(data.get(key)) if key in data else None
        if flag is not None:
            block[name] = flag
    localhost = str(data.get("allow-localhost", "")).strip().lower()
    if localhost in ("auto", "always", "policy"):
        block["allowLocalhost"] = localhost
    enforcement = str(data.get("enable-policy", "")).strip().lower()
    if enforcement in ("default", "always", "never"):
        block["policyEnforcement"] = enforcement
    cluster = str(data.get("cluster-name", "")).strip()
    if _CLUSTER_NAME.match(cluster):
        block["clusterName"] = cluster
    if provider in ("aws", "gcp", "azure"):
        # EKS, GKE and AKS run the control plane outside the cluster's nodes.
        block["kubeAPIServer"] = "world"
    return block
