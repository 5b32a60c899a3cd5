"""Reading the inventory's `doors:`: declared openings across a network-zone boundary.

A door is least privilege by construction: one cluster, a source (named workloads, or a whole
network zone), a target (a service's pods by namespace and labels, or a whole network zone) and
the ports. References are checked here, with the position of the field that is wrong.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from topogate.inventory.model import Cluster, Door, DoorEnd, PortSpec, Workload

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath


def _ports(raw: Any) -> tuple[PortSpec, ...]:
    out = []
    for p in raw if isinstance(raw, list) else []:
        if isinstance(p, dict) and isinstance(p.get("port"), int):
            end = p.get("endPort")
            out.append(PortSpec(int(p["port"]), str(p.get("protocol", "TCP")),
                                int(end) if isinstance(end, int) else None))
    return tuple(out)


def _labels(raw: Any) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), str(v)) for k, v in raw.items())) if isinstance(raw, dict) else ()


def _end(chk: Checker, path: YPath, raw: Any) -> DoorEnd:
    if not isinstance(raw, dict):
        return DoorEnd(pos=chk.loc.at(path))
    wls = raw.get("workloads")
    nz = raw.get("networkZone")
    ns = raw.get("namespace")
    return DoorEnd(tuple(str(w) for w in wls) if isinstance(wls, list) else (),
                   nz if isinstance(nz, str) else None, ns if isinstance(ns, str) else None,
                   _labels(raw.get("labels")), chk.loc.at(path))


def _check_refs(chk: Checker, path: YPath, d: Door, cluster: Cluster,
                workloads: list[Workload]) -> None:
    mine = [w for w in workloads if w.cluster == cluster.name]
    known_nz = sorted(n.name for n in cluster.network_zones)
    for side, end in (("from", d.source), ("to", d.target)):
        if end.network_zone is not None and cluster.network_zone(end.network_zone) is None:
            chk.err(path + (side, "networkZone"), (
                f"door '{d.name}' names network zone '{end.network_zone}', which cluster "
                f"'{cluster.name}' does not define; known: {', '.join(known_nz) or 'none'}"))
    zones: set[str] = set()
    for i, ref in enumerate(d.source.workloads):
        hits = [w for w in mine if ref in (w.name, f"{w.namespace}/{w.name}")]
        if not hits:
            chk.err(path + ("from", "workloads", i), (
                f"door '{d.name}' names workload '{ref}', which cluster '{cluster.name}' does not "
                f"run; known: {', '.join(sorted(w.name for w in mine)) or 'none'}"))
        elif len(hits) > 1:
            chk.err(path + ("from", "workloads", i), (
                f"door '{d.name}': workload '{ref}' exists in several namespaces "
                f"({', '.join(sorted(w.namespace for w in hits))}); write it as namespace/name"))
        zones.update(w.network_zone for w in hits)
    if d.source.network_zone:
        zones.add(d.source.network_zone)
    if d.target.network_zone is not None and d.target.network_zone in zones:
        chk.err(path + ("to", "networkZone"), (
            f"door '{d.name}' leads into network zone '{d.target.network_zone}', where its "
            "source already is: pods of one network zone need no door between them"))


def _check_shape(chk: Checker, path: YPath, d: Door) -> None:
    if bool(d.source.workloads) == (d.source.network_zone is not None):
        chk.err(path + ("from",), (
            f"door '{d.name}': `from` needs exactly one of `workloads:` (names) or "
            "`networkZone:` (every workload of that network zone)"))
    service = d.target.namespace is not None or bool(d.target.labels)
    if service == (d.target.network_zone is not None):
        chk.err(path + ("to",), (
            f"door '{d.name}': `to` needs either `namespace:` with `labels:` (a service's pods) "
            "or `networkZone:`, not both"))
    elif service and (d.target.namespace is None or not d.target.labels):
        chk.err(path + ("to",), (
            f"door '{d.name}': `to` needs both `namespace:` and `labels:`; a door opens a "
            "service's pods, never a whole namespace"))


def read_doors(chk: Checker, data: dict[str, Any], clusters: dict[str, Cluster],
               workloads: list[Workload]) -> tuple[Door, ...]:
    out: list[Door] = []
    seen: dict[tuple[str, str], YPath] = {}
    raw = data.get("doors")
    for i, r in enumerate(raw if isinstance(raw, list) else []):
        if not isinstance(r, dict):
            continue
        path: YPath = ("doors", i)
        d = Door(str(r.get("name", "")), str(r.get("cluster", "")), _end(chk, path + ("from",), r.get("from")),
                 _end(chk, path + ("to",), r.get("to")), _ports(r.get("ports")), chk.loc.at(path))
        key = (d.cluster, d.name)
        if key in seen:
            first = chk.loc.at(seen[key])
            chk.err(path + ("name",), (f"duplicate door '{d.name}' in cluster '{d.cluster}' (first at "
                                       f"line {first.line}); names must be unique"))
        else:
            seen[key] = path
        _check_shape(chk, path, d)
        cluster = clusters.get(d.cluster)
        if cluster is None:
            chk.err(path + ("cluster",), (
                f"door '{d.name}' names cluster '{d.cluster}', which the inventory does not define; "
                f"known clusters: {', '.join(sorted(clusters)) or 'none'}"))
        elif not chk.has_problem_under(path):
            _check_refs(chk, path, d, cluster, workloads)
        raw_ports = r.get("ports")
        for pi, p in enumerate(raw_ports if isinstance(raw_ports, list) else []):
            if isinstance(p, dict) and isinstance(p.get("endPort"), int) and isinstance(p.get("port"), int) \
                    and p["endPort"] < p["port"]:
                chk.err(path + ("ports", pi, "endPort"), (
                    f"endPort {p['endPort']} is below port {p['port']}; a range runs from port up to endPort"))
        out.append(d)
    return tuple(sorted(out, key=lambda d: (d.cluster, d.name)))
