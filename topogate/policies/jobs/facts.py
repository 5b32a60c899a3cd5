"""The facts the job rules read besides the jobs (TG105-TG107, TG109, TG110, TG112, TG113),
each worked out from one cluster's share of the map (analysis.map.facts).

TG107, TG112 and TG113 ask the same pods, so they share one boundary proof (and its label
index) per cluster; TG109 and TG110 share which policies select each job's groups.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from topogate.analysis.locate import inventory_source
from topogate.analysis.map.facts import Fact, OneCluster, WholeMap, per_cluster
from topogate.analysis.map.pods import pod_class, pod_template
from topogate.analysis.proofs.boundary import BoundaryProof, Opening
from topogate.analysis.proofs.doors import ClosedDoor, DoorRules, closed_doors, target_members
from topogate.analysis.proofs.ingress import OpenIngress, open_ingress
from topogate.analysis.proofs.members import KUBE_DNS
from topogate.core.position import Position


@dataclass(frozen=True)
class PolicySelects:
    """How many pod classes of the map a policy selects (TG109 reports the ones with none)."""

    policy: str
    selected: int
    pos: Position


def _managed(one: OneCluster) -> set[str]:
    """The namespaces the inventory manages in this cluster."""
    return {w.namespace for w in one.inventory.workloads_of(one.cluster.name)}


def _doors(one: OneCluster) -> DoorRules:
    return DoorRules(one.inventory, one.cluster.name)


def _selecting(one: OneCluster) -> list[list[str]]:
    """Job by job, the policies selecting its groups (a hostNetwork group is no endpoint: no
    policy selects it), once for each group that one selects."""
    out: list[list[str]] = []
    for j in one.jobs:
        host_net = {g.name for g in j.job.groups if g.spec.get("hostNetwork") is True}
        out.append([str(pref) for name, pc in j.classes.items() if name not in host_net
                    for pref in one.map.pset.policies_selecting(pc)])
    return out


def _unprotected(one: OneCluster) -> list[tuple[str, Position]]:
    """A job in a managed namespace that no policy selects is unprotected."""
    managed = one.once(_managed)
    return [(j.map.object, j.map.pos) for j, refs in zip(one.jobs, one.once(_selecting), strict=True)
            if not refs and j.job.namespace in managed and any(g.pods for g in j.job.groups)]


def _selected(one: OneCluster) -> dict[str, int]:
    """How many pod classes each policy selects: the jobs' groups, and pods that are not part
    of a job (they still make a policy non-dangling)."""
    cm = one.map
    selected: dict[str, int] = defaultdict(int)
    for refs in one.once(_selecting):
        for ref in refs:
            selected[ref] += 1
    for o in one.objects:
        tpl = pod_template(o)
        if tpl is not None:
            pc = pod_class(o.namespace or "default", tpl.labels, tpl.spec, cm.pset)
            for pref in cm.pset.policies_selecting(pc):
                selected[str(pref)] += 1
    for pref in cm.pset.policies_selecting(KUBE_DNS):  # kube-dns is a peer of every job
        selected[str(pref)] += 1
    for m in target_members(cm, one.once(_doors).doors):  # a declared door's service is known to exist
        for pref in cm.pset.policies_selecting(m.pod):
            selected[str(pref)] += 1
    return selected


def _policy_selects(one: OneCluster) -> list[tuple[str, int, Position, bool]]:
    """(policy, pod classes selected, where, shared) for every namespaced policy of the cluster.
    A policy the agent refuses (TG125) or whose subject selects no identity (TG126) has its own
    finding, which says why it selects nothing. A shared policy is judged once, over every
    cluster it applies to (`_dangling`)."""
    cm = one.map
    told = {str(r.policy) for r in cm.pset.refused} | {str(u.policy) for u in cm.pset.unselecting if u.subject}
    shared_ids = {id(o) for o in one.shared}
    selected = _selected(one)
    out: list[tuple[str, int, Position, bool]] = []
    for o in cm.policy_objs:
        if o.kind in ("CiliumNetworkPolicy", "NetworkPolicy"):
            ref = f"{o.kind}/{o.namespace or 'default'}/{o.name}"
            if ref in told:
                continue
            if id(o) in shared_ids:
                out.append((ref, selected.get(ref, 0), o.pos, True))
            else:
                out.append((ref, selected.get(ref, 0), inventory_source(one.inventory, one.cluster, o) or o.pos, False))
    return out


def _dangling(whole: WholeMap, shares: tuple[tuple[str, int, Position, bool], ...]) -> tuple[PolicySelects, ...]:
    """Each cluster's own policies in order, then the shared ones with their counts added up
    over the clusters. With jobs whose cluster is unknown a shared policy may well select them,
    and a narrowed run saw it in some clusters only: no verdict on shared policies then."""
    out = [PolicySelects(ref, n, pos) for ref, n, pos, shared in shares if not shared]
    summed: dict[str, tuple[int, Position]] = {}
    for ref, n, pos, shared in shares:
        if shared:
            summed[ref] = (summed.get(ref, (0, pos))[0] + n, pos)
    if not whole.unassigned and not whole.narrowed:
        out.extend(PolicySelects(ref, n, pos) for ref, (n, pos) in sorted(summed.items()))
    return tuple(out)


def _who_gets_in(one: OneCluster) -> tuple[list[Opening], list[OpenIngress], list[ClosedDoor]]:
    """The boundary proof (TG107), the jobs' own ingress (TG112) and the declared doors (TG113)
    of one cluster: all three ask the same pods, so they share the proof's label index."""
    cm, inv, cluster, doors = one.map, one.inventory, one.cluster, one.once(_doors)
    cluster_jobs = [(j.map, j.classes) for j in one.jobs]
    proof = BoundaryProof(cm, cluster, doors)
    openings = proof.run(cluster_jobs, sorted(one.once(_managed)), target_members(cm, doors.doors))
    ingress: list[OpenIngress] = []
    for jm, classes in cluster_jobs:
        wl = inv.workload_at(cluster.name, jm.namespace, jm.name, jm.kind)
        oi = open_ingress(cm, cluster, jm, classes, wl, doors, proof.named_sources, proof.ingress_witnesses)
        if oi is not None:
            ingress.append(oi)
    reps = {nz: r for (nz, _ns), r in sorted(proof.reps.items())}
    return openings, ingress, closed_doors(cm, doors, proof.members, reps)


ZONE_LABEL_LIES = per_cluster("zone-label-lies", lambda one: [
    lie for j in one.jobs for lie in one.map.label_lies(j.map)])
SPREAD_SPLITS = per_cluster("spread-splits", lambda one: [
    s for j in one.jobs for s in one.map.spread_splits(j.job, j.map)])
UNPROTECTED = per_cluster("unprotected", _unprotected)
POLICY_SELECTS: Fact[tuple[str, int, Position, bool], tuple[PolicySelects, ...]] = Fact(
    "policy-selects", (), _policy_selects, _dangling)
BOUNDARY_OPENINGS = per_cluster("boundary-openings", lambda one: one.once(_who_gets_in)[0])
OPEN_INGRESS = per_cluster("open-ingress", lambda one: one.once(_who_gets_in)[1])
CLOSED_DOORS = per_cluster("closed-doors", lambda one: one.once(_who_gets_in)[2])

# The family's facts, in the order each cluster works them out.
FACTS: tuple[Fact[Any, Any], ...] = (
    ZONE_LABEL_LIES, SPREAD_SPLITS, UNPROTECTED, POLICY_SELECTS, BOUNDARY_OPENINGS, OPEN_INGRESS, CLOSED_DOORS)

__all__ = ["BOUNDARY_OPENINGS", "CLOSED_DOORS", "FACTS", "OPEN_INGRESS", "POLICY_SELECTS", "SPREAD_SPLITS",
           "UNPROTECTED", "ZONE_LABEL_LIES"]
