"""Where can each pod of a training job land, and can the job end up split across zones?

Per job and per replica group this computes the zones (and pools) where the group's pods can
land in a *feasible placement* (one where every pod of the job gets a node), whether every such
placement keeps the whole job in one zone (``colocated``), and which pairs of zones two groups can
occupy at the same time (``zone_pairs``), which the reachability check walks.

How: first the node filters of ``scheduling`` give each group its node-feasible zones. Then the
relations between groups are solved at the level of groups (label classes), never pods, so the
cost is linear in jobs and independent of replica counts:

1. Zone sets.  A greatest fixpoint narrows each group's zones. The required podAffinity terms of
   a pod act together: the scheduler counts existing pods that match ALL of them and needs one in
   the node's domain of every term's key, and a node lacking a term's key is out (kube-scheduler
   InterPodAffinity plugin, satisfyPodAffinity). A term on the zone key or on
   ``kubernetes.io/hostname`` (same node, hence same zone) therefore allows only zones where some
   pod matching every term can be (groups of the job, or known peers); terms on other keys only
   need such pods to exist. When no pod matching every term exists yet and the pod matches all its
   own terms, the scheduler lets it through anywhere ("the first pod in a series that have
   affinity to themselves", same function), so a self-matching group is co-located but not pinned.
   A group whose zone is certain (one pod, or one zone) removes that zone from every group it
   repels with required podAntiAffinity on the zone key, checked both ways: the scheduler also
   honours the anti-affinity of pods already running
   (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
   Groups whose affinity waits on each other with none matching itself never start (deadlock).
2. Co-location units.  Groups provably in one zone are merged (union-find): a single-pod group;
   a group with one possible zone; a group whose term matches only itself; a group whose term
   matches (besides itself, only if it is already in that unit) only groups of one unit; a set
   of groups each of which has a term that matches exactly that set (the first pod picks the zone,
   every later one finds a match only there); units pinned to the same single zone. Members of a
   unit then share the unit's zones (their intersection), and a GPU unit keeps only the zones
   where all its GPU pods fit together.
3. Splits.  Required podAntiAffinity of a group with itself on the zone key puts each pod in its
   own zone. A topologySpreadConstraint on the zone key with ``whenUnsatisfiable: DoNotSchedule``
   whose selector matches the group's own pods cannot keep more than ``maxSkew`` of them in one
   zone while another eligible zone is empty, so ``pods > maxSkew`` over two or more eligible
   zones splits the group; eligible zones are those of nodes passing the pod's nodeAffinity and
   nodeSelector (``nodeAffinityPolicy: Honor``, the default) or all zones (``Ignore``), and also
   only tolerated nodes when ``nodeTaintsPolicy: Honor`` (default ``Ignore``)
   (https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/). An
   eligible zone the pods can never reach (a tainted zone under the default taint policy) keeps
   the global minimum at 0, so each reachable zone holds at most ``maxSkew`` of them; so does
   ``minDomains`` above the number of eligible zones. ``ScheduleAnyway`` constrains nothing.
   Anti-affinity and spread on other keys (hostname, region) do not change zones.
4. Capacity.  GPUs are whole devices on one node: a group needs ``pods`` slots of
   ``gpus_per_node // gpus_per_pod`` per node in the pools it fits; a co-location unit must fit in
   one zone; the job's GPUs must not exceed those of all pools where some group can land.

Not modelled (documented so nobody relies on it): CPU/memory, scoring and preferences, pods
already running in the cluster other than the known ``peers``, per-pod labels (index, hash),
namespace labels other than ``kubernetes.io/metadata.name`` unless given.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.jobs import JobGroup, TrainingJob
from topogate.analysis.scheduling import (
    HOSTNAME_LABEL,
    NodeClass,
    PoolFit,
    fit_pools,
    node_classes,
    required_node_affinity,
    selector_matches,
    with_label_keys,
)
from topogate.inventory.model import Cluster
from topogate.kinds import KINDS

Pairs = tuple[tuple[str, str], ...]
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Capacity:
    requested: int  # GPUs the job asks for (all groups)
    available: int  # GPUs of the pools where some group of the job can land
    fits: bool
    zone: str = ""  # for a co-located job: the zone with the most GPUs usable by the job
    zone_gpus: int = 0
    message: str = ""


@dataclass(frozen=True)
class GroupPlacement:
    name: str
    pods: int
    gpus_per_pod: int
    zones: tuple[str, ...]  # sorted: where this group's pods can land in a feasible placement
    node_zones: tuple[str, ...]  # sorted: zones passing the node filters alone
    pools: tuple[tuple[str, tuple[str, ...]], ...]  # (zone, pools) for the zones above
    fits: tuple[PoolFit, ...] = field(default=(), compare=False)  # every pool with its verdict
    unit: int = -1  # co-location unit id (groups with equal ids share one zone); -1: no pods
    single_zone: bool = True  # every feasible placement keeps all its pods in one zone
    splits: bool = False  # every feasible placement spreads its pods over several zones
    self_anti: bool = False  # its pods repel each other on the zone key
    reasons: tuple[str, ...] = ()  # why it cannot be scheduled ("" when it can)

    @property
    def schedulable(self) -> bool:
        return self.pods <= 0 or (bool(self.zones) and not self.reasons)

    @property
    def removed(self) -> dict[tuple[str, str], str]:
        """(zone, pool) -> why the pool was removed by the node filters."""
        return {(f.zone, f.pool): f.reason for f in self.fits if not f.fits}


@dataclass(frozen=True)
class JobPlacement:
    object_id: str
    cluster: str
    groups: tuple[GroupPlacement, ...]
    schedulable: bool
    colocated: bool
    may_split_reasons: tuple[str, ...] = ()
    unschedulable_reasons: tuple[str, ...] = ()
    pending_risks: tuple[str, ...] = ()  # scheduler choices that leave pods Pending
    capacity: Capacity = Capacity(0, 0, True)
    anti_pairs: frozenset[tuple[str, str]] = frozenset()  # groups that never share a zone

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({z for g in self.groups for z in g.zones}))

    def group(self, name: str) -> GroupPlacement | None:
        return next((g for g in self.groups if g.name == name), None)

    def zone_pairs(self, a: str, b: str) -> frozenset[tuple[str, str]]:
        """The (zone of an `a` pod, zone of a `b` pod) pairs some feasible placement realises.

        For a == b: pairs of two distinct pods of the group. Unknown names give the empty set.
        """
        ga, gb = self.group(a), self.group(b)
        if ga is None or gb is None or ga.pods <= 0 or gb.pods <= 0:
            return frozenset()
        if a == b:
            if ga.pods == 1:
                return frozenset()
            if ga.single_zone:
                return frozenset((z, z) for z in ga.zones)
            return frozenset(
                (x, y) for x in ga.zones for y in ga.zones if not (ga.self_anti and x == y)
            )
        if ga.unit == gb.unit and ga.single_zone and gb.single_zone:
            return frozenset((z, z) for z in ga.zones if z in gb.zones)
        repel = (a, b) in self.anti_pairs or (b, a) in self.anti_pairs
        return frozenset((x, y) for x in ga.zones for y in gb.zones if not (repel and x == y))


# ---------------------------------------------------------------------------------------------
# Peers: pods outside the job that affinity selectors may match


@dataclass(frozen=True)
class Peer:
    object_id: str  # the object the pods belong to (never matched against its own job)
    group: str
    namespace: str
    labels: Pairs
    zones: tuple[str, ...]  # where its pods can land; () = it never runs


class PeerIndex:
    """Peers by namespace and label, so matching a selector costs the matches, not all peers."""

    def __init__(self, peers: Iterable[Peer] = ()) -> None:
        self._peers: list[Peer] = [p for p in peers if p.zones]
        self._by_ns: dict[str, list[int]] = {}
        self._by_label: dict[tuple[str, str, str], list[int]] = {}
        self._by_key: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(self._peers):
            self._by_ns.setdefault(p.namespace, []).append(i)
            for k, v in p.labels:
                self._by_label.setdefault((p.namespace, k, v), []).append(i)
                self._by_key.setdefault((p.namespace, k), []).append(i)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_ns))

    def _candidates(self, selector: Mapping[str, Any], ns: str) -> list[int]:
        ml = selector.get("matchLabels")
        postings: list[list[int]] = []
        if isinstance(ml, dict):
            postings += [self._by_label.get((ns, str(k), str(v)), []) for k, v in ml.items()]
        for req in selector.get("matchExpressions") or []:
            if not isinstance(req, dict):
                continue
            key = str(req.get("key", ""))
            if req.get("operator") == "In":
                vals = req.get("values") if isinstance(req.get("values"), list) else []
                assert isinstance(vals, list)
                postings.append(sorted({i for v in vals for i in self._by_label.get((ns, key, str(v)), [])}))
            elif req.get("operator") == "Exists":
                postings.append(self._by_key.get((ns, key), []))
        if postings:
            return min(postings, key=len)
        return self._by_ns.get(ns, [])

    def match(self, selector: Any, namespaces: frozenset[str] | None, exclude: str = "") -> list[Peer]:
        if not isinstance(selector, dict):
            return []
        out: list[Peer] = []
        for ns in sorted(self._by_ns) if namespaces is None else sorted(namespaces):
            for i in self._candidates(selector, ns):
                p = self._peers[i]
                if p.object_id != exclude and selector_matches(selector, dict(p.labels)):
                    out.append(p)
        return out


def peers_of(placements: Iterable[tuple[TrainingJob, JobPlacement]]) -> list[Peer]:
    """Every group of already placed jobs, as peers for the others."""
    out: list[Peer] = []
    for job, pl in placements:
        for g in job.groups:
            gp = pl.group(g.name)
            if gp is not None and g.pods > 0:
                out.append(Peer(job.object_id, g.name, job.namespace, g.labels, gp.zones))
    return out


# ---------------------------------------------------------------------------------------------
# Terms


@dataclass(frozen=True)
class _Term:
    selector: Any  # with matchLabelKeys/mismatchLabelKeys merged
    namespaces: frozenset[str] | None  # None: every namespace
    targets: frozenset[str]  # matched groups of this job
    peers: tuple[Peer, ...]  # matched peers

    @property
    def peer_zones(self) -> set[str]:
        return {z for p in self.peers for z in p.zones}


def _term_namespaces(
    term: Mapping[str, Any], own: str, known: Iterable[str], ns_labels: Mapping[str, Mapping[str, str]],
) -> frozenset[str] | None:
    names = {str(n) for n in (term.get("namespaces") or []) if n}
    nsel = term.get("namespaceSelector")
    if nsel is None:
        return frozenset(names or {own})
    if isinstance(nsel, dict) and not nsel.get("matchLabels") and not nsel.get("matchExpressions"):
        return None  # {} selects every namespace (PodAffinityTerm API reference)
    for ns in known:
        labels = {NAMESPACE_NAME_LABEL: ns, **ns_labels.get(ns, {})}
        if selector_matches(nsel, labels):
            names.add(ns)
    return frozenset(names)


def _required_terms(spec: Mapping[str, Any], which: str) -> list[dict[str, Any]]:
    aff = spec.get("affinity")
    block = aff.get(which) if isinstance(aff, dict) else None
    terms = block.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(block, dict) else None
    return [t for t in terms if isinstance(t, dict)] if isinstance(terms, list) else []


# ---------------------------------------------------------------------------------------------
# Union-find over group names


class _Units:
    def __init__(self, names: Iterable[str]) -> None:
        self.parent = {n: n for n in names}

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        lo, hi = sorted((ra, rb))
        self.parent[hi] = lo
        return True

    def members(self, n: str) -> list[str]:
        r = self.find(n)
        return sorted(m for m in self.parent if self.find(m) == r)


def _fmt(zones: Iterable[str]) -> str:
    zs = sorted(zones)
    return ", ".join(zs) if zs else "no zone"


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


def _matches_peers(
    job: TrainingJob, zone_key: str, index: PeerIndex, known: set[str],
    ns_labels: Mapping[str, Mapping[str, str]],
) -> bool:
    for g in job.groups:
        for which in ("podAffinity", "podAntiAffinity"):
            for t in _required_terms(g.spec, which):
                if t.get("topologyKey") != zone_key:
                    continue
                sel = with_label_keys(t.get("labelSelector"), g.label_map, t.get("matchLabelKeys"),
                                      t.get("mismatchLabelKeys"))
                nss = _term_namespaces(t, job.namespace, known | {job.namespace}, ns_labels)
                if index.match(sel, nss, exclude=job.object_id):
                    return True
    return False


__all__ = [
    "Capacity", "GroupPlacement", "JobPlacement", "Peer", "PeerIndex", "peers_of", "place_job", "place_all",
    "required_node_affinity",
]
