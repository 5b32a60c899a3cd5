"""GPU capacity (step 4 of the package docstring): GPUs are whole devices on one node, a
co-location unit must fit in one zone, and the job must fit in the pools where it can land."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from topogate.analysis.placement.model import Capacity, zone_list
from topogate.analysis.scheduling import PoolFit
from topogate.core.words import plural

if TYPE_CHECKING:
    from topogate.analysis.placement.plan import _Plan


def _slots(fits: Sequence[PoolFit], zones: set[str], gpp: int) -> int:
    """Pods of `gpp` GPUs the fitting pools in `zones` can hold."""
    if gpp <= 0:
        return 1 << 30
    return sum(f.node.nodes * (f.node.gpus_per_node // gpp) for f in fits if f.fits and f.zone in zones)


def unit_capacity(p: _Plan) -> None:
    """4a: a GPU unit must fit in one zone; its zones shrink to those where it does."""
    A, by_name, fits, units = p.zones, p.by_name, p.fits, p.units
    seen_roots: set[str] = set()
    for n in p.names:
        root = units.find(n)
        if n not in p.single or root in seen_roots:
            continue
        seen_roots.add(root)
        members = units.members(n)
        gpu_members = [m for m in members if by_name[m].gpus_per_pod > 0]
        if not gpu_members or not A[n]:
            continue
        ok = set()
        for z in A[n]:
            fits_each = all(_slots(fits[m], {z}, by_name[m].gpus_per_pod) >= by_name[m].pods for m in gpu_members)
            pools_z = {(f.zone, f.pool): f.node.gpus for m in gpu_members for f in fits[m] if f.fits and f.zone == z}
            if fits_each and sum(by_name[m].gpus for m in gpu_members) <= sum(pools_z.values()):
                ok.add(z)
        if not ok:
            # Keep the zones (pods can still land there, some stay Pending); a lone group pinned to
            # one zone is reported by the per-group check below.
            if len(A[n]) > 1 or len(gpu_members) > 1:
                need_gpus = sum(by_name[m].gpus for m in gpu_members)
                p.job_unsched.append(f"{', '.join(members)} must share one zone but no zone of {zone_list(A[n])} holds "
                                     f"their {plural(need_gpus, 'GPU')}")
        elif ok != A[n]:
            for m in members:
                A[m] = set(ok)


def group_capacity(p: _Plan) -> None:
    """4b, per group: its pods must fit in the pools of the zones it can use."""
    for n in p.names:
        g = p.by_name[n]
        if g.gpus_per_pod > 0 and p.zones[n]:
            slots = _slots(p.fits[n], p.zones[n], g.gpus_per_pod)
            if slots < g.pods:
                p.unsched[n].append(f"{n} needs {plural(g.pods, 'pod')} x {plural(g.gpus_per_pod, 'GPU')}; the pools it "
                                    f"fits in {zone_list(p.zones[n])} hold {plural(slots, 'such pod')}")


def job_capacity(p: _Plan) -> Capacity:
    """4b, for the job: its GPUs must not exceed those of all pools where some group can land."""
    A, by_name, names = p.zones, p.by_name, p.names
    requested = sum(by_name[n].gpus for n in names)
    usable_pools = {(f.zone, f.pool): f.node.gpus for n in names if by_name[n].gpus_per_pod > 0
                    for f in p.fits[n] if f.fits and f.zone in A[n]}
    available = sum(usable_pools.values())
    per_zone: dict[str, int] = {}
    for (z, _p), gp in usable_pools.items():
        per_zone[z] = per_zone.get(z, 0) + gp
    best = min(per_zone.items(), key=lambda kv: (-kv[1], kv[0])) if per_zone else ("", 0)
    # Capacity is judged only when every GPU group can land somewhere; otherwise that is the problem.
    judged = all(A[n] for n in names if by_name[n].gpus_per_pod > 0)
    cap_ok = requested <= available or not judged
    cap_msg = "" if cap_ok else f"the job requests {plural(requested, 'GPU')}; the pools where it can land have {available}"
    if not cap_ok:
        p.job_unsched.append(cap_msg)
    return Capacity(requested, available, cap_ok, best[0], best[1], cap_msg)
