"""The single map: for every training job found, where its groups can land and which of the
flows it needs get through. Computed once; rules only read the result.

Cost: each group is one label class (a Cilium identity, a scheduler pod class), so the work per
job is groups x groups flows plus groups x pools fits; nothing iterates over pods or over pairs
of jobs. The boundary probe compares each job with one representative of every other network
zone, which keeps it linear in jobs.

One cluster's jobs and flows: ``analysis.clustermap`` (flows: ``analysis.flows``; label lies and
spread splits: ``analysis.labels``). Which cluster a manifest belongs to: ``analysis.clusters``.
Where findings point: ``analysis.locate``. The boundary probe: ``analysis.boundary``.
"""

from __future__ import annotations

import os
import time
from collections import defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field, fields

from topogate.analysis.locate import inventory_source, position_of
from topogate.analysis.map.cluster import POLICY_KINDS, ClusterMap
from topogate.analysis.map.clusters import assign_clusters
from topogate.analysis.map.duplicates import Duplicate, without_duplicates
from topogate.analysis.map.labels import LabelLie, SpreadSplit
from topogate.analysis.map.pods import pod_class, pod_template
from topogate.analysis.netpolicy import PodClass, refusal_text, unselecting_text
from topogate.analysis.placement.kueue import Concern
from topogate.analysis.proofs.boundary import BoundaryProof, Opening
from topogate.analysis.proofs.doors import ClosedDoor, DoorRules, closed_doors, target_members
from topogate.analysis.proofs.ingress import OpenIngress, open_ingress
from topogate.analysis.proofs.members import KUBE_DNS
from topogate.analysis.result import JobMap
from topogate.core.forked import Child
from topogate.core.position import Position
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.jobs import RUNTIME_KINDS, find_jobs
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.sources.manifests import K8sObject

__all__ = ["LabelLie", "MapFacts", "SpreadSplit", "ClusterMap", "build_map"]


@dataclass(frozen=True)
class MapFacts:
    """What the map found besides the jobs, for the rule context (policies.context.analysed)."""

    policy_selects: tuple[tuple[str, int, Position], ...] = ()
    boundary_openings: tuple[Opening, ...] = ()
    zone_label_lies: tuple[LabelLie, ...] = ()
    spread_splits: tuple[SpreadSplit, ...] = ()
    unprotected: tuple[tuple[str, Position], ...] = ()
    unassigned: tuple[tuple[str, Position], ...] = ()
    open_ingress: tuple[OpenIngress, ...] = ()
    closed_doors: tuple[ClosedDoor, ...] = ()
    # (policy, construct, message, where): constructs the evaluator does not model (TG120)
    not_modelled: tuple[tuple[str, str, str, Position], ...] = ()
    # (policy, reason, where): policies the agent (or the API server) refuses (TG125)
    refused: tuple[tuple[str, str, Position], ...] = ()
    # (policy, sentence, where, subject): selectors on labels the identity drops (TG126, TG127)
    unselecting: tuple[tuple[str, str, Position, bool], ...] = ()
    kueue_concerns: tuple[Concern, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()  # later copies of an object, not analysed (TG007)
    checked_clusters: tuple[str, ...] = ()  # the clusters analysed (some of their manifests read)


@dataclass
class _Gathered:
    """What every cluster adds to the map, in cluster order."""

    jobs: list[JobMap] = field(default_factory=list)
    lies: list[LabelLie] = field(default_factory=list)
    spreads: list[SpreadSplit] = field(default_factory=list)
    openings: list[Opening] = field(default_factory=list)
    ingress: list[OpenIngress] = field(default_factory=list)
    shut: list[ClosedDoor] = field(default_factory=list)
    selects: list[tuple[str, int, Position]] = field(default_factory=list)
    shared_selects: dict[str, tuple[int, Position]] = field(default_factory=dict)
    unprotected: list[tuple[str, Position]] = field(default_factory=list)
    not_modelled: dict[tuple[str, str, str, Position], None] = field(default_factory=dict)
    refused: dict[tuple[str, str, Position], None] = field(default_factory=dict)
    unselecting: dict[tuple[str, str, Position, bool], None] = field(default_factory=dict)
    kueue_concerns: list[Concern] = field(default_factory=list)


def _who_gets_in(cm: ClusterMap, inv: Inventory, cluster: Cluster,
                 cluster_jobs: list[tuple[JobMap, dict[str, PodClass]]], managed_ns: set[str],
                 doors: DoorRules) -> tuple[list[Opening], list[OpenIngress], list[ClosedDoor]]:
    """The boundary proof (TG107), the jobs' own ingress (TG112) and the declared doors (TG113)
    of one cluster: all three ask the same pods, so they share the proof's label index."""
    proof = BoundaryProof(cm, cluster, doors)
    openings = proof.run(cluster_jobs, sorted(managed_ns), target_members(cm, doors.doors))
    ingress: list[OpenIngress] = []
    for jm, classes in cluster_jobs:
        wl = inv.workload_at(cluster.name, jm.namespace, jm.name, jm.kind)
        oi = open_ingress(cm, cluster, jm, classes, wl, doors, proof.named_sources, proof.ingress_witnesses)
        if oi is not None:
            ingress.append(oi)
    reps = {nz: r for (nz, _ns), r in sorted(proof.reps.items())}
    return openings, ingress, closed_doors(cm, doors, proof.members, reps)



def _map_jobs(cm: ClusterMap, managed_ns: set[str], selected: dict[str, int],
              acc: _Gathered) -> list[tuple[JobMap, dict[str, PodClass]]]:
    """Every job of the cluster: its map, what it claims about zones, and the policies that
    select its groups (a job in a managed namespace that none selects is unprotected)."""
    cluster_jobs: list[tuple[JobMap, dict[str, PodClass]]] = []
    for job in cm.jobs:
        jm, classes, _ = cm.job_map(job)
        acc.jobs.append(jm)
        cluster_jobs.append((jm, classes))
        acc.lies.extend(cm.label_lies(jm))
        acc.spreads.extend(cm.spread_splits(job, jm))
        acc.kueue_concerns.extend(cm.kueue_concerns(jm))
        any_policy = False
        host_net = {g.name for g in job.groups if g.spec.get("hostNetwork") is True}
        for name, pc in classes.items():
            if name in host_net:  # not an endpoint: no policy selects it
                continue
            for pref in cm.pset.policies_selecting(pc):
                selected[str(pref)] += 1
                any_policy = True
        if not any_policy and job.namespace in managed_ns and any(g.pods for g in job.groups):
            acc.unprotected.append((jm.object, jm.pos))
    return cluster_jobs


def _other_selections(cm: ClusterMap, objs: list[K8sObject], doors: DoorRules,
                      selected: dict[str, int]) -> None:
    """Pods that are not part of a job still make a policy non-dangling."""
    for o in objs:
        tpl = pod_template(o)
        if tpl is not None:
            pc = pod_class(o.namespace or "default", tpl.labels, tpl.spec, cm.pset)
            for pref in cm.pset.policies_selecting(pc):
                selected[str(pref)] += 1
    for pref in cm.pset.policies_selecting(KUBE_DNS):  # kube-dns is a peer of every job
        selected[str(pref)] += 1
    for m in target_members(cm, doors.doors):  # a declared door's service is known to exist
        for pref in cm.pset.policies_selecting(m.pod):
            selected[str(pref)] += 1


def _policy_selects(inv: Inventory, cluster: Cluster, cm: ClusterMap, shared_ids: set[int],
                    selected: dict[str, int], acc: _Gathered) -> None:
    """How many pod classes each namespaced policy of the cluster selects (TG109 dangling-policy).
    A policy the agent refuses (TG125) or whose subject selects no identity (TG126) has its own
    finding, which says why it selects nothing."""
    told = {str(r.policy) for r in cm.pset.refused} | {str(u.policy) for u in cm.pset.unselecting if u.subject}
    for o in cm.policy_objs:
        if o.kind in ("CiliumNetworkPolicy", "NetworkPolicy"):
            ref = f"{o.kind}/{o.namespace or 'default'}/{o.name}"
            if ref in told:
                continue
            if id(o) in shared_ids:  # judged once, over every cluster it applies to
                acc.shared_selects[ref] = (acc.shared_selects.get(ref, (0, o.pos))[0]
                                           + selected.get(ref, 0), o.pos)
            else:
                acc.selects.append((ref, selected.get(ref, 0),
                                    inventory_source(inv, cluster, o) or o.pos))


def _map_cluster(inv: Inventory, cluster: Cluster, objs: list[K8sObject], shared: list[K8sObject],
                 acc: _Gathered) -> None:
    """One cluster's share of the map, added to acc. Its compiled policies are not kept: what
    the findings need of them (verdicts, rule positions) the facts hold, and at 10,000 jobs
    every cluster's policy set alive at once was a fifth of check's peak memory."""
    cm = ClusterMap(inv, cluster, objs, shared)
    for n in cm.pset.not_modelled:  # a shared policy is compiled once per cluster: keep one
        pobj = cm.locate_rule.by_ref.get(str(n.policy))
        where = pobj.locate(n.path) if pobj is not None else position_of(n.policy.source)
        acc.not_modelled[(str(n.policy), n.construct, n.message, where)] = None
    for r in cm.pset.refused:
        pobj = cm.locate_rule.by_ref.get(str(r.policy))
        where = pobj.locate(r.path) if pobj is not None else position_of(r.policy.source)
        acc.refused[(str(r.policy), refusal_text(r, cm.pset.agent), where)] = None
    for u in cm.pset.unselecting:
        pobj = cm.locate_rule.by_ref.get(str(u.policy))
        where = pobj.locate(u.path) if pobj is not None else position_of(u.policy.source)
        acc.unselecting[(str(u.policy), unselecting_text(u, cm.pset.agent), where, u.subject)] = None
    managed_ns = {w.namespace for w in inv.workloads_of(cluster.name)}
    selected: dict[str, int] = defaultdict(int)
    doors = DoorRules(inv, cluster.name)
    cluster_jobs = _map_jobs(cm, managed_ns, selected, acc)
    _other_selections(cm, objs, doors, selected)
    _policy_selects(inv, cluster, cm, {id(o) for o in shared}, selected, acc)
    got_open, got_in, got_shut = _who_gets_in(cm, inv, cluster, cluster_jobs, managed_ns, doors)
    acc.openings += got_open
    acc.ingress += got_in
    acc.shut += got_shut
    cm.pset.forget()  # the next cluster's analysis needs the memory more than this one's memos


# Off for now: the child's answers come back as copies of strings, positions and labels the
# parent's own objects share, so at 2,000 jobs check's peak RSS rose from 113 to 162 MiB (the
# parent's, wait4), and on a loaded two-CPU machine no wall time was won. On once the answers
# travel as references into what both processes hold. Tests switch it on (the report must not
# change).
PARALLEL = False
# Below this many objects to analyse a second process costs more than it saves (a fork and the
# answers pickled back: a few milliseconds); above, the clusters are shared between two.
PARALLEL_FROM = 2_000
# The child's answer is awaited this long at least (or four times the parent's own share).
CHILD_WAIT = 30.0


def _map_clusters(inv: Inventory, todo: list[tuple[Cluster, list[K8sObject]]],
                  shared: list[K8sObject]) -> list[_Gathered]:
    """Each cluster's share of the map, in `todo`'s order. The clusters are independent (each
    compiles its own policy set), and their analysis is pure Python on one core: with two CPUs
    and enough to do, a forked child (core.forked) works out about half of them (by objects)
    while this process does the rest (when `PARALLEL`). Should the child fail or not answer in time, this process
    works out its clusters too: the answer never depends on whether it helped."""
    def work(which: list[int]) -> dict[int, _Gathered]:
        out: dict[int, _Gathered] = {}
        for i in which:
            out[i] = _Gathered()
            _map_cluster(inv, todo[i][0], todo[i][1], shared, out[i])
        return out

    everyone = list(range(len(todo)))
    if (not PARALLEL or len(todo) < 2 or (os.cpu_count() or 1) < 2
            or sum(len(o) for _, o in todo) < PARALLEL_FROM):
        got = work(everyone)
        return [got[i] for i in everyone]
    ours, theirs = _halves([len(objs) + len(shared) for _, objs in todo])
    child = Child.start(lambda: work(theirs))
    started = time.monotonic()
    try:
        got = work(ours)
    except BaseException:
        if child is not None:
            child.result(timeout=0)  # killed and reaped: no process or descriptor outlives us
        raise
    answer = child.result(timeout=max(CHILD_WAIT, 4 * (time.monotonic() - started))) if child else None
    got.update(answer if isinstance(answer, dict) else work(theirs))
    return [got[i] for i in everyone]


def _halves(sizes: list[int]) -> tuple[list[int], list[int]]:
    """Indexes of `sizes` in two shares of about equal sum (largest first, each to the lighter
    share); the first share is never empty."""
    shares: tuple[list[int], list[int]] = ([], [])
    sums = [0, 0]
    for i in sorted(range(len(sizes)), key=lambda i: (-sizes[i], i)):
        k = 0 if sums[0] <= sums[1] else 1
        shares[k].append(i)
        sums[k] += sizes[i]
    return sorted(shares[0]), sorted(shares[1])


def _merge(acc: _Gathered, part: _Gathered) -> None:
    """Add one cluster's share to acc as `_map_cluster` on acc itself would have: every field,
    so a field added to _Gathered cannot be left out of a parallel run (lists extend, ordered
    sets keep first seen, shared_selects counts add up)."""
    for f in fields(_Gathered):
        mine, theirs = getattr(acc, f.name), getattr(part, f.name)
        if f.name == "shared_selects":
            for ref, (n, pos) in theirs.items():
                mine[ref] = (mine.get(ref, (0, pos))[0] + n, pos)
        elif isinstance(mine, list):
            mine.extend(theirs)
        else:
            for key in theirs:
                mine.setdefault(key, None)


def _checked(inv: Inventory, analysed: Sequence[str], override: str | None,
             only: Collection[str] | None) -> tuple[str, ...]:
    """The clusters a run checked: those it analysed; when objects were read but none belongs
    to a cluster (OUT/flux/<c>, OUT/argocd/apps), every cluster the run is about, whose jobs
    it was meant to find. A narrowed run that selected nothing checked nothing."""
    if analysed or only is not None:
        return tuple(analysed)
    return tuple(c.name for c in inv.clusters if override in (None, c.name))


def build_map(inv: Inventory, objects: Sequence[K8sObject], override: str | None = None,
              only: Collection[str] | None = None) -> tuple[list[JobMap], MapFacts]:
    """`only`: analyse just these clusters (check --changed-since; topogate.check.changed)."""
    by_cluster, duplicates = without_duplicates(assign_clusters(inv, objects, override))
    shared = [o for o in by_cluster.get(None, [])
              if o.kind in (*POLICY_KINDS, "Namespace", *RUNTIME_KINDS, *KUEUE_KINDS)]
    unassigned = [(j.object_id, position_of(j.source)) for j in find_jobs(
        (o.obj, o.pos, o.locate) for o in by_cluster.get(None, []))]
    todo = [(c, by_cluster.get(c.name, [])) for c in inv.clusters
            if (by_cluster.get(c.name) or shared) and (only is None or c.name in only)]
    analysed = [c.name for c, _ in todo]
    acc = _Gathered()
    for part in _map_clusters(inv, todo, shared):  # in inventory order, whoever worked it out
        _merge(acc, part)
    selects = acc.selects
    # With jobs whose cluster is unknown, a shared policy may well select them: no verdict.
    if not unassigned and only is None:  # a narrowed run saw a shared policy in some clusters only
        selects.extend((ref, n, pos) for ref, (n, pos) in sorted(acc.shared_selects.items()))
    facts = MapFacts(
        policy_selects=tuple(selects), boundary_openings=tuple(acc.openings),
        zone_label_lies=tuple(acc.lies), spread_splits=tuple(acc.spreads),
        unprotected=tuple(acc.unprotected), unassigned=tuple(unassigned),
        open_ingress=tuple(acc.ingress), closed_doors=tuple(acc.shut),
        not_modelled=tuple(acc.not_modelled), refused=tuple(acc.refused), unselecting=tuple(acc.unselecting),
        kueue_concerns=tuple(dict.fromkeys(acc.kueue_concerns)),
        duplicates=duplicates, checked_clusters=_checked(inv, analysed, override, only))
    return sorted(acc.jobs, key=lambda j: (j.cluster, j.object)), facts
