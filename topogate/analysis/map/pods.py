"""Pods as the network-policy evaluator sees them: the pod class of a group or pod template,
and the pod template of workload kinds that are not training jobs.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from topogate.analysis.netpolicy import PodClass, PolicySet
from topogate.sources.manifests import K8sObject


def pod_class(ns: str, labels: Iterable[tuple[str, str]], spec: dict[str, Any],
               pset: PolicySet) -> PodClass:
    ports: list[tuple[str, int, str]] = []
    for c in spec.get("containers") or []:
        for p in (c.get("ports") or []) if isinstance(c, dict) else []:
            if isinstance(p, dict) and p.get("name") and isinstance(p.get("containerPort"), int):
                ports.append((str(p["name"]), int(p["containerPort"]), str(p.get("protocol", "TCP"))))
    return PodClass(ns, tuple(sorted(labels)), pset.namespace_labels(ns), tuple(sorted(ports)),
                    spec.get("serviceAccountName") or None)


def pod_template(o: K8sObject) -> dict[str, Any] | None:
    spec = o.obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if o.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet", "Job"):
        t = spec.get("template")
        return t if isinstance(t, dict) else None
    if o.kind == "CronJob":
        t = ((spec.get("jobTemplate") or {}).get("spec") or {}).get("template")
        return t if isinstance(t, dict) else None
    if o.kind == "Pod":
        return {"metadata": o.obj.get("metadata") or {}, "spec": spec}
    return None
