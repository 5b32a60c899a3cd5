"""Reading one cluster: its zones and pools, network zones, cost settings, Kueue and admission."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from topogate.core.labels import DEFAULT_ZONE_LABEL
from topogate.inventory.cilium import read_cilium
from topogate.inventory.devices import read_pool_devices
from topogate.inventory.kueue import read_admission, read_kueue
from topogate.inventory.model import Cluster, CostConfig, NetworkZone, Pool, Taint, Zone
from topogate.inventory.values import as_int, labels, quantity, seq

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath


def read_cluster(chk: Checker, i: int, c: dict[str, Any]) -> Cluster:
    base: YPath = ("clusters", i)
    zones: list[Zone] = []
    zone_items: list[tuple[YPath, str]] = []
    for zi, z in enumerate(seq(c.get("zones"))):
        if not isinstance(z, dict):
            continue
        zp = base + ("zones", zi)
        pools: list[Pool] = []
        pool_items: list[tuple[YPath, str]] = []
        for pi, p in enumerate(seq(z.get("pools"))):
            if not isinstance(p, dict):
                continue
            pp = zp + ("pools", pi)
            pool_items.append((pp + ("name",), str(p.get("name"))))
            taints = tuple(
                Taint(str(t.get("key", "")), str(t.get("effect", "")), str(t.get("value", "") or ""),
                      chk.loc.at(pp + ("taints", ti)))
                for ti, t in enumerate(seq(p.get("taints"))) if isinstance(t, dict))
            nodes, least = _size(chk, pp, p.get("nodes"))
            pools.append(Pool(
                str(p.get("name", "")), nodes, as_int(p.get("gpusPerNode")),
                labels(p.get("labels")), taints, chk.loc.at(pp),
                quantity(p.get("cpuPerNode")), quantity(p.get("memoryPerNode")), least,
                read_pool_devices(chk, pp, p.get("devices"))))
        chk.unique(pool_items, "pool", f" in zone '{z.get('name')}'")
        zone_items.append((zp + ("name",), str(z.get("name"))))
        zones.append(Zone(str(z.get("name", "")), tuple(sorted(pools, key=lambda p: p.name)),
                          chk.loc.at(zp)))
    chk.unique(zone_items, "zone", f" in cluster '{c.get('name')}'")
    zone_names = {z.name for z in zones}
    nzs: list[NetworkZone] = []
    owner: dict[str, tuple[str, YPath]] = {}
    nz_items: list[tuple[YPath, str]] = []
    for ni, n in enumerate(seq(c.get("networkZones"))):
        if not isinstance(n, dict):
            continue
        np_: YPath = base + ("networkZones", ni)
        nz_items.append((np_ + ("name",), str(n.get("name"))))
        members: list[str] = []
        for zi, zname in enumerate(seq(n.get("zones"))):
            zname = str(zname)
            zpath = np_ + ("zones", zi)
            if zname not in zone_names:
                chk.err(zpath, (
                    f"network zone '{n.get('name')}' names zone '{zname}', which cluster "
                    f"'{c.get('name')}' does not have; known zones: {', '.join(sorted(zone_names)) or 'none'}"))
            elif zname in owner:
                other = owner[zname][0]
                chk.err(zpath, (
                    f"zone '{zname}' is already in network zone '{other}'; a zone belongs to "
                    "exactly one network zone (a door cannot be both open and locked)"))
            else:
                owner[zname] = (str(n.get("name")), zpath)
            members.append(zname)
        nzs.append(NetworkZone(str(n.get("name", "")), tuple(sorted(set(members))), chk.loc.at(np_)))
    chk.unique(nz_items, "network zone", f" in cluster '{c.get('name')}'")
    cost = c.get("cost")
    cost_cfg = None
    if isinstance(cost, dict):
        budget = cost.get("budgetUSDPerDay")
        if isinstance(budget, float) and not math.isfinite(budget):
            chk.err(base + ("cost", "budgetUSDPerDay"), "budgetUSDPerDay must be a finite number of dollars")
            budget = None
        cost_cfg = CostConfig(
            cost.get("tagKey") if isinstance(cost.get("tagKey"), str) else None,
            str(cost["tagValue"]) if isinstance(cost.get("tagValue"), str) else None,
            float(budget) if isinstance(budget, (int, float)) and not isinstance(budget, bool) else None,
            chk.loc.at(base + ("cost",)))
    zone_label = c.get("zoneLabel")
    return Cluster(
        str(c.get("name", "")), str(c.get("provider", "")), str(c.get("region", "")),
        zone_label if isinstance(zone_label, str) else DEFAULT_ZONE_LABEL, cost_cfg,
        tuple(sorted(zones, key=lambda z: z.name)),
        tuple(sorted(nzs, key=lambda n: n.name)), chk.loc.at(base),
        read_kueue(chk, base, c, zones), read_admission(chk, base, c),
        tuple(str(r) for r in c.get("trainingRuntimes") or () if isinstance(r, str)),
        read_cilium(chk, base, c))


def _size(chk: Checker, pp: YPath, value: Any) -> tuple[int, int | None]:
    """(nodes, min_nodes) of a pool's `nodes`: a count, or an autoscaled pool's {min, max}."""
    if not isinstance(value, dict):
        return as_int(value), None
    least, most = as_int(value.get("min")), as_int(value.get("max"))
    if "min" in value and "max" in value and least > most:  # a missing one is the schema's to say
        chk.err(pp + ("nodes", "min"), (
            f"nodes: min {least} is more than max {most}; an autoscaled pool keeps between min and "
            "max nodes: swap them"))
    return most, least
