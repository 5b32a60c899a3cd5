"""Result assembly: each group's placement, whether the job stays in one zone (and why not),
and the ``JobPlacement`` that rules and the map read, built from the records of the steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.capacity import GpuFit
from topogate.analysis.placement.feasible import Unstartable
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import GroupPlacement, JobPlacement, zone_list
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.spread import Splits
from topogate.analysis.placement.terms import Term
from topogate.analysis.placement.units import Colocation
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.kinds import TRAINING_KINDS

__all__ = ["assemble"]


def assemble(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, unstartable: Unstartable,
             colocation: Colocation, splits: Splits, capacity: GpuFit,
             gang_problems: Sequence[str] = ()) -> JobPlacement:
    """The JobPlacement of the finished analysis (``gang_problems``: its PodGroups' gangs that
    are never admitted, ``placement.workload``)."""
    out_groups = _group_results(inputs, nodes, affinity, unstartable, colocation, splits, capacity)
    # The job's own problems, in step order: Kueue's flavors and PodGroup gangs (1), units (4), GPUs (6).
    job_problems = [*nodes.kueue_problems, *gang_problems, *colocation.gpu_problems]
    if not capacity.job.fits:
        job_problems.append(capacity.job.message)
    schedulable = all(gp.schedulable for gp in out_groups) and not job_problems
    unsched_all = tuple(r for gp in out_groups for r in gp.reasons) + tuple(job_problems)
    split_reasons, colocated = _colocation(inputs, affinity, colocation, splits, out_groups)
    return JobPlacement(
        inputs.job.object_id, inputs.cluster, tuple(out_groups), schedulable, colocated,
        tuple(dict.fromkeys(split_reasons)), tuple(dict.fromkeys(unsched_all)),
        tuple(dict.fromkeys((*colocation.pending_risks, *splits.risks))),
        capacity.job, affinity.apart, placed_whole=inputs.placed_whole,
    )


def _group_results(inputs: Inputs, nodes: NodeFilters, affinity: Affinity, unstartable: Unstartable,
                   colocation: Colocation, splits: Splits, capacity: GpuFit) -> list[GroupPlacement]:
    """One GroupPlacement per group of the job, in the job's order (groups without pods too)."""
    fits, node_zones, zones = nodes.pool_fits, nodes.zones, colocation.zones
    unit_ids = {u: i for i, u in enumerate(sorted(set(colocation.unit_of.values())))}
    out_groups: list[GroupPlacement] = []
    for g in inputs.job.groups:
        n = g.name
        if n not in inputs.groups:
            out_groups.append(GroupPlacement(n, g.pods, g.gpus_per_pod, (), tuple(sorted(node_zones[n])), (), fits[n]))
            continue
        landing = tuple(sorted(zones[n]))
        pools = tuple((z, tuple(sorted(f.pool for f in fits[n] if f.fits and f.zone == z))) for z in landing)
        # Per group, in step order: why it never starts (3), what its splits leave Pending (5),
        # why its GPUs do not fit (6).
        reasons = [*unstartable.reasons[n], *splits.reasons[n], *capacity.reasons[n]]
        if not landing and not reasons:
            reasons.append(f"{n} has no zone left: "
                           + _why_empty(n, node_zones[n], affinity.zone_ties[n], zones, inputs.zone_key))
        out_groups.append(GroupPlacement(
            n, g.pods, g.gpus_per_pod, landing, tuple(sorted(node_zones[n])), pools, fits[n],
            unit_ids[colocation.unit_of[n]],
            single_zone=n in colocation.one_zone or g.pods == 1 or len(landing) <= 1,
            splits=bool(splits.causes[n]), self_anti=n in affinity.self_repelling, reasons=tuple(reasons),
            reach=tuple(sorted(colocation.reach[n])), held=n in colocation.one_zone,
        ))
    return out_groups


def _colocation(inputs: Inputs, affinity: Affinity, colocation: Colocation, splits: Splits,
                out_groups: Sequence[GroupPlacement]) -> tuple[list[str], bool]:
    """Co-location over the groups that can run: (why the job may split, whether it cannot)."""
    zones, zone_key = colocation.zones, inputs.zone_key
    runnable = [gp for gp in out_groups if gp.pods > 0 and gp.zones]
    split_reasons: list[str] = [r for n in inputs.names for r in splits.causes[n]]
    for r in runnable:
        if not r.single_zone and not splits.causes[r.name]:
            split_reasons.append(f"{r.name} ({r.pods} pods) is not held in one zone: its pods can land in "
                                 f"{zone_list(r.zones)}")
    for a, b in sorted(affinity.apart):
        if a < b and zones[a] and zones[b]:
            split_reasons.append(f"podAntiAffinity on {zone_key} keeps {a} and {b} in different zones")
    unit_reps: dict[int, GroupPlacement] = {}
    for r in runnable:
        unit_reps.setdefault(r.unit, r)
    reps = sorted(unit_reps.values(), key=lambda r: r.name)
    anchor = _anchor(inputs.job, reps)
    for r in reps:
        if anchor is None or r.unit == anchor.unit:
            continue
        split_reasons.append(_apart(anchor, r, zone_key, _strays(inputs, colocation, anchor, r)))
    colocated = bool(runnable) and not split_reasons and len(unit_reps) == 1
    return split_reasons, colocated


def _why_empty(n: str, nz: frozenset[str], terms: tuple[Term, ...], zones: Mapping[str, frozenset[str]],
               zone_key: str) -> str:
    """Why a group with no other reason has no zone: what its zone-tied podAffinity follows."""
    if not nz:
        return "it fits no pool"
    parts = []
    for t in terms:
        zs = set(t.peer_zones)
        for h in t.targets:
            if h != n:
                zs |= zones[h]
        parts.append(f"podAffinity on {zone_key} follows {', '.join(sorted(t.targets)) or 'peers'} "
                     f"into {zone_list(zs)}, but {n} fits only {zone_list(nz)}")
    return "; ".join(parts) or "constraints exclude every zone"


def _anchor(job: TrainingJob, reps: Sequence[GroupPlacement]) -> GroupPlacement | None:
    """The group the others are compared with: the kind's coordinator, else the first group."""
    info = TRAINING_KINDS.get(job.kind)
    coord = info.coordinator if info else None
    for gp in reps:
        if coord and gp.name.lower() == coord.lower():
            return gp
    return reps[0] if reps else None


def _strays(inputs: Inputs, colocation: Colocation, a: GroupPlacement,
            b: GroupPlacement) -> list[tuple[str, frozenset[str]]]:
    """Members of a's and b's units whose pods may be bound outside the zones their unit keeps
    (``reach``: a member going first, the rest of its unit then Pending), with those zones; not
    one placed whole (Kueue, a PodGroup), which goes where its unit is placed."""
    out = []
    for n in sorted({*colocation.members[a.name], *colocation.members[b.name]} - inputs.placed_whole):
        extra = colocation.reach[n] - colocation.zones[n]
        if extra:
            out.append((n, extra))
    return out


def _apart(a: GroupPlacement, b: GroupPlacement, zone_key: str,
           strays: Sequence[tuple[str, frozenset[str]]] = ()) -> str:
    za, zb = set(a.zones), set(b.zones)
    if za == zb and len(za) == 1 and strays:
        # Both units are held in the same zone when every pod starts; the split is a member
        # that goes first elsewhere, its own pods bound there.
        n, extra = strays[0]
        return (f"{a.name} and {b.name} are each held only in {a.zones[0]}, but {n} can be scheduled first in "
                f"{zone_list(extra)} (its pods bound there, the rest of its unit Pending), and no required "
                f"podAffinity on {zone_key} ties the two to one zone")

    def where(g: GroupPlacement) -> str:
        return f"only in {g.zones[0]}" if len(g.zones) == 1 else f"in {zone_list(g.zones)}"

    if not za & zb:
        return f"{a.name} can land {where(a)}, {b.name} {where(b)}: they never share a zone"
    return (f"{a.name} can land {where(a)}, {b.name} {where(b)}, and no required podAffinity on {zone_key} "
            f"ties them to one zone")
