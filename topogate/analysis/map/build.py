"""The single map: for every training job found, where its groups can land and which of the
flows it needs get through. Computed once; rules only read the result.

Cost: each group is one label class (a Cilium identity, a scheduler pod class), so the work per
job is groups x groups flows plus groups x pools fits; nothing iterates over pods or over pairs
of jobs. The boundary probe compares each job with one representative of every other network
zone, which keeps it linear in jobs.

One cluster's jobs and flows: ``map.cluster`` (flows: ``proofs.flows``; label lies and spread
splits: ``map.labels``). Which cluster a manifest belongs to: ``map.clusters``. Where findings
point: ``analysis.locate``. Everything else the rules read (the boundary proof, dangling and
unprotected policies, Kueue's concerns, ...) is a fact its rule family declares
(``map.facts``), computed here once per cluster while that cluster's policies are compiled.
"""

from __future__ import annotations

import os
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.locate import position_of
from topogate.analysis.map.cluster import POLICY_KINDS, ClusterMap
from topogate.analysis.map.clusters import assign_clusters
from topogate.analysis.map.duplicates import without_duplicates
from topogate.analysis.map.facts import Fact, Facts, MappedJob, OneCluster, WholeMap, cluster_shares, finished
from topogate.analysis.map.labels import LabelLie, SpreadSplit
from topogate.analysis.result import JobMap
from topogate.core.forked import Child
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.jobs import RUNTIME_KINDS, find_jobs
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.k8s.objects import K8sObject

__all__ = ["Ahead", "ClusterMap", "LabelLie", "SpreadSplit", "build_map"]


@dataclass
class _Share:
    """What one cluster adds to the map: its jobs, and each fact's share (by name)."""

    jobs: list[JobMap] = field(default_factory=list)
    facts: dict[str, tuple[Any, ...]] = field(default_factory=dict)


def _map_cluster(inv: Inventory, cluster: Cluster, objs: list[K8sObject], shared: list[K8sObject],
                 facts: Sequence[Fact[Any, Any]]) -> _Share:
    """One cluster's share of the map. Its compiled policies are not kept: what the findings
    need of them (verdicts, rule positions) the facts hold, and at 10,000 jobs every cluster's
    policy set alive at once was a fifth of check's peak memory."""
    cm = ClusterMap(inv, cluster, objs, shared)
    jobs: list[MappedJob] = []
    for job in cm.jobs:
        jm, classes, _ = cm.job_map(job)
        jobs.append(MappedJob(job, jm, classes))
    share = _Share([j.map for j in jobs], cluster_shares(facts, OneCluster(cm, objs, shared, jobs)))
    cm.pset.forget()  # the next cluster's analysis needs the memory more than this one's memos
    return share


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


class Ahead:
    """Clusters' shares worked out while the read is still going on (check's pipeline: a cluster
    is analysed as soon as its own builds are read, while kubectl builds the others).

    A share is worked out from what the run read so far and kept with the objects it was worked
    out from; `build_map` uses it only where, once everything is read, it would analyse that
    cluster from exactly those objects (the same objects, in the same order) and no shared ones.
    The analysis of a cluster depends on nothing else, so the report is the one a serial run
    gives, whichever builds finish first; an object from a later read that joins the cluster
    (an inventory workload built under another root, a policy of no cluster) makes build_map
    work the cluster out again, as it would have without the pipeline."""

    def __init__(self, inv: Inventory, override: str | None, only: Collection[str] | None,
                 facts: Sequence[Fact[Any, Any]]):
        self.inv, self.override, self.only, self.facts = inv, override, only, facts
        self.shares: dict[str, tuple[list[K8sObject], _Share]] = {}
        self.wasted = 0  # shares build_map could not use (tests: the pipeline paid off)

    def cluster(self, name: str, objects: Sequence[K8sObject]) -> None:
        """Work out cluster `name`'s share from `objects`, as build_map would if they were all
        it is given: nothing when they are not all that cluster's (one belongs to another
        cluster, or to none), or the cluster is not analysed."""
        cluster = self.inv.cluster(name)
        if cluster is None or (self.only is not None and name not in self.only) or name in self.shares:
            return
        by_cluster, _ = without_duplicates(assign_clusters(self.inv, objects, self.override))
        if set(by_cluster) != {name}:
            return
        objs = by_cluster[name]
        self.shares[name] = (objs, _map_cluster(self.inv, cluster, objs, [], self.facts))

    def take(self, cluster: Cluster, objs: list[K8sObject], shared: list[K8sObject]) -> _Share | None:
        """The share worked out ahead for `cluster`, if it was worked out from exactly `objs`
        and no shared objects; None (and the share dropped) otherwise."""
        got = self.shares.pop(cluster.name, None)
        if got is None:
            return None
        if shared or len(got[0]) != len(objs) or any(a is not b for a, b in zip(got[0], objs, strict=True)):
            self.wasted += 1
            return None
        return got[1]


def _map_clusters(inv: Inventory, todo: list[tuple[Cluster, list[K8sObject]]],
                  shared: list[K8sObject], facts: Sequence[Fact[Any, Any]],
                  ahead: Ahead | None = None) -> list[_Share]:
    """Each cluster's share of the map, in `todo`'s order. The clusters are independent (each
    compiles its own policy set), and their analysis is pure Python on one core: with two CPUs
    and enough to do, a forked child (core.forked) works out about half of them (by objects)
    while this process does the rest (when `PARALLEL`). Should the child fail or not answer in time, this process
    works out its clusters too: the answer never depends on whether it helped."""
    ready = {i: share for i, (c, objs) in enumerate(todo)
             if ahead is not None and (share := ahead.take(c, objs, shared)) is not None}

    def work(which: list[int]) -> dict[int, _Share]:
        return {i: ready[i] if i in ready else _map_cluster(inv, todo[i][0], todo[i][1], shared, facts)
                for i in which}

    everyone = list(range(len(todo)))
    if (not PARALLEL or len(todo) < 2 or (os.cpu_count() or 1) < 2
            or sum(len(o) for _, o in todo) < PARALLEL_FROM):
        got = work(everyone)
        return [got[i] for i in everyone]
    ours, theirs = _halves([0 if i in ready else len(objs) + len(shared) for i, (_, objs) in enumerate(todo)])
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


def _checked(inv: Inventory, analysed: Sequence[str], override: str | None,
             only: Collection[str] | None) -> tuple[str, ...]:
    """The clusters a run checked: those it analysed; when objects were read but none belongs
    to a cluster (OUT/flux/<c>, OUT/argocd/apps), every cluster the run is about, whose jobs
    it was meant to find. A narrowed run that selected nothing checked nothing."""
    if analysed or only is not None:
        return tuple(analysed)
    return tuple(c.name for c in inv.clusters if override in (None, c.name))


def build_map(inv: Inventory, objects: Sequence[K8sObject], override: str | None = None,
              only: Collection[str] | None = None,
              facts: Sequence[Fact[Any, Any]] = (), ahead: Ahead | None = None) -> tuple[list[JobMap], Facts]:
    """The jobs, and every fact of `facts` (analysis.map.facts). `only`: analyse just these
    clusters (check --changed-since; topogate.check.changed). `ahead`: clusters worked out
    during the read, used where they were worked out from what is analysed here (`Ahead`)."""
    by_cluster, duplicates = without_duplicates(assign_clusters(inv, objects, override))
    shared = [o for o in by_cluster.get(None, [])
              if o.kind in (*POLICY_KINDS, "Namespace", *RUNTIME_KINDS, *KUEUE_KINDS)]
    unassigned = tuple((j.object_id, position_of(j.source)) for j in find_jobs(
        (o.obj, o.pos, o.locate) for o in by_cluster.get(None, [])))
    todo = [(c, by_cluster.get(c.name, [])) for c in inv.clusters
            if (by_cluster.get(c.name) or shared) and (only is None or c.name in only)]
    analysed = [c.name for c, _ in todo]
    shares = _map_clusters(inv, todo, shared, facts, ahead)  # in inventory order, whoever worked it out
    whole = WholeMap(inv, objects, unassigned, duplicates, _checked(inv, analysed, override, only),
                     only is not None)
    jobs = sorted((j for share in shares for j in share.jobs), key=lambda j: (j.cluster, j.object))
    return jobs, finished(facts, whole, [share.facts for share in shares])
