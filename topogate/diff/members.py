"""What a diff asks about, per cluster and per tree: the endpoints (members) and the policies.

Members are the union over both trees of
- the replica groups of every training job found (one pod class each; a job's group is the same
  member on both sides even when its labels changed, so a relabelled coordinator is one row);
- the witnesses of every selector of every policy (topogate.analysis.netpolicy.witnesses: the
  subject selectors and the peers of every allow, deny and tiered rule), so a rule that names
  pods no manifest here holds still shows what it opens;
- an unlabelled pod of a namespace nothing manages (where pods no selector names are), and the
  entities world, host, remote-node and kube-apiserver.

The policies are compiled the way `trace` compiles them (PolicySet.from_objects with each
object's positions, so every deciding rule carries its own line), over the objects
topogate.analysis.map.clusters gives the cluster, as `check` assigns them. Jobs, their pod
classes and where their groups can land come from topogate.analysis.map.cluster.ClusterMap.

Network zones: a job group is in the network zone of the zones it can land in (one network
zone: that one; several, or none known: "*", any); a witness is placed as the boundary proof
places it (topogate.analysis.proofs.witness): in the zone of the managed pods that realise it
when they agree, else in the zone its topogate.dev/network-zone label names, else anywhere.
Outside endpoints are in no network zone ("").
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.locate import Located
from topogate.analysis.map.build import ClusterMap
from topogate.analysis.map.clusters import assign_clusters
from topogate.analysis.map.duplicates import without_duplicates
from topogate.analysis.map.pods import pod_class
from topogate.analysis.netpolicy import (
    OPEN_NAMESPACE,
    POLICY_KINDS,
    External,
    Peer,
    PodClass,
    PolicySet,
    SourceRef,
    Witness,
    policy_key,
    witnesses,
)
from topogate.analysis.netpolicy.peers import EndpointMatcher
from topogate.analysis.proofs.members import ANY_ZONE
from topogate.core.labels import NAMESPACE_NAME_LABEL, NETWORK_ZONE_LABEL
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.jobs import RUNTIME_KINDS
from topogate.k8s.kinds import KUEUE_KINDS
from topogate.k8s.objects import K8sObject

ENTITIES = ("world", "host", "remote-node", "kube-apiserver")
OUTSIDE = ""  # the network zone of an outside endpoint
DEFAULT_SA = "default"  # the API server's default: every real pod has a service account


@dataclass(frozen=True)
class Member:
    """One endpoint the diff asks about."""

    key: str  # its identity across the two trees
    shown: str  # as a report names it
    peer: Peer  # as written; namespace labels are each tree's (ClusterSide.peer)
    nz: str  # network zone; ANY_ZONE ("*") may be in any, OUTSIDE ("") outside the cluster
    job: str = ""  # the job's object id (Kind/ns/name) for a job's group
    spec: str | None = None  # the `topogate trace --from/--to` spec naming it, when one can
    extra_ns_labels: tuple[tuple[str, str], ...] = ()  # namespace labels its selector requires
    # which end of a flow it stands for: a witness of an ingress rule's peer is a sender, of an
    # egress rule's peer a receiver (a name selects a destination only), of a subject both
    roles: frozenset[str] = frozenset({"src", "dst"})


@dataclass
class ClusterSide:
    """One cluster in one tree: its policies, as `trace` compiles them, and its job members."""

    cluster: Cluster
    pset: PolicySet
    by_ref: dict[str, K8sObject]
    jobs: dict[str, Member] = field(default_factory=dict)
    job_classes: list[Member] = field(default_factory=list)
    # jobs a group of which fits no node (job id -> the groups): no flow of theirs will happen
    stuck: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def peer(self, m: Member) -> Peer:
        """The member as this tree's evaluator sees it (its namespace's labels from here)."""
        p = self.jobs[m.key].peer if m.key in self.jobs else m.peer
        if not isinstance(p, PodClass):
            return p
        ns = dict(self.pset.namespace_labels(p.namespace))
        ns.update(dict(m.extra_ns_labels))
        return PodClass(p.namespace, p.labels, tuple(sorted(ns.items())), p.ports, p.service_account)

    def policy_at(self, kind: str, namespace: str | None, name: str, direction: str) -> SourceRef | None:
        """Where a policy's rules of `direction` start: what default deny cites."""
        o = self.by_ref.get(policy_key(kind, namespace, name))
        return Located(o)[("spec", direction)] if o is not None else None


def _source(o: K8sObject) -> SourceRef:
    return SourceRef(o.pos.file, o.pos.line, o.pos.column)


def _group_nz(cluster: Cluster, zones: Iterable[str], declared: str | None) -> str:
    nzs = {n.name for z in zones if (n := cluster.network_zone_of(z))}
    if len(nzs) == 1:
        return nzs.pop()
    if not nzs and declared:
        return declared
    return ANY_ZONE


def _units(pset: PolicySet) -> Iterator[Any]:
    sel = pset.selection
    yield from sel.clusterwide
    for ns in sorted(sel.by_namespace):
        yield from sel.by_namespace[ns]


_ROLE = {"ingress": frozenset({"src"}), "egress": frozenset({"dst"})}
_BOTH = frozenset({"src", "dst"})


def selectors(pset: PolicySet) -> Iterator[tuple[frozenset[str], Any]]:
    """Every peer matcher of the cluster's policies, with the ends of a flow what it selects
    can be: the subject selectors (as endpoint matchers: both) and the peers of every rule (an
    ingress peer sends, an egress peer receives), in policy order."""
    for u in _units(pset):
        if u.subject is not None:
            yield _BOTH, EndpointMatcher(u.subject, u.subject_ns)
        for d in ("ingress", "egress"):
            for r in (*u.rules[d], *u.deny_rules[d], *u.tiered[d]):
                for peer in r.peers:
                    yield _ROLE[d], peer


def sides_of(inv: Inventory, objects: Sequence[K8sObject]) -> dict[str, ClusterSide]:
    """Per cluster of the inventory with objects: its side (ClusterSide)."""
    by_cluster, _ = without_duplicates(assign_clusters(inv, objects, None))
    shared = [o for o in by_cluster.get(None, [])
              if o.kind in (*POLICY_KINDS, "Namespace", *RUNTIME_KINDS, *KUEUE_KINDS)]
    out: dict[str, ClusterSide] = {}
    for cluster in inv.clusters:
        objs = by_cluster.get(cluster.name, [])
        if not objs and not shared:
            continue
        cm = ClusterMap(inv, cluster, objs, shared)
        pset = PolicySet.from_objects(((o.obj, _source(o), Located(o)) for o in cm.policy_objs),
                                      cluster_name=cluster.name, agent=cm.pset.agent)
        by_ref = {policy_key(o.kind, o.namespace, o.name): o for o in cm.policy_objs if o.kind in POLICY_KINDS}
        side = ClusterSide(cluster, pset, by_ref)
        for job in cm.jobs:
            plc = cm.placements.get(job.object_id)
            wl = inv.workload_at(cluster.name, job.namespace, job.name, job.kind)
            stuck = tuple(g.name for g in job.groups
                          if plc is not None and (gp_ := plc.group(g.name)) is not None and not gp_.zones)
            if stuck:
                side.stuck[job.object_id] = stuck
            for g in job.groups:
                if g.spec.get("hostNetwork") is True:
                    continue  # no endpoint: the node's identity, asked as the remote-node entity
                gp = plc.group(g.name) if plc is not None else None
                nz = _group_nz(cluster, gp.zones if gp is not None else (), wl.network_zone if wl else None)
                shown = f"{job.namespace}/{job.kind}/{job.name}/{g.name}"
                key = f"{job.object_id}#{g.name}"
                side.jobs[key] = Member(key, shown, pod_class(job.namespace, g.labels, g.spec, pset), nz,
                                        job.object_id, shown)
        out[cluster.name] = side
    return out


def _labels_text(labels: Iterable[tuple[str, str]]) -> str:
    return ",".join(f"{k}={v}" for k, v in labels)


def _external(peer: External, written: str = "") -> Member:
    """An outside endpoint; `written`: an FQDN as the rule writes it (a pattern's witness name
    is one nobody wrote)."""
    spec = peer.entity or peer.cidr or (f"fqdn:{peer.fqdn}" if peer.fqdn else "world")
    if peer.cidr:  # an address of the block stands for it (the witness is one address)
        spec = peer.cidr.split("/")[0] if peer.cidr.endswith(("/32", "/128")) else peer.cidr
    shown = f"fqdn:{written}" if peer.fqdn and written else spec
    return Member(f"ext:{peer}", shown, peer, OUTSIDE, spec=spec)


def _witness(w: Witness, jobs: Sequence[Member]) -> Member:
    if isinstance(w.peer, External):
        return _external(w.peer, w.words if w.peer.fqdn else "")
    pod = w.peer
    sa = pod.service_account or DEFAULT_SA
    extra = tuple(sorted((k, v) for k, v in pod.namespace_labels if k != NAMESPACE_NAME_LABEL))
    want = set(pod.labels)
    zones = {m.nz for m in jobs if isinstance(m.peer, PodClass) and m.peer.namespace == pod.namespace
             and want <= set(m.peer.labels)}
    label_zone = dict(pod.labels).get(NETWORK_ZONE_LABEL)
    nz = label_zone or (zones.pop() if len(zones) == 1 else ANY_ZONE)
    spec = f"{pod.namespace}:{_labels_text(pod.labels)}"
    if pod.namespace == OPEN_NAMESPACE:  # a selector that leaves the namespace open: any other one
        where = f"pods labelled {_labels_text(pod.labels)}" if pod.labels else "any pod"
        shown = f"{where} of a namespace no inventory manages"
    else:
        shown = spec if pod.labels else f"{spec} (unlabelled)"
    shown += (f" [namespace {_labels_text(extra)}]" if extra else "") + (f" [sa {sa}]" if sa != DEFAULT_SA else "")
    key = f"pod:{pod.namespace}:{_labels_text(pod.labels)}:{_labels_text(extra)}:{sa}"
    return Member(key, shown, PodClass(pod.namespace, pod.labels, (), pod.ports, sa), nz,
                  spec=spec if not extra and sa == DEFAULT_SA else None, extra_ns_labels=extra)


def members(base: ClusterSide | None, head: ClusterSide | None) -> list[Member]:
    """The members of one cluster over both trees (module doc), sorted: jobs' groups first."""
    sides = [s for s in (head, base) if s is not None]
    jobs: dict[str, Member] = {}
    for s in sides:  # the head's word on a job first: where its pods are after the change
        for k, m in s.jobs.items():
            jobs.setdefault(k, m)
    job_list = [jobs[k] for k in sorted(jobs)]
    others: dict[str, Member] = {}
    for s in sides:
        for roles, matcher in selectors(s.pset):
            for w in witnesses(matcher):
                m = _witness(w, job_list)
                if isinstance(m.peer, PodClass):
                    roles = _BOTH  # a pod may be a subject too: asked both ways
                if m.key in others:
                    roles = roles | others[m.key].roles
                others[m.key] = dataclasses.replace(others.get(m.key, m), roles=roles)
    unmanaged = _witness(Witness(PodClass(OPEN_NAMESPACE, ()), "any pod"), job_list)
    others.setdefault(unmanaged.key, unmanaged)
    for e in ENTITIES:
        m = _external(External(entity=e))
        others.setdefault(m.key, m)
    return job_list + [others[k] for k in sorted(others)]


__all__ = ["ANY_ZONE", "ClusterSide", "ENTITIES", "Member", "OUTSIDE", "members", "selectors", "sides_of"]
