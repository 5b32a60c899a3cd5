"""Result assembly: each group's placement, whether the job stays in one zone (and why not),
and the ``JobPlacement`` that rules and the map read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from topogate.analysis.placement.model import Capacity, GroupPlacement, JobPlacement, zone_list
from topogate.analysis.placement.terms import Term
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.kinds import KINDS

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan


def assemble(p: _Plan, capacity: Capacity) -> JobPlacement:
    """The JobPlacement of the finished analysis."""
    out_groups = group_results(p)
    schedulable = all(gp.schedulable for gp in out_groups) and not p.job_unsched
    unsched_all = tuple(r for gp in out_groups for r in gp.reasons) + tuple(p.job_unsched)
    split_reasons, colocated = colocation(p, out_groups)
    return JobPlacement(
        p.job.object_id, p.cluster, tuple(out_groups), schedulable, colocated,
        tuple(dict.fromkeys(split_reasons)), tuple(dict.fromkeys(unsched_all)), tuple(p.risks),
        capacity, p.anti_pairs,
    )


def group_results(p: _Plan) -> list[GroupPlacement]:
    """One GroupPlacement per group of the job, in the job's order (groups without pods too)."""
    A, fits, node_zones = p.zones, p.fits, p.node_zones
    unit_ids = {r: i for i, r in enumerate(sorted({p.units.find(n) for n in p.names}))}
    out_groups: list[GroupPlacement] = []
    for g in p.job.groups:
        n = g.name
        if n not in p.by_name:
            out_groups.append(GroupPlacement(n, g.pods, g.gpus_per_pod, (), tuple(sorted(node_zones[n])), (), fits[n]))
            continue
        zones = tuple(sorted(A[n]))
        pools = tuple((z, tuple(sorted(f.pool for f in fits[n] if f.fits and f.zone == z))) for z in zones)
        reasons = list(p.unsched[n])
        if not zones and not reasons:
            reasons.append(f"{n} has no zone left: " + _why_empty(n, node_zones[n], p.aff[n], A, p.zone_key))
        out_groups.append(GroupPlacement(
            n, g.pods, g.gpus_per_pod, zones, tuple(sorted(node_zones[n])), pools, fits[n],
            unit_ids[p.units.find(n)], single_zone=n in p.single or g.pods == 1 or len(zones) <= 1,
            splits=bool(p.splits[n]), self_anti=n in p.self_anti, reasons=tuple(reasons),
        ))
    return out_groups


def colocation(p: _Plan, out_groups: Sequence[GroupPlacement]) -> tuple[list[str], bool]:
    """Co-location over the groups that can run: (why the job may split, whether it cannot)."""
    A, zone_key, splits = p.zones, p.zone_key, p.splits
    runnable = [gp for gp in out_groups if gp.pods > 0 and gp.zones]
    split_reasons: list[str] = [r for n in p.names for r in splits[n]]
    for r in runnable:
        if not r.single_zone and not splits[r.name]:
            split_reasons.append(f"{r.name} ({r.pods} pods) is not held in one zone: its pods can land in "
                                 f"{zone_list(r.zones)}")
    for a, b in sorted(p.anti_pairs):
        if a < b and A[a] and A[b]:
            split_reasons.append(f"podAntiAffinity on {zone_key} keeps {a} and {b} in different zones")
    unit_reps: dict[int, GroupPlacement] = {}
    for r in runnable:
        unit_reps.setdefault(r.unit, r)
    reps = sorted(unit_reps.values(), key=lambda r: r.name)
    anchor = _anchor(p.job, reps)
    for r in reps:
        if anchor is None or r.unit == anchor.unit:
            continue
        split_reasons.append(_apart(anchor, r, zone_key))
    colocated = bool(runnable) and not split_reasons and len(unit_reps) == 1
    if not runnable:
        colocated = False
    return split_reasons, colocated


def _why_empty(n: str, nz: set[str], terms: list[Term], A: Mapping[str, set[str]], zone_key: str) -> str:
    if not nz:
        return "it fits no pool"
    parts = []
    for t in terms:
        zs = set(t.peer_zones)
        for h in t.targets:
            if h != n:
                zs |= A[h]
        parts.append(f"podAffinity on {zone_key} follows {', '.join(sorted(t.targets)) or 'peers'} "
                     f"into {zone_list(zs)}, but {n} fits only {zone_list(nz)}")
    return "; ".join(parts) or "constraints exclude every zone"


def _anchor(job: TrainingJob, reps: Sequence[GroupPlacement]) -> GroupPlacement | None:
    """The group the others are compared with: the kind's coordinator, else the first group."""
    info = KINDS.get(job.kind)
    coord = info.coordinator if info else None
    for gp in reps:
        if coord and gp.name.lower() == coord.lower():
            return gp
    return reps[0] if reps else None


def _apart(a: GroupPlacement, b: GroupPlacement, zone_key: str) -> str:
    za, zb = set(a.zones), set(b.zones)

    def where(g: GroupPlacement) -> str:
        return f"only in {g.zones[0]}" if len(g.zones) == 1 else f"in {zone_list(g.zones)}"

    if not za & zb:
        return f"{a.name} can land {where(a)}, {b.name} {where(b)}: they never share a zone"
    return (f"{a.name} can land {where(a)}, {b.name} {where(b)}, and no required podAffinity on {zone_key} "
            f"ties them to one zone")
