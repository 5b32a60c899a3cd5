"""Witnesses as proof members: the pods (or outside endpoints) a rule's peer selector describes
(analysis.netpolicy.witnesses), placed in every zone they can run in.

A witness carrying topogate's network-zone label runs only in that network zone (the generated
admission policy holds the label to the pod's zone). A witness that the pods of managed jobs
realise (in their namespace, its labels a subset of theirs) stands for those pods: the zones
the inventory gives them (when they are all of one network zone and one job, as that job's;
else any zone). Any other witness stands for pods the inventory does not manage, which may run
in any zone. Witnesses come from the rules that decide the flow in question (the allow rules of
the pod being proved about), so their number grows with rules, not with pods.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from topogate.analysis.netpolicy import External, NodeMatcher, PodClass, PolicySet, Witness, witnesses
from topogate.analysis.proofs.members import ANY_ZONE, Member
from topogate.core.labels import NETWORK_ZONE_LABEL


class Managed:
    """The managed jobs' members, indexed so a witness finds the pods that realise it in the
    few members that carry one of its labels, never a scan of every job; and the nodes of the
    inventory's pools (their labels, their network zone), which node witnesses stand for."""

    def __init__(self, members: Iterable[Member], nodes: Iterable[tuple[External, str, str]] = ()):
        # (the node as a peer, its network zone, its words): one per pool
        self.nodes = tuple(nodes)
        self.by_label: dict[tuple[str, str, str], list[Member]] = defaultdict(list)
        self.by_namespace: dict[str, list[Member]] = defaultdict(list)
        for m in members:
            if not m.job or m.host_network:
                continue
            self.by_namespace[m.pod.namespace].append(m)
            for k, v in m.pod.labels:
                self.by_label[(m.pod.namespace, k, v)].append(m)

    def realising(self, pod: PodClass) -> list[Member]:
        if not pod.labels:
            return self.by_namespace.get(pod.namespace, [])
        buckets = [self.by_label.get((pod.namespace, k, v), []) for k, v in pod.labels]
        smallest = min(buckets, key=len)
        want = set(pod.labels)
        return [m for m in smallest if want <= set(m.pod.labels)]


def _member(w: Witness, pset: PolicySet, managed: Managed) -> Member:
    if isinstance(w.peer, External):
        return Member(PodClass("", ()), ANY_ZONE, w.words, "", external=w.peer)
    pod = w.peer
    ns_labels = dict(pset.namespace_labels(pod.namespace))
    ns_labels.update(dict(pod.namespace_labels))
    pod = PodClass(pod.namespace, pod.labels, tuple(sorted(ns_labels.items())), pod.ports, pod.service_account)
    realised = managed.realising(pod)
    zones = {m.nz for m in realised}
    jobs = {m.job for m in realised}
    if len(zones) == 1 and len(jobs) == 1:
        first = realised[0]  # that job's pods: named as the job
        return Member(pod, first.nz, first.object, first.group, first.kind, first.pos, first.job)
    zone = dict(pod.labels).get(NETWORK_ZONE_LABEL)
    if zone is not None:
        return Member(pod, zone, w.words, "")
    if len(zones) == 1:
        return Member(pod, zones.pop(), w.words, "")
    return Member(pod, ANY_ZONE, w.words, "")


def _pool_nodes(w: Witness, m: Any, pset: PolicySet, managed: Managed) -> list[Member]:
    """A node witness of fromNodes/toNodes as the pools of the inventory the selector names, each
    in its network zone; [] for any other matcher or when no pool matches. (The remote-node
    entity stays one witness: the hostNetwork pods of each network zone stand for it.)"""
    if not isinstance(m, NodeMatcher) or not isinstance(w.peer, External):
        return []
    return [Member(PodClass("", ()), nz, words, "", external=node)
            for node, nz, words in managed.nodes if pset.matches_peer(m, node)]


def witness_members(pset: PolicySet, pod: PodClass, direction: str, managed: Managed,
                    cache: dict[int, list[Member]] | None = None) -> list[Member]:
    """The witnesses of every allow rule of `pod` in `direction` ("ingress": who may send to it;
    "egress": whom it may send to), as members. `cache` (by matcher) spares the work for the
    matchers many pods share (a namespace-wide rule)."""
    out: list[Member] = []
    for m in pset.allow_matchers(pod, direction):
        got = cache.get(id(m)) if cache is not None else None
        if got is None:
            got = []
            for w in witnesses(m):
                pools = _pool_nodes(w, m, pset, managed)
                got += pools if pools else [_member(w, pset, managed)]
            if cache is not None:
                cache[id(m)] = got
        out.extend(got)
    return out


__all__ = ["Managed", "witness_members"]
