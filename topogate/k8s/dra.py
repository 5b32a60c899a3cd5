"""Devices a pod claims through Dynamic Resource Allocation (resource.k8s.io/v1; v1beta1's flat
request shape read too).

A pod lists ``spec.resourceClaims``: each names a ResourceClaimTemplate (the resourceclaim
controller makes one ResourceClaim per pod from it) or a ResourceClaim by name (one allocation
that every pod naming it shares). A claim's ``spec.devices.requests`` each ask for devices of
one DeviceClass: ``exactly`` (``count`` devices, default 1; ``allocationMode: All`` every
matching device of the node, at least one), or ``firstAvailable``, alternatives the scheduler
tries in order. The scheduler allocates every claim of the pod before binding it
(DynamicResources plugin), from the devices ResourceSlices publish on the node; containers'
``resources.claims`` only say which container sees which device.

What topogate counts: per pod, devices per DeviceClass. What it cannot model is named with the
way the verdict may be wrong (``problems``): CEL ``selectors`` of a request (topogate counts every
device of the class: too permissive), ``constraints`` with ``matchAttribute`` (devices that must
share an attribute: too permissive), ``firstAvailable`` (the first alternative is counted: wrong
either way), ``adminAccess`` (allocates nothing: counted as nothing), a template or claim not
among the manifests (nothing counted: too permissive).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DEVICE_CLASS", "ClaimIndex", "PodDevices", "pod_devices"]

RESOURCE_GROUP = "resource.k8s.io"
DEVICE_CLASS = "DeviceClass"


@dataclass(frozen=True)
class DeviceRequest:
    """Devices one request of one claim asks for, per pod (or once, for a shared claim)."""

    claim: str  # the pod's name for the claim
    request: str
    device_class: str
    count: int
    all: bool = False  # allocationMode: All
    shared: bool = False  # a ResourceClaim by name: one allocation for every pod naming it
    source: str = ""  # ResourceClaimTemplate/<ns>/<name> or ResourceClaim/<ns>/<name>


@dataclass(frozen=True)
class PodDevices:
    requests: tuple[DeviceRequest, ...] = ()
    problems: tuple[str, ...] = ()  # what topogate cannot model, and which way the verdict may be wrong

    @property
    def per_pod(self) -> dict[str, int]:
        """Devices per DeviceClass each pod needs on its node (a shared claim's too: its devices
        are on the node of the pods that share it)."""
        out: dict[str, int] = {}
        for r in self.requests:
            out[r.device_class] = out.get(r.device_class, 0) + r.count
        return out

    @property
    def count(self) -> int:
        return sum(self.per_pod.values())


def _api_group(obj: Mapping[str, Any]) -> str:
    return str(obj.get("apiVersion", "")).split("/", 1)[0]


class ClaimIndex:
    """The ResourceClaimTemplates, ResourceClaims and DeviceClasses among the manifests."""

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()) -> None:
        self.templates: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.claims: dict[tuple[str, str], Mapping[str, Any]] = {}
        self.classes: dict[str, Mapping[str, Any]] = {}
        for o in objects:
            if not isinstance(o, Mapping) or _api_group(o) != RESOURCE_GROUP:
                continue
            md = o.get("metadata") if isinstance(o.get("metadata"), Mapping) else {}
            assert isinstance(md, Mapping)
            name, ns = str(md.get("name", "")), str(md.get("namespace") or "default")
            spec = o.get("spec") if isinstance(o.get("spec"), Mapping) else {}
            assert isinstance(spec, Mapping)
            if o.get("kind") == "ResourceClaimTemplate":
                inner = spec.get("spec")
                self.templates.setdefault((ns, name), inner if isinstance(inner, Mapping) else {})
            elif o.get("kind") == "ResourceClaim":
                self.claims.setdefault((ns, name), spec)
            elif o.get("kind") == DEVICE_CLASS:
                self.classes.setdefault(name, spec)

    def __bool__(self) -> bool:
        return bool(self.templates or self.claims or self.classes)


def pod_devices(spec: Mapping[str, Any], namespace: str, index: ClaimIndex) -> PodDevices:
    """The devices a pod spec claims, resolved against the manifests' templates and claims."""
    claims = spec.get("resourceClaims")
    if not isinstance(claims, list) or not claims:
        return PodDevices()
    requests: list[DeviceRequest] = []
    problems: list[str] = []
    for c in claims:
        if not isinstance(c, Mapping):
            continue
        cname = str(c.get("name", ""))
        if c.get("resourceClaimTemplateName"):
            ref = ("ResourceClaimTemplate", str(c["resourceClaimTemplateName"]))
            body = index.templates.get((namespace, ref[1]))
            shared = False
        elif c.get("resourceClaimName"):
            ref = ("ResourceClaim", str(c["resourceClaimName"]))
            body = index.claims.get((namespace, ref[1]))
            shared = True
        else:
            continue
        source = f"{ref[0]}/{namespace}/{ref[1]}"
        if body is None:
            problems.append(f"claim {cname} names {source}, which is not among the manifests: its devices are not "
                            "counted (the verdict may be too permissive)")
            continue
        devices = body.get("devices") if isinstance(body.get("devices"), Mapping) else {}
        assert isinstance(devices, Mapping)
        for r in devices.get("requests") or []:
            if isinstance(r, Mapping):
                got = _request(cname, r, shared, source, problems)
                if got is not None:
                    requests.append(got)
        for con in devices.get("constraints") or []:
            if isinstance(con, Mapping) and con.get("matchAttribute"):
                problems.append(f"claim {cname} ({source}) requires its devices to share {con['matchAttribute']} "
                                "(constraints.matchAttribute), which topogate does not check: the verdict may be too "
                                "permissive")
    return PodDevices(tuple(requests), tuple(dict.fromkeys(problems)))


def _request(cname: str, r: Mapping[str, Any], shared: bool, source: str, problems: list[str]) -> DeviceRequest | None:
    name = str(r.get("name", ""))
    where = f"request {name} of claim {cname} ({source})"
    body: Mapping[str, Any] = r
    if isinstance(r.get("exactly"), Mapping):
        body = r["exactly"]
    elif isinstance(r.get("firstAvailable"), list) and r["firstAvailable"]:
        first = r["firstAvailable"][0]
        body = first if isinstance(first, Mapping) else {}
        problems.append(f"{where} lists alternatives (firstAvailable); topogate counts the first, "
                        f"{body.get('deviceClassName', '')}: the verdict may be wrong either way")
    cls = str(body.get("deviceClassName", ""))
    if not cls:
        return None
    if body.get("selectors"):
        problems.append(f"{where} narrows DeviceClass {cls} with CEL selectors, which topogate does not evaluate: it "
                        "counts every device of the class (the verdict may be too permissive)")
    if body.get("adminAccess") is True:
        return None  # admin access allocates no device: it sees devices in use
    mode = body.get("allocationMode") or "ExactCount"
    if mode == "All":
        return DeviceRequest(cname, name, cls, 1, True, shared, source)
    count = body.get("count", 1)
    count = count if isinstance(count, int) and not isinstance(count, bool) and count > 0 else 1
    return DeviceRequest(cname, name, cls, count, False, shared, source)
