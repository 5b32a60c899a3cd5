"""The single map: for every training job found, where its groups can land and which of the
flows it needs get through. Computed once; rules only read the result.

Cost: each group is one label class (a Cilium identity, a scheduler pod class), so the work per
job is groups x groups flows plus groups x pools fits; nothing iterates over pods or over pairs
of jobs. The boundary probe compares each job with one representative of every other network
zone, which keeps it linear in jobs.

Which cluster a manifest belongs to: see ``analysis.clusters``. Where findings point: see
``analysis.locate``. The boundary probe: ``analysis.boundary``.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis import placement as placement_mod
from topogate.analysis.boundary import BoundaryProof, Opening
from topogate.analysis.clusters import assign_clusters
from topogate.analysis.doors import ClosedDoor, DoorRules, closed_doors, target_members
from topogate.analysis.ingress import OpenIngress, open_ingress
from topogate.analysis.jobs import RUNTIME_KINDS, TrainingJob, find_jobs
from topogate.analysis.kueue import KINDS as KUEUE_KINDS
from topogate.analysis.kueue import KueueConfig
from topogate.analysis.locate import RuleLocator, _LazySource, _pos, inventory_source, side_reason
from topogate.analysis.netpolicy import External, Peer, PodClass, PolicySet, Verdict
from topogate.analysis.placement import JobPlacement
from topogate.analysis.placement.kueue import Concern, KueueJob, analyse, where_in
from topogate.analysis.pods import _pod_class, _pod_template
from topogate.analysis.result import Flow, GroupMap, JobMap, PoolVerdict
from topogate.analysis.scheduling import selector_matches
from topogate.inventory.model import NETWORK_ZONE_LABEL, NOWHERE, Cluster, Inventory, Position
from topogate.kinds import KINDS
from topogate.manifests import K8sObject

POLICY_KINDS = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy")
KUBE_DNS = PodClass("kube-system", (("k8s-app", "kube-dns"),))
HOST_NETWORK_PEER = External(entity="remote-node")
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
WELL_KNOWN_ZONE_KEYS = ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone")


@dataclass(frozen=True)
class LabelLie:
    object: str
    group: str
    key: str
    value: str
    zones: tuple[str, ...]  # where the group can really land
    policies: tuple[str, ...]  # policies that select on the key
    pos: Position
    kind: str = "zone"  # "zone" or "network-zone"


@dataclass(frozen=True)
class SpreadSplit:
    object: str
    group: str
    key: str
    max_skew: int
    pods: int
    pos: Position
    effect: str = "splits"  # today: "splits" the group, "strands" pods Pending, or "latent"


@dataclass
class MapFacts:
    policies: dict[str, PolicySet] = field(default_factory=dict)
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
    kueue_concerns: tuple[Concern, ...] = ()


def _denied_tcp(pset: PolicySet, src: Peer, dst: Peer) -> tuple[int, Verdict] | None:
    """The first TCP port class between two groups that is denied: NCCL needs every port.

    Port 0 stands for "every port" when the whole range is denied."""
    for r in pset.port_classes(src, dst, ("TCP",)):
        if not r.verdict.allowed:
            return (0 if (r.start, r.end) == (1, 65535) else r.start), r.verdict
    return None


def _first_mover(spec: dict[str, Any], labels: dict[str, str], zone_key: str) -> bool:
    """Can a pod of this group be the first of its co-location unit? Only when every required
    zone-key podAffinity term it has selects its own labels (a pod that matches its own selector
    may be placed anywhere it fits when no matching pod exists yet)."""
    terms = ((spec.get("affinity") or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    zone_terms = [t for t in terms if isinstance(t, dict) and t.get("topologyKey") == zone_key]
    return all(selector_matches(t.get("labelSelector"), labels) for t in zone_terms)


def _strand_risks(job: TrainingJob, plc: JobPlacement, zone_key: str,
                  kueue_held: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Schedule orders the feasible-placement view hides: the first pod of a self-following unit
    lands in a zone its partners cannot use, and every later pod must join it there. (Not for
    groups Kueue admits: it picks the unit's zone before any of its pods exists.)"""
    risks: list[str] = []
    for g in job.groups:
        gp = plc.group(g.name)
        if g.name in kueue_held or gp is None or gp.pods <= 0 or gp.unit < 0 or not _first_mover(g.spec, g.label_map, zone_key):
            continue
        mates = [m for h in job.groups if h.name != g.name
                 and (m := plc.group(h.name)) is not None and m.unit == gp.unit and m.pods > 0]
        for z in gp.node_zones:
            stuck = [m.name for m in mates if z not in m.node_zones]
            if stuck:
                risks.append(f"{g.name} may be scheduled first in {z}, where {', '.join(stuck)} cannot "
                             "run; everything that follows it waits Pending")
    return risks


def _cite(v: Verdict, locate_rule: RuleLocator) -> str:
    egress = side_reason(v.egress, "egress", locate_rule)
    ingress = side_reason(v.ingress, "ingress", locate_rule)
    if not v.egress.allowed:
        return f"egress: {egress}"
    if not v.ingress.allowed:
        return f"ingress: {ingress}"
    return f"egress: {egress}; ingress: {ingress}"


def _flow(src: str, dst: str, zpair: tuple[str, str], port: int, proto: str, purpose: str,
          v: Verdict, locate_rule: RuleLocator) -> Flow:
    if not v.egress.allowed:
        side, direction = v.egress, "egress"
    elif not v.ingress.allowed:
        side, direction = v.ingress, "ingress"
    else:  # an allowed flow is decided by the receiver's allow rule when it has one
        side, direction = (v.ingress, "ingress") if v.ingress.decided_by else (v.egress, "egress")
    by, at = "", NOWHERE
    if side.decided_by is not None:
        by, at = str(side.decided_by.policy), locate_rule(side.decided_by)
    elif not side.allowed and side.enforced_by:  # default deny: the policy that switched it on
        by, at = str(side.enforced_by[0]), locate_rule.section(side.enforced_by[0], direction)
    # The sentence is written by `_cite` when read: v.reason would find every rule's line now.
    return Flow(src, dst, zpair[0], zpair[1], port, proto, purpose, v.allowed, "", by, at,
                functools.partial(_cite, v, locate_rule))


def _selector_keys(obj: Any, out: set[str]) -> None:
    """Every label key any selector in a policy names (prefixes stripped)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "matchLabels" and isinstance(v, dict):
                out.update(_strip(str(x)) for x in v)
            elif k == "matchExpressions" and isinstance(v, list):
                out.update(_strip(str(e.get("key"))) for e in v if isinstance(e, dict))
            else:
                _selector_keys(v, out)
    elif isinstance(obj, list):
        for x in obj:
            _selector_keys(x, out)


def _strip(key: str) -> str:
    for prefix in ("k8s:", "any:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


class _ClusterMap:
    def __init__(self, inv: Inventory, cluster: Cluster, objects: list[K8sObject],
                 shared_policies: list[K8sObject]):
        self.inv = inv
        self.cluster = cluster
        self.objects = objects
        policy_objs = [o for o in objects + shared_policies if o.kind in (*POLICY_KINDS, "Namespace")]
        self.policy_objs = policy_objs
        self.pset = PolicySet.from_objects(
            ((o.obj, _LazySource(o.pos)) for o in policy_objs),
            cluster_name=cluster.name)
        self.by_ref = {(o.kind, o.namespace or "default", o.name): o for o in objects}
        self.locate_rule = RuleLocator((o for o in policy_objs if o.kind in POLICY_KINDS), inv, cluster)
        # A runtime no cluster claims (installed cluster-wide by the platform team, passed from
        # outside clusters/<name>/) serves the TrainJobs of every cluster, like a shared policy.
        runtimes = [o for o in shared_policies if o.kind in RUNTIME_KINDS]
        self.jobs = find_jobs((o.obj, o.pos, o.locate) for o in objects + runtimes)
        ns_labels = {o.name: {str(k): str(v) for k, v in ((o.obj.get("metadata") or {}).get("labels")
                                                           or {}).items()}
                     for o in policy_objs if o.kind == "Namespace"}
        self.kueue = self._kueue([o for o in objects + shared_policies if o.kind in KUEUE_KINDS])
        self.placements = placement_mod.place_all(
            self.jobs, lambda _j: cluster, ns_labels, self.kueue)
        self.zone_names = {z.name for z in cluster.zones}
        self.policy_keys: dict[str, set[str]] = {}
        for o in policy_objs:
            if o.kind in POLICY_KINDS:
                keys: set[str] = set()
                _selector_keys(o.obj.get("spec") or {}, keys)
                _selector_keys(o.obj.get("specs") or [], keys)
                for k in keys:
                    self.policy_keys.setdefault(k, set()).add(o.ref)

    def _kueue(self, kueue_objects: list[K8sObject]) -> dict[str, KueueJob]:
        """How Kueue places each job (only jobs it has something to do with)."""
        cfg = KueueConfig(kueue_objects)
        out: dict[str, KueueJob] = {}
        for job in self.jobs:
            o = self.by_ref.get((job.kind, job.namespace, job.name))
            md = o.obj.get("metadata") if o is not None else None
            labels = (md.get("labels") or {}) if isinstance(md, dict) else {}
            kj = analyse(job, labels if isinstance(labels, dict) else {}, cfg, self.cluster.zone_label,
                         where_in(self.by_ref, job), _pos(job.source))
            if kj is not None:
                out[job.object_id] = kj
        return out

    def kueue_concerns(self, jm: JobMap) -> list[Concern]:
        kj = self.kueue.get(jm.object)
        if kj is None:
            return []
        return [c for c in kj.concerns if not (c.needs_colocation and jm.colocated)]

    def inventory_pos(self, job: TrainingJob) -> Position:
        w = self.inv.workload_of(job.kind, job.namespace, job.name)
        return w.pos if w is not None else NOWHERE

    def job_map(self, job: TrainingJob) -> tuple[JobMap, dict[str, PodClass], JobPlacement]:
        plc = self.placements[job.object_id]
        classes = {g.name: _pod_class(job.namespace, g.labels, g.spec, self.pset) for g in job.groups}
        groups: list[GroupMap] = []
        for g in job.groups:
            gp = plc.group(g.name)
            pools = tuple(PoolVerdict(f.zone, f.pool, f.fits, "; ".join(f.notes) if f.fits else f.reason)
                          for f in gp.fits) if gp else ()
            groups.append(GroupMap(
                g.name, g.pods, g.gpus_per_pod, tuple(gp.zones) if gp else (), pools,
                _pos(g.source), g.labels, bool(gp and gp.splits)))
        # A hostNetwork pod is no Cilium endpoint: it has the node's identity (remote-node seen
        # from its peers' nodes), so no CNP selects it and peers reach it as that entity.
        peers: dict[str, Peer] = {g.name: HOST_NETWORK_PEER if g.spec.get("hostNetwork") is True else classes[g.name]
                                  for g in job.groups}
        flows = self.flows(job, peers, plc)
        src = job.source
        cap = plc.capacity
        kj = self.kueue.get(job.object_id) or KueueJob()
        kueue_held = {n for u in kj.units for n in u}
        split = tuple(plc.may_split_reasons) + ((kj.split_note,) if kj.split_note and not plc.colocated else ())
        jm = JobMap(
            job.object_id, self.cluster.name, job.kind, job.namespace, job.name, tuple(groups),
            plc.colocated, plc.schedulable and not kj.blocked, split,
            tuple(plc.unschedulable_reasons) + ((kj.blocked,) if kj.blocked else ()),
            tuple(flows), _pos(src),
            self.inventory_pos(job),
            {"needs": cap.requested, "has": cap.zone_gpus if cap.zone else cap.available,
             "zone": cap.zone, "fits": cap.fits, "message": cap.message},
            tuple(dict.fromkeys((*plc.pending_risks,
                                 *_strand_risks(job, plc, self.cluster.zone_label, kueue_held)))),
            tuple(job.problems),
            kj.summary,
        )
        if not any(g.pods for g in job.groups):
            # No pod to place: nothing can split (an empty JobSet is not "split across zones ()").
            jm = dataclasses.replace(jm, colocated=True, split_reasons=())
        return self._exclusive_topology(job, jm), classes, plc

    def _exclusive_topology(self, job: TrainingJob, jm: JobMap) -> JobMap:
        """JobSet's exclusive-topology annotation on the zone key gives every child Job a zone
        of its own: more than one child Job means the JobSet spans zones by design."""
        if job.kind != "JobSet":
            return jm
        o = self.by_ref.get((job.kind, job.namespace, job.name))
        md = o.obj.get("metadata") if o is not None else None
        ann = (md.get("annotations") or {}) if isinstance(md, dict) else {}
        if ann.get(EXCLUSIVE_TOPOLOGY) not in {self.cluster.zone_label, *WELL_KNOWN_ZONE_KEYS}:
            return jm
        spec = o.obj.get("spec") if o is not None else None
        rjobs = spec.get("replicatedJobs") if isinstance(spec, dict) else None
        children = sum(int(r.get("replicas", 1) or 1) for r in rjobs or [] if isinstance(r, dict))
        if children < 2:
            return jm
        zones = {z for g in jm.groups for z in g.zones}
        why = (f"{EXCLUSIVE_TOPOLOGY} on the zone key gives each of its {children} child Jobs a "
               f"zone of its own")
        unsched = jm.unschedulable_reasons
        schedulable = jm.schedulable
        if len(zones) < children:
            schedulable = False
            unsched = (*unsched, f"{why}, but its pods can use only {len(zones)} zone(s) "
                                 f"({', '.join(sorted(zones)) or 'none'}): the other child Jobs stay Pending")
        return dataclasses.replace(jm, colocated=False, schedulable=schedulable,
                                   split_reasons=(*jm.split_reasons, why), unschedulable_reasons=unsched)

    def _pairs(self, plc: JobPlacement, a: str, b: str) -> list[tuple[str, str]]:
        pairs = sorted(plc.zone_pairs(a, b))
        return pairs or [("", "")]

    def flows(self, job: TrainingJob, classes: dict[str, Peer], plc: JobPlacement) -> list[Flow]:
        info = KINDS.get(job.kind)
        members = [g for g in job.groups
                   if not (job.kind == "TrainJob" and g.name.endswith("initializer"))]
        out: list[Flow] = []
        for a in members:
            for b in members:
                if a.name == b.name and a.pods < 2:
                    continue
                denied = _denied_tcp(self.pset, classes[a.name], classes[b.name])
                for zp in self._pairs(plc, a.name, b.name):
                    if denied is None:
                        v = self.pset.evaluate(classes[a.name], classes[b.name], 1024, "TCP")
                        out.append(_flow(a.name, b.name, zp, 0, "TCP", "nccl", v, self.locate_rule))
                    else:
                        out.append(_flow(a.name, b.name, zp, denied[0], "TCP", "nccl", denied[1],
                                         self.locate_rule))
        if info and info.coordinator and job.group(info.coordinator):
            if info.rendezvous_port:  # every other group reaches the coordinator's rendezvous
                out += self._coordinator_flows(info.coordinator, members, classes, plc,
                                               info.rendezvous_port, "rendezvous", inbound=True)
            if info.ssh_from_coordinator:  # the MPI launcher reaches every worker over SSH
                out += self._coordinator_flows(info.coordinator, members, classes, plc, 22, "ssh",
                                               inbound=False)
        for g in job.groups:
            gp = plc.group(g.name)
            zones = tuple(gp.zones) if gp and gp.zones else ("",)
            for proto in ("UDP", "TCP"):
                v = self.pset.evaluate(classes[g.name], KUBE_DNS, 53, proto)
                for z in zones:
                    out.append(_flow(g.name, "kube-dns", (z, ""), 53, proto, "dns", v, self.locate_rule))
        return out

    def _coordinator_flows(self, coord: str, members: Sequence[Any], classes: dict[str, Peer],
                           plc: JobPlacement, port: int, purpose: str, inbound: bool) -> list[Flow]:
        out: list[Flow] = []
        for g in members:
            if g.name == coord:
                continue
            src, dst = (g.name, coord) if inbound else (coord, g.name)
            v = self.pset.evaluate(classes[src], classes[dst], port, "TCP")
            for zp in self._pairs(plc, src, dst):
                out.append(_flow(src, dst, zp, port, "TCP", purpose, v, self.locate_rule))
        return out

    def label_lies(self, jm: JobMap) -> list[LabelLie]:
        out: list[LabelLie] = []
        zone_keys = {self.cluster.zone_label, *WELL_KNOWN_ZONE_KEYS}
        for g in jm.groups:
            for key, value in g.labels:
                used_by = tuple(sorted(self.policy_keys.get(key, ())))
                if not used_by or not g.zones:
                    continue
                if key == NETWORK_ZONE_LABEL:
                    nz = self.cluster.network_zone(value)
                    allowed = set(nz.zones) if nz else set()
                    if not set(g.zones) <= allowed:
                        out.append(LabelLie(jm.object, g.name, key, value, g.zones, used_by, g.pos,
                                            "network-zone"))
                elif key in zone_keys or value in self.zone_names:
                    if set(g.zones) != {value}:
                        out.append(LabelLie(jm.object, g.name, key, value, g.zones, used_by, g.pos))
        return out

    def spread_splits(self, job: TrainingJob, jm: JobMap) -> list[SpreadSplit]:
        out: list[SpreadSplit] = []
        zone_keys = {self.cluster.zone_label, *WELL_KNOWN_ZONE_KEYS}
        obj = self.by_ref.get((job.kind, job.namespace, job.name))
        for g in job.groups:
            for i, c in enumerate(g.spec.get("topologySpreadConstraints") or []):
                if (isinstance(c, dict) and c.get("topologyKey") in zone_keys
                        and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"):
                    path = (*g.template_path, "spec", "topologySpreadConstraints", i)
                    pos = obj.locate(path) if obj is not None and g.template_path else _pos(g.source)
                    gm = next((x for x in jm.groups if x.name == g.name), None)
                    out.append(SpreadSplit(job.object_id, g.name, str(c.get("topologyKey")),
                                           int(c.get("maxSkew", 1) or 1), g.pods, pos,
                                           _spread_effect(jm, gm)))
        return out


def _spread_effect(jm: JobMap, gm: GroupMap | None) -> str:
    if gm is not None and (gm.splits or len(gm.zones) > 1):
        return "splits"
    if not jm.schedulable and any("spread" in r for r in jm.unschedulable_reasons):
        return "strands"
    return "latent"


def _who_gets_in(cm: _ClusterMap, inv: Inventory, cluster: Cluster,
                 cluster_jobs: list[tuple[JobMap, dict[str, PodClass]]], managed_ns: set[str],
                 doors: DoorRules) -> tuple[list[Opening], list[OpenIngress], list[ClosedDoor]]:
    """The boundary proof (TG107), the jobs' own ingress (TG112) and the declared doors (TG113)
    of one cluster: all three ask the same pods, so they share the proof's label index."""
    proof = BoundaryProof(cm, cluster, doors)
    openings = proof.run(cluster_jobs, sorted(managed_ns), target_members(cm, doors.doors))
    ingress: list[OpenIngress] = []
    for jm, classes in cluster_jobs:
        wl = inv.workload_at(cluster.name, jm.namespace, jm.name, jm.kind)
        oi = open_ingress(cm, cluster, jm, classes, wl, doors, proof.named_sources)
        if oi is not None:
            ingress.append(oi)
    reps = {nz: r for (nz, _ns), r in sorted(proof.reps.items())}
    return openings, ingress, closed_doors(cm, doors, proof.members, reps)


def build_map(inv: Inventory, objects: Sequence[K8sObject],
              override: str | None = None) -> tuple[list[JobMap], MapFacts]:
    by_cluster = assign_clusters(inv, objects, override)
    shared = [o for o in by_cluster.get(None, [])
              if o.kind in (*POLICY_KINDS, "Namespace", *RUNTIME_KINDS, *KUEUE_KINDS)]
    facts = MapFacts()
    jobs_out: list[JobMap] = []
    lies: list[LabelLie] = []
    spreads: list[SpreadSplit] = []
    openings: list[Opening] = []
    ingress: list[OpenIngress] = []
    shut: list[ClosedDoor] = []
    selects: list[tuple[str, int, Any]] = []
    shared_selects: dict[str, tuple[int, Position]] = {}
    unprotected: list[tuple[str, Position]] = []
    not_modelled: dict[tuple[str, str, str, Position], None] = {}
    kueue_concerns: list[Concern] = []
    unassigned = [(j.object_id, _pos(j.source)) for j in find_jobs(
        (o.obj, o.pos, o.locate) for o in by_cluster.get(None, []))]
    for cluster in inv.clusters:
        objs = by_cluster.get(cluster.name, [])
        if not objs and not shared:
            continue
        cm = _ClusterMap(inv, cluster, objs, shared)
        facts.policies[cluster.name] = cm.pset
        for n in cm.pset.not_modelled:  # a shared policy is compiled once per cluster: keep one
            pobj = cm.locate_rule.by_ref.get(str(n.policy))
            where = pobj.locate(n.path) if pobj is not None else _pos(n.policy.source)
            not_modelled[(str(n.policy), n.construct, n.message, where)] = None
        managed_ns = {w.namespace for w in inv.workloads_of(cluster.name)}
        selected: dict[str, int] = defaultdict(int)
        doors = DoorRules(inv, cluster.name)
        cluster_jobs: list[tuple[JobMap, dict[str, PodClass]]] = []
        for job in cm.jobs:
            jm, classes, _ = cm.job_map(job)
            jobs_out.append(jm)
            cluster_jobs.append((jm, classes))
            lies.extend(cm.label_lies(jm))
            spreads.extend(cm.spread_splits(job, jm))
            kueue_concerns.extend(cm.kueue_concerns(jm))
            any_policy = False
            host_net = {g.name for g in job.groups if g.spec.get("hostNetwork") is True}
            for name, pc in classes.items():
                if name in host_net:  # not an endpoint: no policy selects it
                    continue
                for pref in cm.pset.policies_selecting(pc):
                    selected[str(pref)] += 1
                    any_policy = True
            if not any_policy and job.namespace in managed_ns and any(g.pods for g in job.groups):
                unprotected.append((jm.object, jm.pos))
        # Other pods (not part of a job) still make a policy non-dangling.
        for o in objs:
            tpl = _pod_template(o)
            if tpl is not None:
                labels = (tpl.get("metadata") or {}).get("labels") or {}
                pc = _pod_class(o.namespace or "default", ((str(k), str(v)) for k, v in labels.items()),
                                tpl.get("spec") or {}, cm.pset)
                for pref in cm.pset.policies_selecting(pc):
                    selected[str(pref)] += 1
        for pref in cm.pset.policies_selecting(KUBE_DNS):  # kube-dns is a peer of every job
            selected[str(pref)] += 1
        for m in target_members(cm, doors.doors):  # a declared door's service is known to exist
            for pref in cm.pset.policies_selecting(m.pod):
                selected[str(pref)] += 1
        shared_ids = {id(o) for o in shared}
        for o in cm.policy_objs:
            if o.kind in ("CiliumNetworkPolicy", "NetworkPolicy"):
                ref = f"{o.kind}/{o.namespace or 'default'}/{o.name}"
                if id(o) in shared_ids:  # judged once, over every cluster it applies to
                    shared_selects[ref] = (shared_selects.get(ref, (0, o.pos))[0]
                                           + selected.get(ref, 0), o.pos)
                else:
                    selects.append((ref, selected.get(ref, 0),
                                    inventory_source(inv, cluster, o) or o.pos))
        got_open, got_in, got_shut = _who_gets_in(cm, inv, cluster, cluster_jobs, managed_ns, doors)
        openings += got_open
        ingress += got_in
        shut += got_shut
    facts.zone_label_lies = tuple(lies)
    facts.spread_splits = tuple(spreads)
    facts.boundary_openings = tuple(openings)
    facts.open_ingress = tuple(ingress)
    facts.closed_doors = tuple(shut)
    # With jobs whose cluster is unknown, a shared policy may well select them: no verdict.
    if not unassigned:
        selects.extend((ref, n, pos) for ref, (n, pos) in sorted(shared_selects.items()))
    facts.policy_selects = tuple(selects)
    facts.unprotected = tuple(unprotected)
    facts.unassigned = tuple(unassigned)
    facts.not_modelled = tuple(not_modelled)
    facts.kueue_concerns = tuple(dict.fromkeys(kueue_concerns))
    return sorted(jobs_out, key=lambda j: (j.cluster, j.object)), facts


