"""The placement analysis of a job (``place_job``) and of every job of the paths (``place_all``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topogate.analysis.jobs import JobGroup, TrainingJob
from topogate.analysis.placement.model import Capacity, GroupPlacement, JobPlacement, _fmt
from topogate.analysis.placement.peers import PeerIndex, peers_of
from topogate.analysis.placement.terms import _matches_peers, _required_terms, _Term, _term_namespaces
from topogate.analysis.placement.units import _Units
from topogate.analysis.scheduling import (
    HOSTNAME_LABEL,
    NodeClass,
    PoolFit,
    fit_pools,
    node_classes,
    selector_matches,
    with_label_keys,
)
from topogate.inventory.model import Cluster
from topogate.kinds import KINDS


def _slots(fits: Sequence[PoolFit], zones: set[str], gpp: int) -> int:
    """Pods of `gpp` GPUs the fitting pools in `zones` can hold."""
    if gpp <= 0:
        return 1 << 30
    return sum(f.node.nodes * (f.node.gpus_per_node // gpp) for f in fits if f.fits and f.zone in zones)


# ---------------------------------------------------------------------------------------------


def place_job(
    job: TrainingJob,
    cluster: Cluster,
    peers: PeerIndex | None = None,
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    nodes: Sequence[NodeClass] | None = None,
    fit_cache: dict[Any, tuple[PoolFit, ...]] | None = None,
) -> JobPlacement:
    """The placement analysis of one job on one cluster (see the module docstring)."""
    zone_key = cluster.zone_label
    classes = tuple(nodes) if nodes is not None else node_classes(cluster)
    all_zones = {n.zone for n in classes}
    peers = peers or PeerIndex()
    ns_labels = namespace_labels or {}
    known_ns = set(peers.namespaces) | set(ns_labels) | {job.namespace}

    live = [g for g in job.groups if g.pods > 0]
    by_name: dict[str, JobGroup] = {g.name: g for g in live}
    names = sorted(by_name)
    cache = fit_cache if fit_cache is not None else {}
    fits: dict[str, tuple[PoolFit, ...]] = {g.name: fit_pools(g.spec, classes, cache) for g in job.groups}
    node_zones = {n: {f.zone for f in fits[n] if f.fits} for n in fits}

    def resolve(g: JobGroup, raw: Mapping[str, Any]) -> _Term:
        labels = g.label_map
        sel = with_label_keys(raw.get("labelSelector"), labels, raw.get("matchLabelKeys"), raw.get("mismatchLabelKeys"))
        nss = _term_namespaces(raw, job.namespace, known_ns, ns_labels)
        in_scope = nss is None or job.namespace in nss
        targets = frozenset(
            h.name for h in live if in_scope and isinstance(sel, dict) and selector_matches(sel, h.label_map)
        )
        return _Term(sel, nss, targets, tuple(peers.match(sel, nss, exclude=job.object_id)))

    # Required podAffinity: the scheduler counts, per topology domain, the existing pods that match
    # ALL of the pod's required affinity terms, and needs one in the node's domain of every term's
    # key (kube-scheduler InterPodAffinity plugin, satisfyPodAffinity). So the terms act as one
    # effective term whose targets match every term. A term on the zone key, or on the hostname
    # (same node, hence same zone), ties zones; terms on other keys only need the targets to exist.
    aff: dict[str, list[_Term]] = {}  # the effective term, when it ties zones
    need: dict[str, _Term | None] = {}  # the effective term, whatever its keys
    missing_key: dict[str, str] = {}
    anti: dict[str, list[_Term]] = {}
    for g in live:
        raw = _required_terms(g.spec, "podAffinity")
        eff: _Term | None = None
        if raw:
            resolved = [resolve(g, t) for t in raw]
            targets = frozenset.intersection(*(r.targets for r in resolved))
            peer_keys = set.intersection(*({(p.object_id, p.group) for p in r.peers} for r in resolved))
            eff = _Term(None, None, targets,
                        tuple(p for p in resolved[0].peers if (p.object_id, p.group) in peer_keys))
            # "All topology labels must exist on the node": a pool without a term's key is out.
            keys = {str(t.get("topologyKey", "")) for t in raw} - {HOSTNAME_LABEL}
            keyed = {f.zone for f in fits[g.name] if f.fits and all(k in f.node.label_map for k in keys)}
            if node_zones[g.name] and not keyed:
                missing_key[g.name] = (f"{g.name}: no pool it fits carries the podAffinity topologyKey "
                                       f"{', '.join(sorted(keys))}: it stays Pending")
            node_zones[g.name] = keyed
        need[g.name] = eff
        tied = any(t.get("topologyKey") in (zone_key, HOSTNAME_LABEL) for t in raw)
        aff[g.name] = [eff] if eff is not None and tied else []
        anti[g.name] = [resolve(g, t) for t in _required_terms(g.spec, "podAntiAffinity") if t.get("topologyKey") == zone_key]

    # Anti-affinity is symmetric for placement: the incoming pod's terms and those of running pods.
    repels: dict[str, set[str]] = {n: set() for n in names}
    peer_repel: dict[str, set[str]] = {n: set() for n in names}
    for n in names:
        for t in anti[n]:
            for h in t.targets:
                repels[n].add(h)
                repels[h].add(n)
            for p in t.peers:
                if len(p.zones) == 1:
                    peer_repel[n] |= set(p.zones)
    anti_pairs = frozenset((a, b) for a in names for b in sorted(repels[a]) if a != b)
    self_anti = {n for n in names if n in repels[n]}

    unsched: dict[str, list[str]] = {n: [] for n in names}
    for n in names:
        if n in missing_key:
            unsched[n].append(missing_key[n])
        elif not node_zones[n]:
            unsched[n].append(f"{n} fits no pool: " + "; ".join(
                sorted({f"{f.zone}/{f.pool}: {f.reason}" for f in fits[n]})) if fits[n] else f"{n}: the cluster has no pools")
        e = need[n]
        if e is not None and not e.targets and not e.peers:
            unsched[n].append(f"{n} requires podAffinity with pods that do not exist (no pod matches all its "
                              "required podAffinity terms): it stays Pending")

    # Deadlock: a term that neither matches the pod itself nor a peer waits for a target to start.
    startable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in names:
            if n in startable:
                continue
            e = need[n]
            if e is None or n in e.targets or e.peers or (e.targets & startable):
                startable.add(n)
                changed = True
    for n in names:
        if n not in startable and not unsched[n]:
            e = need[n]
            waiting_for = sorted(e.targets) if e is not None else []
            unsched[n].append(f"{n} waits (podAffinity) for {', '.join(waiting_for)}, which "
                              "wait(s) for it in turn: none of them ever starts")

    # 1 + 2: zone sets and co-location units, narrowed together until stable.
    A: dict[str, set[str]] = {n: set(node_zones[n]) for n in names}
    units = _Units(names)
    # Zones a unit takes away from a member that has no podAffinity of its own: the scheduler may
    # still put that member there (it knows nothing of who follows it), leaving the rest Pending.
    unit_removed: dict[str, set[str]] = {n: set() for n in names}
    single: set[str] = set()
    # Each round that changes something removes a zone from a group or merges two units.
    for _ in range((len(all_zones) + 2) * (len(names) + 1) + 1):
        changed = False
        for n in names:  # fixpoint of the zone sets
            new = set(A[n]) - peer_repel[n]
            for t in aff[n]:
                allowed = set(t.peer_zones)
                for h in t.targets:
                    if h != n:
                        allowed |= A[h]
                if n in t.targets and not t.peers:
                    allowed |= A[n]  # may be the first of its set: anywhere it fits
                new &= allowed
            for h in repels[n]:
                if h != n and len(A[h]) == 1 and (by_name[h].pods == 1 or h in single):
                    new -= A[h]
            if new != A[n]:
                A[n] = new
                changed = True
        # unit formation
        single = {n for n in names if by_name[n].pods == 1 or len(A[n]) == 1
                  or any(t.targets == {n} and not t.peers for t in aff[n])}
        single |= {m for n in list(single) for m in units.members(n)}
        for n in names:
            for t in aff[n]:
                if t.peers:
                    continue
                others = t.targets - {n}
                if not others:
                    continue
                roots = {units.find(h) for h in others}
                if len(roots) == 1 and all(h in single for h in others) and (
                        n not in t.targets or units.find(n) in roots):
                    if units.union(n, next(iter(others))):
                        changed = True
                    single.add(n)
                if n in t.targets and len(t.targets) > 1 and all(
                        any(u.targets == t.targets and not u.peers for u in aff[h]) for h in t.targets):
                    for h in t.targets:
                        if units.union(n, h):
                            changed = True
                    single |= set(t.targets)
        pinned: dict[str, str] = {}
        for n in names:
            if n in single and len(A[n]) == 1:
                z = next(iter(A[n]))
                if z in pinned and units.union(pinned[z], n):
                    changed = True
                pinned.setdefault(z, n)
        single |= {m for n in list(single) for m in units.members(n)}
        # members of a single-zone unit share the zones they can all use
        for n in names:
            if n in single:
                common = set.intersection(*(A[m] for m in units.members(n)))
                # An empty intersection leaves each member its own zones: the member that cannot
                # follow is already empty and says why; the others can still land.
                if common and common != A[n]:
                    unit_removed[n] |= A[n] - common
                    A[n] = common
                    changed = True
        if not changed:
            break

    # 4a: a GPU unit must fit in one zone.
    risks: list[str] = []
    job_unsched: list[str] = []
    seen_roots: set[str] = set()
    for n in names:
        root = units.find(n)
        if n not in single or root in seen_roots:
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
                job_unsched.append(f"{', '.join(members)} must share one zone but no zone of {_fmt(A[n])} holds "
                                   f"their {need_gpus} GPUs")
        elif ok != A[n]:
            for m in members:
                A[m] = set(ok)

    # Pending risks: a member of a unit that the scheduler may still put where the rest cannot follow.
    for n in names:
        if n in single and len(units.members(n)) > 1:
            extra = unit_removed[n] - A[n]
            rest = [m for m in units.members(n) if m != n]
            if extra and not aff[n]:
                risks.append(f"{n} can be scheduled in {_fmt(extra)}, where {', '.join(rest)} cannot follow "
                             f"it: they would stay Pending")

    # 3: splits.
    splits: dict[str, list[str]] = {n: [] for n in names}
    for n in names:
        g = by_name[n]
        in_unit = n in single
        if n in self_anti and g.pods > 1:
            if g.pods > len(A[n]):
                unsched[n].append(f"{n}: podAntiAffinity on {zone_key} needs {g.pods} zones for its {g.pods} pods, "
                                  f"it can use {len(A[n])} ({_fmt(A[n])})")
            elif in_unit:
                unsched[n].append(f"{n}: podAntiAffinity on {zone_key} puts each of its {g.pods} pods in its own "
                                  f"zone, but podAffinity holds them in one zone")
            else:
                splits[n].append(f"podAntiAffinity on {zone_key} puts each of the {g.pods} pods of {n} in its own zone")
        for c in g.spec.get("topologySpreadConstraints") or []:
            if not isinstance(c, dict) or c.get("topologyKey") != zone_key:
                continue
            if c.get("whenUnsatisfiable", "DoNotSchedule") != "DoNotSchedule":
                continue  # ScheduleAnyway only scores
            sel = with_label_keys(c.get("labelSelector"), g.label_map, c.get("matchLabelKeys"))
            if not isinstance(sel, dict) or not selector_matches(sel, g.label_map):
                continue  # only a constraint that counts the group's own pods can force it apart
            raw_skew, raw_min = c.get("maxSkew"), c.get("minDomains")
            skew = raw_skew if isinstance(raw_skew, int) and raw_skew > 0 else 1
            min_domains = raw_min if isinstance(raw_min, int) and raw_min > 0 else 1
            honor_aff = c.get("nodeAffinityPolicy", "Honor") != "Ignore"
            honor_taints = c.get("nodeTaintsPolicy", "Ignore") == "Honor"
            eligible = {f.zone for f in fits[n]
                        if (f.affinity_ok or not honor_aff) and (f.taints_ok or not honor_taints)}
            if not honor_aff:
                eligible = set(all_zones) if not honor_taints else {f.zone for f in fits[n] if f.taints_ok}
            matched = [h for h in names if selector_matches(sel, by_name[h].label_map)]
            reachable = {z for h in matched for z in A[h]}
            others_outside = [h for h in matched if units.find(h) != units.find(n)]
            zero_floor = bool(eligible - reachable) or min_domains > len(eligible) or (in_unit and not others_outside)
            usable = 1 if in_unit else len(A[n])
            desc = (f"spread constraint DoNotSchedule on {zone_key} (maxSkew {skew}, {len(eligible)} eligible "
                    f"zone{'s' if len(eligible) != 1 else ''}: {_fmt(eligible)})")
            if zero_floor and (len(eligible) >= 2 or min_domains > len(eligible)) and g.pods > skew * usable:
                unsched[n].append(f"{desc} lets at most {skew * usable} of the {g.pods} pods of {n} run "
                                  f"in {_fmt(A[n]) if not in_unit else 'its one zone'}: the rest stay Pending")
            elif len(eligible) >= 2 and g.pods > skew and not in_unit:
                splits[n].append(f"{desc} splits {n} ({g.pods} pods, maxSkew {skew}, {len(eligible)} eligible zones)")

    # 4b: GPU capacity per group and for the job.
    for n in names:
        g = by_name[n]
        if g.gpus_per_pod > 0 and A[n]:
            slots = _slots(fits[n], A[n], g.gpus_per_pod)
            if slots < g.pods:
                unsched[n].append(f"{n} needs {g.pods} pods x {g.gpus_per_pod} GPUs; the pools it fits in "
                                  f"{_fmt(A[n])} hold {slots} such pods")
    requested = sum(by_name[n].gpus for n in names)
    usable_pools = {(f.zone, f.pool): f.node.gpus for n in names if by_name[n].gpus_per_pod > 0
                    for f in fits[n] if f.fits and f.zone in A[n]}
    available = sum(usable_pools.values())
    per_zone: dict[str, int] = {}
    for (z, _p), gp in usable_pools.items():
        per_zone[z] = per_zone.get(z, 0) + gp
    best = min(per_zone.items(), key=lambda kv: (-kv[1], kv[0])) if per_zone else ("", 0)
    # Capacity is judged only when every GPU group can land somewhere; otherwise that is the problem.
    judged = all(A[n] for n in names if by_name[n].gpus_per_pod > 0)
    cap_ok = requested <= available or not judged
    cap_msg = "" if cap_ok else f"the job requests {requested} GPUs; the pools where it can land have {available}"
    if not cap_ok:
        job_unsched.append(cap_msg)

    # Results per group.
    unit_ids = {r: i for i, r in enumerate(sorted({units.find(n) for n in names}))}
    out_groups: list[GroupPlacement] = []
    for g in job.groups:
        n = g.name
        if n not in by_name:
            out_groups.append(GroupPlacement(n, g.pods, g.gpus_per_pod, (), tuple(sorted(node_zones[n])), (), fits[n]))
            continue
        zones = tuple(sorted(A[n]))
        pools = tuple((z, tuple(sorted(f.pool for f in fits[n] if f.fits and f.zone == z))) for z in zones)
        reasons = list(unsched[n])
        if not zones and not reasons:
            reasons.append(f"{n} has no zone left: " + _why_empty(n, node_zones[n], aff[n], A, zone_key))
        out_groups.append(GroupPlacement(
            n, g.pods, g.gpus_per_pod, zones, tuple(sorted(node_zones[n])), pools, fits[n],
            unit_ids[units.find(n)], single_zone=n in single or g.pods == 1 or len(zones) <= 1,
            splits=bool(splits[n]), self_anti=n in self_anti, reasons=tuple(reasons),
        ))

    schedulable = all(gp.schedulable for gp in out_groups) and not job_unsched
    unsched_all = tuple(r for gp in out_groups for r in gp.reasons) + tuple(job_unsched)

    # Co-location over the groups that can run.
    runnable = [gp for gp in out_groups if gp.pods > 0 and gp.zones]
    split_reasons: list[str] = [r for n in names for r in splits[n]]
    for r in runnable:
        if not r.single_zone and not splits[r.name]:
            split_reasons.append(f"{r.name} ({r.pods} pods) is not held in one zone: its pods can land in "
                                 f"{_fmt(r.zones)}")
    for a, b in sorted(anti_pairs):
        if a < b and A[a] and A[b]:
            split_reasons.append(f"podAntiAffinity on {zone_key} keeps {a} and {b} in different zones")
    unit_reps: dict[int, GroupPlacement] = {}
    for r in runnable:
        unit_reps.setdefault(r.unit, r)
    reps = sorted(unit_reps.values(), key=lambda r: r.name)
    anchor = _anchor(job, reps)
    for r in reps:
        if anchor is None or r.unit == anchor.unit:
            continue
        split_reasons.append(_apart(anchor, r, zone_key))
    colocated = bool(runnable) and not split_reasons and len(unit_reps) == 1
    if not runnable:
        colocated = False

    return JobPlacement(
        job.object_id, cluster.name, tuple(out_groups), schedulable, colocated,
        tuple(dict.fromkeys(split_reasons)), tuple(dict.fromkeys(unsched_all)), tuple(risks),
        Capacity(requested, available, cap_ok, best[0], best[1], cap_msg), anti_pairs,
    )


def _why_empty(n: str, nz: set[str], terms: list[_Term], A: Mapping[str, set[str]], zone_key: str) -> str:
    if not nz:
        return "it fits no pool"
    parts = []
    for t in terms:
        zs = set(t.peer_zones)
        for h in t.targets:
            if h != n:
                zs |= A[h]
        parts.append(f"podAffinity on {zone_key} follows {', '.join(sorted(t.targets)) or 'peers'} "
                     f"into {_fmt(zs)}, but {n} fits only {_fmt(nz)}")
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
        return f"only in {g.zones[0]}" if len(g.zones) == 1 else f"in {_fmt(g.zones)}"

    if not za & zb:
        return f"{a.name} can land {where(a)}, {b.name} {where(b)}: they never share a zone"
    return (f"{a.name} can land {where(a)}, {b.name} {where(b)}, and no required podAffinity on {zone_key} "
            f"ties them to one zone")


# ---------------------------------------------------------------------------------------------


def place_all(
    jobs: Sequence[TrainingJob],
    cluster_of: Callable[[TrainingJob], Cluster | None],
    namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
) -> dict[str, JobPlacement]:
    """Place every job whose cluster is known; jobs see each other's pods as peers.

    Two passes: each job alone, then again with every other job of the same cluster as peers
    (placed by the first pass), so a pod following another job's coordinator is resolved. The
    cost is two placements per job plus indexed selector look-ups.
    """
    by_cluster: dict[str, list[tuple[TrainingJob, Cluster]]] = {}
    for j in jobs:
        c = cluster_of(j)
        if c is not None:
            by_cluster.setdefault(c.name, []).append((j, c))
    out: dict[str, JobPlacement] = {}
    for _, members in sorted(by_cluster.items()):
        cluster = members[0][1]
        classes = node_classes(cluster)
        cache: dict[Any, tuple[PoolFit, ...]] = {}
        first = [(j, place_job(j, cluster, None, namespace_labels, classes, cache)) for j, _ in members]
        index = PeerIndex(peers_of(first))
        known = set(index.namespaces) | set(namespace_labels or {})
        for j, pl in first:
            # Only a job with a zone-key pod (anti-)affinity term that matches another job's pods
            # can change when peers are known; the others keep their first answer.
            if _matches_peers(j, cluster.zone_label, index, known, namespace_labels or {}):
                pl = place_job(j, cluster, index, namespace_labels, classes, cache)
            out[j.object_id] = pl
    return dict(sorted(out.items()))
