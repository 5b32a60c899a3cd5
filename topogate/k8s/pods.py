"""A pod's identity as a network policy sees it: namespace, labels, service account, named ports.

The one extractor: `check` (its proofs and rules), `trace` and `check --live` read a pod template
through here, so they cannot disagree on who a pod is.

- The service account is `default` when the template names none: the API server's
  ServiceAccount admission sets it, and Cilium derives the
  `io.cilium.k8s.policy.serviceaccount` label from it.
- Named ports come from the containers and from the restartable init containers (sidecars,
  `restartPolicy: Always`), which run beside them for the pod's whole life; an init container
  that runs to completion serves nothing. The protocol is upper-case, TCP when unset.
- A plain workload's pods carry the labels their controller stamps on them besides the
  template's: a Job's `batch.kubernetes.io/job-name` and `job-name`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topogate.core.labels import Pairs
from topogate.k8s.kinds import PLAIN_POD_TEMPLATES, Path, dig

DEFAULT_SERVICE_ACCOUNT = "default"


@dataclass(frozen=True)
class PodIdentity:
    namespace: str
    labels: Pairs  # sorted
    service_account: str
    named_ports: tuple[tuple[str, int, str], ...]  # (name, number, protocol), sorted


def _containers(spec: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    for c in spec.get("containers") or ():
        if isinstance(c, Mapping):
            yield c
    for c in spec.get("initContainers") or ():
        if isinstance(c, Mapping) and c.get("restartPolicy") == "Always":
            yield c


def named_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int, str], ...]:
    out: set[tuple[str, int, str]] = set()
    for c in _containers(spec):
        for p in c.get("ports") or ():
            if isinstance(p, Mapping) and p.get("name") and isinstance(p.get("containerPort"), int):
                out.add((str(p["name"]), int(p["containerPort"]), str(p.get("protocol") or "TCP").upper()))
    return tuple(sorted(out))


def service_account(spec: Mapping[str, Any]) -> str:
    # `serviceAccount` is the deprecated alias the API server still fills from the other.
    return str(spec.get("serviceAccountName") or spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT)


def pod_identity(namespace: str, labels: Iterable[tuple[str, str]] | Mapping[str, Any],
                 spec: Mapping[str, Any]) -> PodIdentity:
    items = labels.items() if isinstance(labels, Mapping) else labels
    pairs = tuple(sorted((str(k), "" if v is None else str(v)) for k, v in items))
    return PodIdentity(namespace, pairs, service_account(spec), named_ports(spec))


@dataclass(frozen=True)
class PlainTemplate:
    """The pod template of a workload that is not a training job (Deployment, Job, Pod, ...)."""

    labels: dict[str, str]  # the template's, and those its controller adds
    spec: dict[str, Any]
    path: Path  # of the template inside the object


def plain_template(kind: str, name: str, obj: Mapping[str, Any]) -> PlainTemplate | None:
    """The pod template of an object of a PLAIN_POD_TEMPLATES kind, or None."""
    path = PLAIN_POD_TEMPLATES.get(kind)
    if path is None:
        return None
    if not isinstance(obj.get("spec"), dict):
        return None
    tpl = dig(obj, path) if path else {"metadata": obj.get("metadata") or {}, "spec": obj.get("spec")}
    if not isinstance(tpl, dict):
        return None
    meta = tpl.get("metadata")
    raw = meta.get("labels") if isinstance(meta, dict) else None
    labels = {str(k): "" if v is None else str(v) for k, v in raw.items()} if isinstance(raw, dict) else {}
    if kind == "Job":
        # The Job controller stamps its name on its pods (kubernetes.io labels reference).
        labels.update({"batch.kubernetes.io/job-name": name, "job-name": name})
    spec = tpl.get("spec")
    return PlainTemplate(labels, spec if isinstance(spec, dict) else {}, path)


__all__ = ["DEFAULT_SERVICE_ACCOUNT", "PlainTemplate", "PodIdentity", "named_ports", "plain_template",
           "pod_identity", "service_account"]
