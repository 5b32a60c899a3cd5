"""`check --live`: what runs now. Jobs split across zones, jobs pending because no node fits,
and network policies in the cluster that differ from the generated tree.

Pods are tied to their job by the controller owner reference (PyTorchJob, MPIJob pods), else by
the labels the operators stamp (Kubeflow `training.kubeflow.org/job-name`, JobSet
`jobset.sigs.k8s.io/jobset-name`, which a TrainJob's JobSet also carries) or topogate's own
`topogate.dev/workload`; to a zone through `spec.nodeName` and the node's zone label.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.result import GroupMap, JobMap
from topogate.core.labels import REPLICA_GROUP_LABEL, WORKLOAD_LABEL
from topogate.core.layout import CLUSTER_DIRS
from topogate.core.position import Position
from topogate.generators import render_files
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.kinds import pod_gpus
from topogate.live.snapshot import JOB_KINDS, Snapshot
from topogate.policies.context import LiveFact
from topogate.policies.live.facts import DIFFERS, PENDING, SPLIT, UNMANAGED

SHOWN_PODS = 20
# The zone of a pod whose node has no zone label (or is not among the nodes listed): a zone of
# its own, never "none", so two workers moved to such nodes make the job split, not colocated.
UNKNOWN_ZONE = "(unknown zone)"
_OPERATORS = {"pytorchjob-controller": "PyTorchJob", "mpi-operator": "MPIJob",
              "mpijob-controller": "MPIJob"}
_GROUP_LABELS = ("training.kubeflow.org/replica-type", "training.kubeflow.org/job-role",
                 "jobset.sigs.k8s.io/replicatedjob-name", REPLICA_GROUP_LABEL)
_IGNORED_POLICY_KEYS = ("status",)


@dataclass(frozen=True)
class LivePod:
    name: str
    group: str
    node: str  # "" while not scheduled
    zone: str  # "" when not scheduled; UNKNOWN_ZONE on a node without the zone label or not listed
    phase: str
    unschedulable: str  # the scheduler's message when PodScheduled=False/Unschedulable
    gpus: int = 0  # GPUs its containers ask for

    @property
    def running(self) -> bool:
        return bool(self.node) and self.phase not in ("Succeeded", "Failed")


@dataclass(frozen=True)
class LiveJob:
    kind: str
    namespace: str
    name: str
    pods: tuple[LivePod, ...]

    @property
    def object(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    def as_map(self, cluster: str, pos: Position) -> JobMap:
        """The job in the reporters' shape: a group's zones are where its pods run now."""
        groups = []
        for g in sorted({p.group for p in self.pods}):
            pods = [p for p in self.pods if p.group == g]
            zones = tuple(sorted({p.zone for p in pods if p.running and p.zone}))
            groups.append(GroupMap(g or "-", len(pods), max((p.gpus for p in pods), default=0), zones,
                                   splits=len(zones) > 1 or UNKNOWN_ZONE in zones))
        used = {p.zone for p in self.pods if p.running and p.zone}
        return JobMap(self.object, cluster, self.kind, self.namespace, self.name, tuple(groups),
                      colocated=len(used) <= 1 and UNKNOWN_ZONE not in used,
                      schedulable=not any(p.unschedulable for p in self.pods), pos=pos)


def _md(o: Mapping[str, Any]) -> Mapping[str, Any]:
    md = o.get("metadata")
    return md if isinstance(md, dict) else {}


def job_key(pod: Mapping[str, Any], known: Mapping[tuple[str, str], str],
            inv: Inventory) -> tuple[str, str, str] | None:
    """(kind, namespace, name) of the training job a pod belongs to, or None."""
    md = _md(pod)
    ns = str(md.get("namespace", ""))
    for ref in md.get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("kind") in JOB_KINDS:
            return str(ref["kind"]), ns, str(ref.get("name", ""))
    labels = md.get("labels") or {}
    inv_kind = {(w.namespace, w.name): w.kind for w in inv.workloads}
    name = labels.get("training.kubeflow.org/job-name")
    if name:
        kind = (known.get((ns, name)) or _OPERATORS.get(labels.get("training.kubeflow.org/operator-name", ""))
                or inv_kind.get((ns, name)) or "PyTorchJob")
        return kind, ns, str(name)
    name = labels.get("jobset.sigs.k8s.io/jobset-name")
    if name:
        kind = known.get((ns, name)) or inv_kind.get((ns, name)) or "JobSet"
        return ("TrainJob" if kind == "TrainJob" else "JobSet"), ns, str(name)
    name = labels.get(WORKLOAD_LABEL)
    if name and (ns, name) in inv_kind:
        return inv_kind[(ns, name)], ns, str(name)
    return None


def _gpus(pod: Mapping[str, Any]) -> int:
    spec = pod.get("spec")
    return pod_gpus(spec) if isinstance(spec, dict) else 0


def _unschedulable(pod: Mapping[str, Any]) -> str:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if (isinstance(c, dict) and c.get("type") == "PodScheduled" and c.get("status") == "False"
                and c.get("reason") == "Unschedulable"):
            return " ".join(str(c.get("message") or "no reason given").split())
    return ""


def live_jobs(snapshot: Snapshot, inv: Inventory, zone_of: Mapping[str, str]) -> tuple[LiveJob, ...]:
    known = {(str(_md(j).get("namespace", "")), str(_md(j).get("name", ""))): str(j.get("kind"))
             for j in snapshot.jobs}
    pods: dict[tuple[str, str, str], list[LivePod]] = defaultdict(list)
    for p in snapshot.pods:
        key = job_key(p, known, inv)
        if key is None:
            continue
        labels = _md(p).get("labels") or {}
        group = next((str(labels[k]) for k in _GROUP_LABELS if labels.get(k)), "")
        node = str((p.get("spec") or {}).get("nodeName") or "")
        phase = str((p.get("status") or {}).get("phase") or "")
        zone = (zone_of.get(node) or UNKNOWN_ZONE) if node else ""
        pods[key].append(LivePod(str(_md(p).get("name", "")), group, node, zone, phase,
                                 _unschedulable(p) if not node else "", _gpus(p)))
    for (ns, name), kind in known.items():  # a job with no pod yet is still a job found
        pods.setdefault((kind, ns, name), [])
    return tuple(LiveJob(k, ns, n, tuple(sorted(ps, key=lambda p: p.name)))
                 for (k, ns, n), ps in sorted(pods.items()))


Locate = Callable[[str, str, str], Position]  # (kind, namespace, name) -> where the snapshot holds it


def where(job: LiveJob, inv: Inventory, locate: Locate) -> Position:
    """The inventory entry of a job it describes, else the job's own place in the snapshot."""
    w = inv.workload(job.object)
    return w.pos if w is not None else locate(job.kind, job.namespace, job.name)


def job_facts(jobs: Iterable[LiveJob], inv: Inventory, locate: Locate,
              zone_label: str = "the zone label") -> list[LiveFact]:
    facts: list[LiveFact] = []
    for job in jobs:
        running = [p for p in job.pods if p.running]
        zones = sorted({p.zone for p in running if p.zone})
        if len(zones) > 1 or UNKNOWN_ZONE in zones:
            counts = ", ".join(f"{z}: {sum(1 for p in running if p.zone == z)}" for z in zones)
            if UNKNOWN_ZONE in zones:
                bare = sorted({p.node for p in running if p.zone == UNKNOWN_ZONE})
                head = (f"{job.object} cannot be shown to run in one zone ({counts}): node(s) "
                        f"{', '.join(bare[:SHOWN_PODS])} have no {zone_label} label, or are not "
                        "among the nodes listed; label them or move the pods; pod -> node -> zone:")
            else:
                head = f"{job.object} runs split across {len(zones)} zones now ({counts}); pod -> node -> zone:"
            lines = [head]
            lines += [f"{p.group or '-'} {p.name} -> {p.node} -> {p.zone}" for p in running[:SHOWN_PODS]]
            if len(running) > SHOWN_PODS:
                lines.append(f"+{len(running) - SHOWN_PODS} more pods")
            facts.append(LiveFact(SPLIT, job.object, "\n".join(lines), where(job, inv, locate)))
        stuck = [p for p in job.pods if p.unschedulable]
        if stuck:
            lines = [f"{job.object} has {len(stuck)} pod(s) pending because no node fits:"]
            lines += [f"{p.group or '-'} {p.name}: {p.unschedulable}" for p in stuck[:SHOWN_PODS]]
            facts.append(LiveFact(PENDING, job.object, "\n".join(lines), where(job, inv, locate)))
    return facts


@dataclass(frozen=True)
class Generated:
    key: tuple[str, str, str]  # kind, namespace, name
    path: str
    doc: Mapping[str, Any]
    pos: Position


def generated_policies(inv: Inventory, cluster: Cluster, policy_kinds: Sequence[str]) -> list[Generated]:
    """The policies `generate` writes for this cluster, each with its inventory source line."""

    out: list[Generated] = []
    for f in render_files(inv, "/nonexistent/topogate-live"):
        if not f.path.startswith(tuple(f"{d}/{cluster.name}/" for d in CLUSTER_DIRS)):
            continue
        for d in f.docs:
            if isinstance(d, dict) and d.get("kind") in policy_kinds:
                md = _md(d)
                out.append(Generated((str(d["kind"]), str(md.get("namespace", "")), str(md.get("name", ""))),
                                     f.path, d, f.source))
    return out


def first_difference(want: Any, have: Any, path: str = "") -> str | None:
    """The first path where two JSON values differ (keys in sorted order), or None."""
    if isinstance(want, dict) and isinstance(have, dict):
        for k in sorted(set(want) | set(have)):
            if k not in have:
                return f"{path}.{k} (missing in the cluster)"
            if k not in want:
                return f"{path}.{k} (only in the cluster)"
            d = first_difference(want[k], have[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(want, list) and isinstance(have, list):
        if len(want) != len(have):
            return f"{path} ({len(want)} items generated, {len(have)} in the cluster)"
        for i, (a, b) in enumerate(zip(want, have, strict=True)):
            d = first_difference(a, b, f"{path}[{i}]")
            if d:
                return d
        return None
    return None if want == have else f"{path} ({want!r} generated, {have!r} in the cluster)"


def _body(doc: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k in ("spec", "specs")}


def policy_facts(generated: Sequence[Generated], live: Iterable[Mapping[str, Any]],
                 locate: Locate, cluster_pos: Position) -> list[LiveFact]:
    """`live` are the policies in scope: clusterwide ones, and those of the jobs' namespaces."""
    facts: list[LiveFact] = []
    by_key = {g.key: g for g in generated}
    seen: set[tuple[str, str, str]] = set()
    for o in live:
        md = _md(o)
        key = (str(o.get("kind")), str(md.get("namespace", "")), str(md.get("name", "")))
        obj = "/".join(x for x in key if x)
        g = by_key.get(key)
        if g is None:
            facts.append(LiveFact(UNMANAGED, obj, (
                f"{obj} runs in the cluster but `topogate generate` does not write it: it may deny "
                "a flow a training job needs, and `check` of the repository cannot see it; put it "
                "in the inventory's tree or delete it"), locate(*key)))
            continue
        seen.add(key)
        diff = first_difference(_body(g.doc), _body(o))
        labels = md.get("labels") or {}
        missing = sorted(k for k, v in (_md(g.doc).get("labels") or {}).items() if labels.get(k) != v)
        if diff is None and missing:
            diff = f"metadata.labels.{missing[0]} (not as generated)"
        if diff:
            facts.append(LiveFact(DIFFERS, obj, (
                f"{obj} in the cluster differs from the generated {g.path} at {diff.lstrip('.')}: "
                "edited by hand, or not synced; sync it from the generated tree"), g.pos))
    for key, g in sorted(by_key.items()):
        if key not in seen:
            obj = "/".join(x for x in key if x)
            facts.append(LiveFact(DIFFERS, obj, (
                f"{obj} is generated ({g.path}) but not in the cluster: GitOps has not synced it, "
                "or it was deleted"), g.pos if g.pos.line else cluster_pos))
    return facts
