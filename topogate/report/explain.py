"""`topogate explain`: the map of one job, with the why behind every verdict.

Per replica group: where its pods can land and which constraint removed every other pool.
Per required flow: allowed or denied, and the policy (and line) that decided it. The JSON
form carries every field of the map so scripts never need to parse the text.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from topogate.analysis.result import Flow, GroupMap, JobMap
from topogate.core.position import NOWHERE, Position
from topogate.core.words import plural
from topogate.inventory.model import Inventory
from topogate.report.base import flow_key, port_text, zone_choice, zone_choice_text
from topogate.report.formats import Formats
from topogate.report.mermaid import job_diagram
from topogate.report.openings import job_openings, network_zones


def _pos(p: Position) -> dict[str, Any] | None:
    return None if p == NOWHERE else {"file": p.file, "line": p.line, "column": p.column}


def _at(p: Position) -> str:
    return "" if p == NOWHERE else f" at {p}"


def _group_text(g: GroupMap) -> list[str]:
    gpus = f", {g.gpus_per_pod} GPU each" if g.gpus_per_pod else ""
    lines = [f"  {g.name}: {g.pods} pod{'s' if g.pods != 1 else ''}{gpus}{_at(g.pos)}",
             f"    can land in: {', '.join(g.zones) if g.zones else 'no zone (no feasible node)'}"]
    for v in sorted(g.pools, key=lambda v: (not v.feasible, v.zone, v.pool)):
        mark = "ok " if v.feasible else "no "
        if v.feasible:  # a fit may rest on an assumption (an admission plugin's toleration)
            why = f" (note: {v.reason})" if v.reason else ""
        else:
            why = f": {' '.join(v.reason.split()) or 'removed'}"
        lines.append(f"    {mark} {v.zone}/{v.pool}{why}")
    return lines


def _flow_text(f: Flow) -> list[str]:
    verdict = "allow" if f.allowed else "DENY "
    # kube-dns and unplaceable groups have no zone of their own: say nothing rather than "?"
    src = f"{f.src} ({f.src_zone})" if f.src_zone else f.src
    dst = f"{f.dst} ({f.dst_zone})" if f.dst_zone else f.dst
    lines = [f"  {verdict} {src} -> {dst} {port_text(f)} {f.purpose}"]
    if f.reason:
        lines.append(f"      {' '.join(f.reason.split())}")
    if f.decided_by:
        lines.append(f"      decided by {f.decided_by}{_at(f.decided_at)}")
    return lines


def _flow_order(f: Flow) -> tuple[bool, tuple[str, str, str, str, int, str, str]]:
    return (f.allowed, flow_key(f))  # denied flows first: they are why you are reading this


def explain_text(job: JobMap) -> str:
    lines = [f"{job.object} (cluster {job.cluster}){_at(job.pos)}"]
    if job.inventory_pos != NOWHERE:
        lines.append(f"  inventory entry at {job.inventory_pos}")
    choice = zone_choice(job)
    lines.append(f"  colocated: {'yes' if job.colocated else 'NO'}"
                 + (f" ({zone_choice_text(choice)})" if choice else ""))
    if job.kueue:
        lines.append(f"    placed by {job.kueue}")
    lines += [f"    {' '.join(r.split())}" for r in job.split_reasons]
    lines.append(f"  schedulable: {'yes' if job.schedulable else 'NO'}")
    lines += [f"    {' '.join(r.split())}" for r in job.unschedulable_reasons]
    if job.capacity:
        cap = job.capacity
        where = f"zone {cap['zone']}" if cap.get("zone") else "the pools it can use"
        fits = "fits" if cap.get("fits", True) else "does NOT fit"
        lines.append(f"  capacity: needs {plural(int(cap.get('needs', 0) or 0), 'GPU')}; {where} "
                     f"{'hold' if not cap.get('zone') else 'holds'} {cap.get('has', 0)}: {fits}")
    lines += ["", "Groups"]
    for g in job.groups:
        lines += _group_text(g)
    lines += ["", "Required flows"]
    if not job.flows:
        lines.append("  (none evaluated)")
    for f in sorted(job.flows, key=_flow_order):
        lines += _flow_text(f)
    blocked = len(job.blocked)
    lines += ["", f"{blocked} of {len(job.flows)} required flows blocked" if blocked
              else f"all {len(job.flows)} required flows allowed"]
    return "\n".join(lines) + "\n"


def explain_json(job: JobMap) -> dict[str, Any]:
    """Every field of the job's map; names follow the report's camelCase (fromZone...)."""
    return {
        "object": job.object,
        "cluster": job.cluster,
        "kind": job.kind,
        "namespace": job.namespace,
        "name": job.name,
        "position": _pos(job.pos),
        "inventoryPosition": _pos(job.inventory_pos),
        "colocated": job.colocated,
        "schedulable": job.schedulable,
        "splitReasons": list(job.split_reasons),
        "kueue": job.kueue,
        "unschedulableReasons": list(job.unschedulable_reasons),
        "capacity": dict(sorted(job.capacity.items())),
        "zones": list(job.zones),
        "groups": [{
            "name": g.name,
            "pods": g.pods,
            "gpusPerPod": g.gpus_per_pod,
            "zones": list(g.zones),
            "position": _pos(g.pos),
            "labels": dict(g.labels),
            "pools": [{"zone": v.zone, "pool": v.pool, "feasible": v.feasible, "reason": v.reason}
                      for v in g.pools],
        } for g in job.groups],
        "flows": [{
            "from": f.src, "to": f.dst, "fromZone": f.src_zone, "toZone": f.dst_zone,
            "port": f.port, "protocol": f.protocol, "purpose": f.purpose, "allowed": f.allowed,
            "reason": f.reason, "decidedBy": f.decided_by, "decidedAt": _pos(f.decided_at),
        } for f in sorted(job.flows, key=flow_key)],
        "blocked": len(job.blocked),
    }


@dataclass(frozen=True)
class Explained:
    """What `explain` reports: one job, and the inventory it was checked against (its pictures
    draw the job's doors and network zones from it)."""

    job: JobMap
    inventory: Inventory


# explain's table in the report registry.
REPORT: Formats[Explained] = Formats({
    "text": lambda e: explain_text(e.job),
    "mermaid": lambda e: job_diagram(e.job, job_openings(e.inventory, e.job), network_zones(e.inventory, e.job)) + "\n",
    "json": lambda e: json.dumps(explain_json(e.job), indent=2, sort_keys=True) + "\n",
})

__all__ = ["REPORT", "Explained", "explain_json", "explain_text"]
