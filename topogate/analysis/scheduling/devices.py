"""Which DeviceClass the devices of a pool belong to (Dynamic Resource Allocation).

A pool declares its devices by DeviceClass (``deviceClass: gpu.nvidia.com``: they are that
class's) or by driver and attributes, as its ResourceSlices publish them. A DeviceClass selects
devices with CEL expressions over ``device.driver`` and ``device.attributes[domain].name``
(https://kubernetes.io/docs/concepts/scheduling-eviction/dynamic-resource-allocation/); every one
of its selectors must hold. topogate reads the expressions made only of comparisons
``device.driver == "<driver>"`` and ``device.attributes["<domain>"].<name> == <value>`` joined by
``&&``; a device's attribute without a domain is in its driver's domain, as in a ResourceSlice.
A class with any other expression matches no pool declared by driver (a pool may still name the
class in ``deviceClass``), and ``unreadable`` says so.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from topogate.inventory.model import PoolDevice

__all__ = ["class_counts", "class_selects", "unreadable"]

_DRIVER = re.compile(r'^device\.driver\s*==\s*"([^"]*)"$')
_ATTR = re.compile(r'^device\.attributes\["([^"]+)"\]\.([A-Za-z0-9_]+)\s*==\s*(.+)$')


def _value(text: str) -> str | int | bool | None:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    if text in ("true", "false"):
        return text == "true"
    if re.fullmatch(r"-?[0-9]+", text):
        return int(text)
    return None


def _clauses(spec: Mapping[str, Any]) -> list[str] | None:
    """Every comparison of every CEL selector of the class, or None if one is not readable."""
    out: list[str] = []
    for sel in spec.get("selectors") or []:
        cel = sel.get("cel") if isinstance(sel, Mapping) else None
        expr = cel.get("expression") if isinstance(cel, Mapping) else None
        if not isinstance(expr, str):
            return None
        for part in expr.split("&&"):
            part = part.strip().strip("()").strip()
            if not (_DRIVER.match(part) or _ATTR.match(part)):
                return None
            out.append(part)
    return out


def unreadable(spec: Mapping[str, Any]) -> bool:
    return _clauses(spec) is None


def class_selects(spec: Mapping[str, Any], device: PoolDevice) -> bool:
    """Whether a DeviceClass (its spec) selects a pool's devices declared by driver."""
    clauses = _clauses(spec)
    if clauses is None or not device.driver:
        return False
    attrs: dict[tuple[str, str], Any] = {}
    for k, v in device.attributes:
        domain, _, name = k.rpartition("/")
        attrs[(domain or device.driver, name)] = v
    for c in clauses:
        m = _DRIVER.match(c)
        if m is not None:
            if m.group(1) != device.driver:
                return False
            continue
        a = _ATTR.match(c)
        assert a is not None
        want = _value(a.group(3))
        have = attrs.get((a.group(1), a.group(2)))
        if want is None or have is None or type(have) is not type(want) or have != want:
            return False
    return True


def class_counts(devices: Iterable[PoolDevice], classes: Mapping[str, Mapping[str, Any]]) -> tuple[tuple[str, int], ...]:
    """Devices per node of each DeviceClass: those the pool names by class, and those of its
    driver-declared devices each known class selects."""
    out: dict[str, int] = {}
    for d in devices:
        if d.device_class:
            out[d.device_class] = out.get(d.device_class, 0) + d.count
        elif d.driver:
            for name, spec in classes.items():
                if class_selects(spec, d):
                    out[name] = out.get(name, 0) + d.count
    return tuple(sorted(out.items()))
