"""One cluster's part of the map: its policies compiled once, its jobs found and placed, and
for each job the JobMap (where each group can land, and the verdict of every flow it needs).

`analysis.map` runs it per cluster and gathers the facts rules read; the boundary proof, the
jobs' ingress and the declared doors ask its PolicySet (`pset`) and rule locator.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from topogate.analysis import placement as placement_mod
from topogate.analysis.kueue import KueueConfig
from topogate.analysis.locate import LazySource, RuleLocator, position_of
from topogate.analysis.map.labels import (
    WELL_KNOWN_ZONE_KEYS,
    LabelLie,
    SpreadSplit,
    label_lies,
    policy_keys,
    spread_splits,
)
from topogate.analysis.map.pods import pod_class
from topogate.analysis.netpolicy import POLICY_KINDS, External, Peer, PodClass, PolicySet, agent_for
from topogate.analysis.placement import JobPlacement
from topogate.analysis.placement.kueue import Concern, KueueJob, analyse, where_in
from topogate.analysis.proofs.flows import job_flows
from topogate.analysis.result import Flow, GroupMap, JobMap, PoolVerdict
from topogate.analysis.scheduling import HOSTNAME_LABEL, PoolFit, selector_matches, unreadable
from topogate.core.position import NOWHERE, Position
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.dra import DEVICE_CLASS, ClaimIndex
from topogate.k8s.jobs import RUNTIME_KINDS, JobGroup, TrainingJob, find_jobs
from topogate.k8s.kinds import KUEUE_KINDS, PLAIN_POD_TEMPLATES
from topogate.k8s.objects import K8sObject
from topogate.k8s.podgroups import POD_GROUP_KIND, read_pod_groups

HOST_NETWORK_PEER = External(entity="remote-node")
EXCLUSIVE_TOPOLOGY = "alpha.jobset.sigs.k8s.io/exclusive-topology"
HYPERNODE = "HyperNode"  # Volcano's network topology (topology.volcano.sh)


def _first_mover(spec: dict[str, Any], labels: dict[str, str], key: str) -> bool:
    """Can a pod of this group be the first of its co-location unit? Only when every required
    podAffinity term it has on `key` (the zone key, or the hostname) selects its own labels (a pod
    that matches its own selector may be placed anywhere it fits when no matching pod exists yet)."""
    return all(selector_matches(t.get("labelSelector"), labels) for t in _affinity_terms(spec, key))


def _strand_risks(job: TrainingJob, plc: JobPlacement, zone_key: str,
                  kueue_held: set[str] | frozenset[str] = frozenset()) -> list[str]:
    """Schedule orders the feasible-placement view hides: the first pod of a self-following unit
    lands in a zone its partners cannot use, and every later pod must join it there. (Not for
    groups placed as a whole: Kueue, a PodGroup's topology or another scheduler picks the unit's
    zone before any of its pods is bound.)"""
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
    # A group whose podAffinity on the hostname selects itself and another group may go anywhere
    # only while none of the selected pods runs: once the other group is bound first, on a node
    # this one cannot use, its pods wait for a pod beside them that never comes. (On the zone key
    # the placement says it, with the room the zone has: follow.leader_risks.)
    for g in job.groups:
        gp = plc.group(g.name)
        if g.name in kueue_held or gp is None or gp.pods <= 0 or not _first_mover(g.spec, g.label_map, HOSTNAME_LABEL):
            continue
        for t in _affinity_terms(g.spec, HOSTNAME_LABEL):
            for h in job.groups:
                hp = plc.group(h.name)
                if (h.name == g.name or h.name in kueue_held or hp is None or hp.pods <= 0
                        or not selector_matches(t.get("labelSelector"), h.label_map)
                        or not _first_mover(h.spec, h.label_map, HOSTNAME_LABEL)):
                    continue
                mine = {(z, p) for z, ps in gp.pools for p in ps}
                for z, ps in hp.pools:
                    for p in ps:
                        risk = (f"{h.name} may be scheduled first on a node of pool {p} in {z}, where {g.name} "
                                "cannot run; everything that follows it waits Pending")
                        if (z, p) not in mine and risk not in risks:
                            risks.append(risk)
    return risks


def _affinity_terms(spec: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The required podAffinity terms of a pod spec on one topology key."""
    terms = ((spec.get("affinity") or {}).get("podAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    return [t for t in terms if isinstance(t, dict) and t.get("topologyKey") == key]



class ClusterMap:
    def __init__(self, inv: Inventory, cluster: Cluster, objects: list[K8sObject],
                 shared_policies: list[K8sObject]):
        self.inv = inv
        self.cluster = cluster
        self.objects = objects
        policy_objs = [o for o in objects + shared_policies if o.kind in (*POLICY_KINDS, "Namespace")]
        self.policy_objs = policy_objs
        self.pset = PolicySet.from_objects(
            ((o.obj, LazySource(o.pos)) for o in policy_objs),
            cluster_name=cluster.name, agent=agent_for(cluster.cilium))
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
        # Pods outside any job that podAffinity may follow: every workload's pod template here.
        workloads = [o.obj for o in objects if o.kind in PLAIN_POD_TEMPLATES]
        # The Workload API's PodGroups: a zone topology holds their pods in one zone.
        pod_groups = read_pod_groups(o.obj for o in objects if o.kind == POD_GROUP_KIND)
        # DRA: which DeviceClass a pool's devices declared by driver belong to.
        self.device_classes = ClaimIndex(o.obj for o in objects + shared_policies if o.kind == DEVICE_CLASS).classes
        hypernodes = [o.obj for o in objects + shared_policies if o.kind == HYPERNODE]
        self.placements = placement_mod.place_all(
            self.jobs, lambda _j: cluster, ns_labels, self.kueue, workloads, pod_groups, self.device_classes,
            hypernodes)
        self.policy_keys = policy_keys(o for o in policy_objs if o.kind in POLICY_KINDS)
        # One copy of each group's pool verdicts: jobs of one shape land on the same pools for
        # the same reasons, and every job's verdicts are kept to the end of the run.
        self._pool_verdicts: dict[tuple[PoolVerdict, ...], tuple[PoolVerdict, ...]] = {}

    def _kueue(self, kueue_objects: list[K8sObject]) -> dict[str, KueueJob]:
        """How Kueue places each job (only jobs it has something to do with)."""
        cfg = KueueConfig(kueue_objects)
        out: dict[str, KueueJob] = {}
        for job in self.jobs:
            o = self.by_ref.get((job.kind, job.namespace, job.name))
            md = o.obj.get("metadata") if o is not None else None
            labels = (md.get("labels") or {}) if isinstance(md, dict) else {}
            kj = analyse(job, labels if isinstance(labels, dict) else {}, cfg, self.cluster.zone_label,
                         where_in(self.by_ref, job), position_of(job.source))
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
        classes = {g.name: pod_class(job.namespace, g.labels, g.spec, self.pset) for g in job.groups}
        groups: list[GroupMap] = []
        for g in job.groups:
            gp = plc.group(g.name)
            pools = tuple(PoolVerdict(f.zone, f.pool, f.fits, "; ".join(f.notes) if f.fits else f.reason,
                                      () if f.fits else f.undeclared_keys)
                          for f in gp.fits) if gp else ()
            pools = self._pool_verdicts.setdefault(pools, pools)
            groups.append(GroupMap(
                g.name, g.pods, g.gpus_per_pod, tuple(gp.zones) if gp else (), pools,
                position_of(g.source), g.labels, bool(gp and gp.splits), g.spec.get("hostNetwork") is True,
                _cause(g, gp.fits) if gp and gp.fits and not any(f.fits for f in gp.fits) else NOWHERE))
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
            tuple(flows), position_of(src),
            self.inventory_pos(job),
            {"needs": cap.requested, "has": cap.zone_gpus if cap.zone else cap.available,
             "zone": cap.zone, "fits": cap.fits, "message": cap.message},
            tuple(dict.fromkeys((*plc.pending_risks,
                                 *_strand_risks(job, plc, self.cluster.zone_label,
                                                kueue_held | plc.placed_whole)))),
            tuple(job.problems),
            kj.summary,
            self._device_notes(job),
            tuple((g, sched, text, self._group_pos(job, g)) for g, sched, text in plc.scheduler_notes),
        )
        if not any(g.pods for g in job.groups):
            # No pod to place: nothing can split (an empty JobSet is not "split across zones ()").
            jm = dataclasses.replace(jm, colocated=True, split_reasons=())
        return self._exclusive_topology(job, jm), classes, plc

    @staticmethod
    def _group_pos(job: TrainingJob, name: str) -> Position:
        g = job.group(name)
        return position_of(g.source if g is not None else job.source)

    def _device_notes(self, job: TrainingJob) -> tuple[tuple[str, Position], ...]:
        """What topogate cannot model of the DRA claims of a job's groups (``k8s.dra``), and a
        DeviceClass they claim that is not among the manifests (only pools naming it count)."""
        out: list[tuple[str, Position]] = []
        for g in job.groups:
            pos = position_of(g.source)
            out += [(f"{g.name}: {p}", pos) for p in g.devices.problems]
            for cls in sorted({r.device_class for r in g.devices.requests} - set(self.device_classes)):
                named = any(d.device_class == cls for z in self.cluster.zones for p in z.pools for d in p.devices)
                if not named:
                    out.append((f"{g.name}: claims devices of DeviceClass {cls}, which is not among the manifests and "
                                "which no pool of the inventory names (devices: deviceClass): no pool offers them, so "
                                "the verdict may be too strict", pos))
            for cls in sorted({r.device_class for r in g.devices.requests} & set(self.device_classes)):
                if unreadable(self.device_classes[cls]):
                    out.append((f"{g.name}: DeviceClass {cls} selects devices with a CEL expression topogate does not "
                                "read: only pools naming it (devices: deviceClass) offer its devices, so the verdict "
                                "may be too strict", pos))
        return tuple(dict.fromkeys(out))

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

    def flows(self, job: TrainingJob, classes: dict[str, Peer], plc: JobPlacement) -> list[Flow]:
        return job_flows(self.pset, self.locate_rule, job, classes, plc)

    def label_lies(self, jm: JobMap) -> list[LabelLie]:
        return label_lies(self.cluster, self.policy_keys, jm)

    def spread_splits(self, job: TrainingJob, jm: JobMap) -> list[SpreadSplit]:
        return spread_splits(self.cluster, self.by_ref.get((job.kind, job.namespace, job.name)), job, jm)


# Where, below a pod template, each constraint that keeps a pod off a node is written.
_FIELD_OF = {"nodeSelector": ("spec", "nodeSelector"), "nodeAffinity": ("spec", "affinity", "nodeAffinity"),
             "nodeName": ("spec", "nodeName"), "taint": ("spec", "tolerations"), "gpus": ("spec", "containers")}


def _cause(g: JobGroup, fits: Sequence[PoolFit]) -> Position:
    """The field of the group's template that removes every pool, when one constraint does (a
    nodeSelector on a label no pool has, a toleration missing everywhere): the line a person
    changes. Lazy: resolved only when a finding is shown there."""
    common = set.intersection(*({(r.constraint, r.key) for r in f.reasons} for f in fits))
    for constraint in _FIELD_OF:
        keys = sorted(k for c, k in common if c == constraint)
        if keys:
            path = _FIELD_OF[constraint] + ((keys[0],) if constraint == "nodeSelector" else ())
            return position_of(g.locate(path))
    return NOWHERE
