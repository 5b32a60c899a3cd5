"""Reading a pool's `devices`: what its nodes offer through Dynamic Resource Allocation."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topogate.inventory.model import PoolDevice
from topogate.inventory.values import as_int, as_map, seq

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath


def read_pool_devices(chk: Checker, pool: YPath, raw: Any) -> tuple[PoolDevice, ...]:
    out: list[PoolDevice] = []
    seen: dict[tuple[str, str, tuple[tuple[str, Any], ...]], int] = {}
    for i, d in enumerate(seq(raw)):
        if not isinstance(d, dict):
            continue
        path = pool + ("devices", i)
        cls = str(d["deviceClass"]) if isinstance(d.get("deviceClass"), str) else ""
        driver = str(d["driver"]) if isinstance(d.get("driver"), str) else ""
        attrs = as_map(d.get("attributes"))
        if not cls and not driver:
            chk.err(path, "a device entry needs deviceClass (the DeviceClass its devices belong to) or driver "
                          "(the DRA driver that publishes them, with the attributes DeviceClasses select on)")
        pairs = tuple(sorted((str(k), v) for k, v in attrs.items() if isinstance(v, (str, int, bool))))
        key = (cls, driver, pairs)
        if key in seen:
            chk.err(path, f"devices entry {i} repeats entry {seen[key]}: give one entry its whole count")
        seen.setdefault(key, i)
        out.append(PoolDevice(as_int(d.get("count")), cls, driver, pairs, chk.loc.at(path)))
    return tuple(out)
