"""GPU capacity: GPUs are whole devices on one node, a co-location unit must fit in one zone (the
end of step 4 of the package docstring, ``fit_gpu_units``), and each group and the whole job
must fit in the pools where they can land (step 6, ``check_capacity``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.model import Capacity, zone_list
from topogate.analysis.scheduling import HOSTNAME_LABEL, PoolFit
from topogate.core.words import plural
from topogate.k8s.jobs import JobGroup

__all__ = ["GpuFit", "check_capacity", "crowd_in", "crowding_risks", "fit_gpu_units", "fit_one_node", "pod_slots",
           "slots_beside"]


def pod_slots(fits: Sequence[PoolFit], zones: Sequence[str] | frozenset[str], gpp: int, one_per_node: bool = False) -> int:
    """Pods of `gpp` GPUs the fitting pools in `zones` can hold (one a node, for a group whose
    pods repel each other on the hostname key)."""
    if gpp <= 0:
        return sum(f.node.nodes for f in fits if f.fits and f.zone in zones) if one_per_node else 1 << 30
    per_node = (lambda f: min(1, f.gpus_per_node // gpp)) if one_per_node else (lambda f: f.gpus_per_node // gpp)
    return sum(f.node.nodes * per_node(f) for f in fits if f.fits and f.zone in zones)


def slots_beside(fits: Sequence[PoolFit], zone: str, gpp: int, one_per_node: bool,
                 others: Sequence[tuple[Sequence[PoolFit] | None, int, int]]) -> int:
    """Pods of `gpp` GPUs the fitting pools of `zone` can hold once `others` run there: (pools
    they fit, None when not known; GPUs a pod; pods). The worst order: each other pod, largest
    first, on the node where it costs the most such pods (it may be bound there; the scheduler
    does not keep room for a follower). Only GPUs counted the same way (a device plugin's, not
    DRA devices) are shared."""
    if gpp <= 0 and not one_per_node:
        return 1 << 30
    per = (lambda free: min(1, free // gpp) if gpp > 0 else 1) if one_per_node else (lambda free: free // gpp)
    nodes: dict[str, dict[int, int]] = {}  # per pool: free GPUs -> nodes with that many
    for f in fits:
        if f.fits and f.zone == zone and f.node.nodes > 0:
            nodes.setdefault(f.pool, {})[f.gpus_per_node] = f.node.nodes
    shared = {f.pool for f in fits if f.dra_per_node is None}
    for pools, g, count in sorted(others, key=lambda o: -o[1]):
        where = None if pools is None else {f.pool for f in pools if f.fits and f.zone == zone
                                            and f.dra_per_node is None}
        for _ in range(count if g > 0 else 0):
            best = max(((per(free) - per(free - g), p, free) for p, frees in sorted(nodes.items())
                        if p in shared and (where is None or p in where)
                        for free in sorted(frees) if free >= g and frees[free] > 0), default=None)
            if best is None or best[0] <= 0:
                break  # the rest cost n nothing where they can run
            _, p, free = best
            nodes[p][free] -= 1
            nodes[p][free - g] = nodes[p].get(free - g, 0) + 1
    return sum(c * per(free) for frees in nodes.values() for free, c in frees.items())


def crowd_in(inputs: Inputs, pool_fits: Mapping[str, tuple[PoolFit, ...]], hs: Sequence[str], zone: str,
             one_per_node: frozenset[str]) -> list[tuple[Sequence[PoolFit] | None, int, int]]:
    """Groups hs as ``slots_beside`` takes them: each with as many pods as `zone` can hold of it
    (a group whose pods take a node each puts no more there than the zone has nodes)."""
    groups = inputs.groups
    return [(pool_fits[h], groups[h].gpus_per_pod,
             min(groups[h].pods, pod_slots(pool_fits[h], (zone,), groups[h].gpus_per_pod, h in one_per_node)))
            for h in hs]


def crowding_risks(inputs: Inputs, pool_fits: Mapping[str, tuple[PoolFit, ...]], zones: Mapping[str, frozenset[str]],
                   one_zone: frozenset[str] | set[str], members: Mapping[str, tuple[str, ...]],
                   one_per_node: frozenset[str]) -> list[str]:
    """A GPU group held in one zone, in a zone whose GPUs the job's other groups may take first:
    the scheduler binds each pod with no regard for the pods still to come, so the groups free to
    go elsewhere may fill that zone's nodes, and the group held there waits Pending beside them
    (none of them finishes while it waits: the job never starts). A unit placed whole (Kueue, a
    PodGroup) gets its room before any pod is bound."""
    out: list[str] = []
    groups = inputs.groups
    whole = inputs.placed_whole
    for n in inputs.names:
        g = groups[n]
        if n not in one_zone or n in whole or g.gpus_per_pod <= 0 or not zones[n]:
            continue
        mates = set(members[n]) - {n}
        short: dict[str, int] = {}  # zone -> pods of n that fit there after the crowd
        names: set[str] = set()
        for z in sorted(zones[n]):
            crowd = [h for h in inputs.names if h != n and h not in whole and groups[h].gpus_per_pod > 0
                     and z in zones[h]]
            free = [h for h in crowd if h not in mates]
            if not free:
                continue
            room = slots_beside(pool_fits[n], z, g.gpus_per_pod, n in one_per_node,
                                crowd_in(inputs, pool_fits, crowd, z, one_per_node))
            if room < g.pods:
                short[z] = room
                names |= set(free)
        if short:
            most = max(short.values())
            left = f"room for at most {most} of its {plural(g.pods, 'pod')}: the rest" if most else "no room for it: it"
            out.append(f"{n} runs in one zone; in {zone_list(short)} the job's {', '.join(sorted(names))} may take the "
                       "GPUs first (the scheduler places each pod with no regard for those still to come), leaving "
                       f"{left} would stay Pending")
    return out


def fit_gpu_units(
    inputs: Inputs,
    pool_fits: Mapping[str, tuple[PoolFit, ...]],
    zones: Mapping[str, frozenset[str]],
    one_zone: set[str],
    unit_of: Mapping[str, str],
    members: Mapping[str, tuple[str, ...]],
    one_per_node: frozenset[str] = frozenset(),
) -> tuple[dict[str, frozenset[str]], list[str], dict[str, tuple[tuple[frozenset[str], str], ...]]]:
    """A unit held in one zone keeps only the zones where all its GPU pods fit together, and
    where each member whose pods take a node each (``one_per_node``) finds a node per pod.
    Returns every group's zones after that, the units no zone of theirs holds, and per unit (by
    its first member) the zones it lost that way, by what they cannot hold: its first pod may
    still land there."""
    groups = inputs.groups
    out = dict(zones)
    problems: list[str] = []
    small: dict[str, tuple[tuple[frozenset[str], str], ...]] = {}
    seen_units: set[str] = set()
    for n in inputs.names:
        unit = unit_of[n]
        if n not in one_zone or unit in seen_units:
            continue
        seen_units.add(unit)
        gpu_members = [m for m in members[n] if groups[m].gpus_per_pod > 0]
        counted = [m for m in members[n] if m in gpu_members or (m in one_per_node and groups[m].pods > 1)]
        if not counted or not out[n]:
            continue
        ok = set()
        for_nodes: dict[str, list[str]] = {}  # zones lost only for nodes: the members short of them
        for z in out[n]:
            fits_gpus = all(pod_slots(pool_fits[m], (z,), groups[m].gpus_per_pod) >= groups[m].pods for m in gpu_members)
            pools_z = {(f.zone, f.pool): f.node.nodes * f.gpus_per_node for m in gpu_members for f in pool_fits[m]
                       if f.fits and f.zone == z}
            if not fits_gpus or sum(groups[m].gpus for m in gpu_members) > sum(pools_z.values()):
                continue
            short = [m for m in counted if m in one_per_node
                     and pod_slots(pool_fits[m], (z,), groups[m].gpus_per_pod, True) < groups[m].pods]
            if short:
                for_nodes[z] = short
                continue
            ok.add(z)
        if not ok:
            # Keep the zones (pods can still land there, some stay Pending); a lone group pinned to
            # one zone is reported by the per-group checks of steps 5 and 6.
            # A unit short only of nodes (one pod per node) is the spread step's (step 5).
            if gpu_members and set(for_nodes) != set(out[n]) and (len(out[n]) > 1 or len(gpu_members) > 1):
                need_gpus = sum(groups[m].gpus for m in gpu_members)
                nodes = f" with {_node_each(groups, for_nodes)}" if for_nodes else ""
                problems.append(f"{', '.join(members[n])} must share one zone but no zone of {zone_list(out[n])} "
                                f"holds their {plural(need_gpus, 'GPU')}{nodes}")
        elif ok != out[n]:
            lost_gpus = frozenset(out[n] - ok - set(for_nodes))
            need = plural(sum(groups[m].gpus for m in members[n]), 'GPU')
            small[n] = (*(((lost_gpus, f"which cannot hold all their {need}"),) if lost_gpus else ()),
                        *(((frozenset(for_nodes), f"which has fewer nodes than {_node_each(groups, for_nodes)}"),)
                          if for_nodes else ()))
            # Every member takes the zones the unit fits in, as the unit is placed as one, but only
            # those its own node filters pass: a member is never handed a zone it cannot use.
            for m in members[n]:
                out[m] = frozenset(ok) & out[m]
    return out, problems, small


def _node_each(groups: Mapping[str, JobGroup], for_nodes: Mapping[str, list[str]]) -> str:
    """The member a zone lost for nodes names: the first short of them, one node a pod."""
    m = min(m for short in for_nodes.values() for m in short)
    return f"the {plural(groups[m].pods, 'pod')} of {m}, one pod per node (podAntiAffinity on {HOSTNAME_LABEL})"


def fit_one_node(
    inputs: Inputs,
    pool_fits: Mapping[str, tuple[PoolFit, ...]],
    zones: Mapping[str, frozenset[str]],
    one_node: frozenset[str],
    members: Mapping[str, tuple[str, ...]],
) -> tuple[dict[str, frozenset[str]], list[str], list[str]]:
    """A GPU group whose pods follow only each other on the hostname key runs on one node (the
    first pod's): only zones with a node holding all its GPUs keep it, with its unit. The first
    pod may still land on a smaller node, where the rest cannot join it: a pending risk.
    Returns the zones, the groups no node holds, and those risks."""
    out = dict(zones)
    problems: list[str] = []
    risks: list[str] = []
    for n in sorted(one_node):
        g = inputs.groups[n]
        if g.gpus_per_pod <= 0 or not out[n]:
            continue
        fitting = [f for f in pool_fits[n] if f.fits and f.zone in out[n]]
        ok = frozenset(f.zone for f in fitting if f.gpus_per_node >= g.gpus)
        small = sorted({f.zone for f in fitting if f.gpus_per_node < g.gpus})
        if not ok:
            problems.append(f"{n}: podAffinity on kubernetes.io/hostname puts its {plural(g.pods, 'pod')} on one "
                            f"node, but no node of {zone_list(out[n])} holds {plural(g.gpus, 'GPU')}")
            continue
        if small:
            risks.append(f"{n}: podAffinity on kubernetes.io/hostname puts its {plural(g.pods, 'pod')} on one node; "
                         f"the first may land on a node in {zone_list(small)} too small for all of them: the rest "
                         "stay Pending")
        for m in members[n]:
            out[m] = out[m] & ok
    return out, problems, risks


@dataclass(frozen=True)
class GpuFit:
    reasons: Mapping[str, tuple[str, ...]]  # per group with pods: why its pods do not all fit
    job: Capacity  # the job's GPUs against those of the pools where it can land


def check_capacity(inputs: Inputs, pool_fits: Mapping[str, tuple[PoolFit, ...]],
                   zones: Mapping[str, frozenset[str]]) -> GpuFit:
    reasons = {n: _group_capacity(inputs, n, pool_fits[n], zones[n]) for n in inputs.names}
    return GpuFit(reasons, _job_capacity(inputs, pool_fits, zones))


def _group_capacity(inputs: Inputs, n: str, fits: Sequence[PoolFit], zones: frozenset[str]) -> tuple[str, ...]:
    """Per group: its pods must fit in the pools of the zones it can use."""
    g = inputs.groups[n]
    if g.gpus_per_pod > 0 and zones:
        slots = pod_slots(fits, zones, g.gpus_per_pod)
        if slots < g.pods:
            return (f"{n} needs {plural(g.pods, 'pod')} x {plural(g.gpus_per_pod, 'GPU')}; the pools it "
                    f"fits in {zone_list(zones)} hold {plural(slots, 'such pod')}",)
    return ()


def _job_capacity(inputs: Inputs, pool_fits: Mapping[str, tuple[PoolFit, ...]],
                  zones: Mapping[str, frozenset[str]]) -> Capacity:
    """For the job: its GPUs must not exceed those of all pools where some group can land."""
    groups, names = inputs.groups, inputs.names
    requested = sum(groups[n].gpus for n in names)
    usable_pools = {(f.zone, f.pool): f.node.nodes * f.gpus_per_node for n in names if groups[n].gpus_per_pod > 0
                    for f in pool_fits[n] if f.fits and f.zone in zones[n]}
    available = sum(usable_pools.values())
    per_zone: dict[str, int] = {}
    for (z, _p), gp in usable_pools.items():
        per_zone[z] = per_zone.get(z, 0) + gp
    best = min(per_zone.items(), key=lambda kv: (-kv[1], kv[0])) if per_zone else ("", 0)
    # Capacity is judged only when every GPU group can land somewhere; otherwise that is the problem.
    judged = all(zones[n] for n in names if groups[n].gpus_per_pod > 0)
    fits = requested <= available or not judged
    message = "" if fits else f"the job requests {plural(requested, 'GPU')}; the pools where it can land have {available}"
    return Capacity(requested, available, fits, best[0], best[1], message)
