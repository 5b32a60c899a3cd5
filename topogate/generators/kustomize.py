"""Kustomize overlays: the placement that keeps a job's pods together, in its network zone.

Per workload, `clusters/<c>/workloads/<ns>/<job>/`:
- `kustomization.yaml`: `namespace:`, `resources:` [the user's base as a path relative to the
  overlay, the job's CiliumNetworkPolicy], and one JSON6902 patch targeted at the job
  (group/kind/name, any version);
- `placement-patch.yaml`: the patch ops.
Per cluster, `clusters/<c>/kustomization.yaml` lists `network` first, then every overlay.

What the patch adds to EVERY replica group (coordinator included):
- labels `topogate.dev/workload`, `topogate.dev/network-zone` (what the Cilium policies select on)
  and `topogate.dev/replica-group` (what the rendezvous rules select on);
- a required nodeAffinity requirement `<zoneLabel> In [...]`, ANDed into every existing
  required nodeSelectorTerm (terms are ORed, so a requirement added to one term only would leave
  the others free to land anywhere); the term is created when the base has none;
- tolerations for the taints of every pool in the zones the job may use;
- a `kubernetes.io/hostname` topologySpreadConstraint with `ScheduleAnyway`: it spreads pods over
  nodes inside the zone as a preference only. Never a zone-key spread: with DoNotSchedule it
  would force the split this tool exists to prevent.

The ops are computed against the base's job object (`Workload.base_docs`) so nothing of the base
is dropped: keys go into existing maps, `/-` appends to existing lists (see `jsonpatch`).

Placement `pin`: the requirement is `In [one zone]`. Every pod can only land in that zone, in
any order, so the job is in one zone by construction.

Placement `follow`: the requirement is `In [the network zone's zones]`, plus, on every group, a
required podAffinity term with `topologyKey: <zoneLabel>` and labelSelector
`topogate.dev/workload=<job>`, a selector every pod of the job matches, itself included.
Why this holds in every schedule order: the scheduler places one pod at a time and counts pods it
has already assumed. For the first job pod no matching pod exists anywhere; Kubernetes then lets a
pod whose labels match its own affinity term go to any node its other constraints allow (any zone
of the network zone). Every later pod needs a node in a zone that already holds a matching pod;
by induction all placed pods share one zone, so every later pod joins it.

Why not "every group follows the coordinator, the coordinator placed by nodeAffinity alone" (the
obvious alternative for kinds with a one-pod coordinator): a coordinator that is recreated
while the workers still run (restartPolicy OnFailure, node drain) would then be free to land in
another zone of the network zone, splitting the job. With the self-matching term the new
coordinator must join the running workers. It also treats JobSet and TrainJob, which have no
one-pod coordinator, the same way.

Limits, stated plainly:
- pods that were scheduled without this constraint but carry the job's label in the namespace
  (a previous attempt still terminating, or pods from before topogate was applied) count as
  "already placed": if they sit in two zones, new pods may join either. A fresh job (the normal
  case) cannot split.
- if the first pod's zone lacks capacity for the rest, the rest stay Pending rather than split;
  the capacity check of the loader and analysis is what prevents that.
- the job name is the anchor: two jobs of different kinds with the same name in one namespace
  would anchor to each other (the loader refuses duplicate cluster/namespace/name).

TrainJob: pod templates live in the runtime, so the patch goes through `spec.runtimePatches`
(an entry with `manager: topogate.dev/topogate`) with a per-replicated-job pod template patch
for every replicated job of the runtime found in the base (else `node`, the training job every
Kubeflow runtime has). The CRD allows labels, affinity, tolerations and nodeSelector there but
not topologySpreadConstraints, so TrainJob pods get no hostname spread. The trainer merges the
patch into the runtime's template; unlike the other kinds topogate cannot AND the zone into
required terms of a runtime it has not seen, which the analysis checks on the built objects.
"""

from __future__ import annotations

import os
from typing import Any

from topogate.core.labels import HOSTNAME_LABEL, NETWORK_ZONE_LABEL, WORKLOAD_LABEL
from topogate.generators import admission, cilium
from topogate.generators.base import OutputFile
from topogate.generators.jsonpatch import PatchBuilder, Path
from topogate.inventory.model import Cluster, Inventory, Workload, kueue_groupable
from topogate.k8s import kinds
from topogate.k8s import kueue as kueue_api

NEEDS_OUT_DIR = True  # render() takes out_dir: overlays point at the base relative to it
PATCH_FILE = "placement-patch.yaml"
TRAINJOB_MANAGER = "topogate.dev/topogate"


class GenerateError(ValueError):
    """The inventory is loadable but a workload cannot be patched (e.g. its job is not in the base)."""


def pod_labels(w: Workload, group: str) -> dict[str, str]:
    return dict(sorted({cilium.GROUP_LABEL: group, NETWORK_ZONE_LABEL: w.network_zone,
                        WORKLOAD_LABEL: w.name}.items()))


def allowed_zones(inv: Inventory, w: Workload) -> list[str]:
    zones = list(inv.pin_zones(w))
    if w.placement == "pin" and len(zones) != 1:
        raise GenerateError(f"{w.object_id}: placement pin needs exactly one zone, found {zones}")
    if not zones:
        raise GenerateError(f"{w.object_id}: network zone {w.network_zone!r} has no zones")
    return zones


def tolerations(cluster: Cluster, zones: list[str], gpus_per_pod: int = 0) -> list[dict[str, str]]:
    """One toleration per distinct taint of the pools the job must use, in a stable order.

    The job's pools are those in `zones` with nodes big enough for its largest GPU pod (every
    pool when it needs no GPU). Every group, coordinator included, tolerates their taints so it
    can land beside the GPU workers; pools reserved for other uses by their own taints are not
    opened to the job."""
    seen: dict[tuple[str, str, str], dict[str, str]] = {}
    for z in cluster.zones:
        if z.name not in zones:
            continue
        for p in z.pools:
            if p.gpus_per_node < gpus_per_pod:
                continue
            for t in p.taints:
                tol = ({"key": t.key, "operator": "Equal", "value": t.value, "effect": t.effect}
                       if t.value else {"key": t.key, "operator": "Exists", "effect": t.effect})
                seen[(t.key, t.value, t.effect)] = tol
    return [seen[k] for k in sorted(seen)]


def _max_gpus(w: Workload) -> int:
    return max((g.gpus_per_pod for g in w.groups), default=0)


def _node_requirement(cluster: Cluster, zones: list[str]) -> dict[str, Any]:
    return {"key": cluster.zone_label, "operator": "In", "values": list(zones)}


def _follow_term(cluster: Cluster, w: Workload) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {WORKLOAD_LABEL: w.name}}, "topologyKey": cluster.zone_label}


def _spread(w: Workload) -> dict[str, Any]:
    return {"maxSkew": 1, "topologyKey": HOSTNAME_LABEL, "whenUnsatisfiable": "ScheduleAnyway",
            "labelSelector": {"matchLabels": {WORKLOAD_LABEL: w.name}}}


_REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def kueue_annotations(inv: Inventory, cluster: Cluster, w: Workload) -> dict[str, str]:
    """What Kueue reads on every replica template of a job it places (empty when it does not).

    `podset-required-topology: <zoneLabel>` fits each pod set into one zone. Pod sets are fitted
    one by one unless they share a `podset-group-name`; Kueue accepts a group of exactly two pod
    sets, one of them a single pod, and assigns the group ONE flavor and ONE topology domain.
    So a two-group job (coordinator + workers) gets the group and is fitted whole into one zone;
    a one-group job needs none; a larger job gets none (Kueue would refuse it) and is kept in
    one zone by `pin`'s node affinity (the loader refuses `follow` for it)."""
    if not inv.queue_of(w):
        return {}
    out = {kueue_api.REQUIRED_TOPOLOGY: cluster.zone_label}
    if len(w.groups) == 2 and kueue_groupable(w.groups):
        out[kueue_api.GROUP_NAME] = kueue_group_name(w)
    return out


def kueue_group_name(w: Workload) -> str:
    # Kueue refuses a group name that parses as a number; a job name may be all digits.
    return f"{w.name}-pods"


def _patch_template(pb: PatchBuilder, at: Path, inv: Inventory, cluster: Cluster, w: Workload,
                    group: str) -> None:
    """Add labels, placement, tolerations and hostname spread to the pod template at `at`."""
    zones = allowed_zones(inv, w)
    pb.merge_map(at + ("metadata", "labels"), pod_labels(w, group))
    annotations = kueue_annotations(inv, cluster, w)
    if annotations:
        pb.merge_map(at + ("metadata", "annotations"), annotations)
    terms_path = at + ("spec", "affinity", "nodeAffinity", _REQ, "nodeSelectorTerms")
    terms = pb.get(terms_path)
    if isinstance(terms, list) and terms:
        # Terms are ORed: the zone must be ANDed into each one, or one term would let pods out.
        for i, term in enumerate(terms):
            if isinstance(term, dict):
                if not term.get("matchExpressions") and not term.get("matchFields"):
                    continue  # an empty term matches no node; ANDing the zone would widen it
                pb.extend_list(terms_path + (i, "matchExpressions"), [_node_requirement(cluster, zones)])
            else:
                pb.replace(terms_path + (i,), {"matchExpressions": [_node_requirement(cluster, zones)]})
    else:
        pb.merge_map(terms_path[:-1],
                     {"nodeSelectorTerms": [{"matchExpressions": [_node_requirement(cluster, zones)]}]})
    if w.placement == "follow":
        pb.extend_list(at + ("spec", "affinity", "podAffinity", _REQ), [_follow_term(cluster, w)])
    pb.extend_list(at + ("spec", "tolerations"), tolerations(cluster, zones, _max_gpus(w)))
    spreads = pb.get(at + ("spec", "topologySpreadConstraints"))
    if not any(isinstance(t, dict) and t.get("topologyKey") == HOSTNAME_LABEL
               and t.get("whenUnsatisfiable") == "ScheduleAnyway" for t in spreads or []):
        # The API server refuses two spreads with one (topologyKey, whenUnsatisfiable): a base
        # that already spreads per hostname keeps its own.
        pb.extend_list(at + ("spec", "topologySpreadConstraints"), [_spread(w)])


def runtime_groups(job: dict[str, Any], docs: tuple[Any, ...]) -> tuple[str, ...]:
    """A TrainJob's replicated jobs, when its (Cluster)TrainingRuntime is among the base docs."""
    if job.get("kind") != "TrainJob":
        return ()
    spec = job.get("spec") if isinstance(job.get("spec"), dict) else {}
    ref = spec.get("runtimeRef") if isinstance(spec, dict) else None
    name = ref.get("name") if isinstance(ref, dict) else None
    for d in docs:
        if (isinstance(d, dict) and d.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime")
                and isinstance(d.get("metadata"), dict) and d["metadata"].get("name") == name):
            rjs = kinds.dig(d, ("spec", "template", "spec", "replicatedJobs"))
            return tuple(str(r["name"]) for r in rjs or [] if isinstance(r, dict) and "name" in r)
    return ()


def _trainjob_entry(inv: Inventory, cluster: Cluster, w: Workload, groups: list[str]) -> dict[str, Any]:
    zones = allowed_zones(inv, w)
    jobs = []
    for g in groups:
        affinity: dict[str, Any] = {"nodeAffinity": {_REQ: {"nodeSelectorTerms": [
            {"matchExpressions": [_node_requirement(cluster, zones)]}]}}}
        if w.placement == "follow":
            affinity["podAffinity"] = {_REQ: [_follow_term(cluster, w)]}
        pod_spec: dict[str, Any] = {"affinity": affinity}
        tols = tolerations(cluster, zones, _max_gpus(w))
        if tols:
            pod_spec["tolerations"] = tols
        metadata: dict[str, Any] = {"labels": pod_labels(w, g)}
        annotations = kueue_annotations(inv, cluster, w)
        if annotations:
            metadata["annotations"] = annotations
        jobs.append({"name": g, "template": {"spec": {"template": {
            "metadata": metadata, "spec": pod_spec}}}})
    return {"manager": TRAINJOB_MANAGER,
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": jobs}}}}


def _path_key(g: kinds.GroupRef) -> tuple[str, ...]:
    # Replica-spec maps (Master/Worker) come in the base's key order; sorting makes the ops
    # independent of it. List indexes (JobSet) are zero-padded so they keep their order.
    return tuple(f"{t:09d}" if isinstance(t, int) else t for t in g.template_path)


def placement_ops(inv: Inventory, w: Workload, docs: tuple[Any, ...] | None = None) -> list[dict[str, Any]]:
    """The JSON6902 ops for workload `w`, computed against its job in `docs` (default: base_docs)."""
    docs = w.base_docs if docs is None else docs
    cluster = inv.cluster(w.cluster)
    if cluster is None:
        raise GenerateError(f"{w.object_id}: unknown cluster {w.cluster!r}")
    job = kinds.find_job(list(docs), w.kind, w.name)
    if job is None:
        raise GenerateError(f"{w.object_id}: the base has no {w.kind} named {w.name!r}")
    pb = PatchBuilder(job)
    queue = inv.queue_of(w)
    if queue:
        # Kueue reads the queue from the job object itself, not from its pods.
        pb.merge_map(("metadata", "labels"), {kueue_api.QUEUE_LABEL: queue})
    if w.kind == "TrainJob":
        names = [g.name for g in kinds.replica_groups(job, runtime_groups(job, docs))]
        entry = _trainjob_entry(inv, cluster, w, names)
        existing = pb.get(("spec", "runtimePatches"))
        idx = next((i for i, e in enumerate(existing or [])
                    if isinstance(e, dict) and e.get("manager") == TRAINJOB_MANAGER), None)
        if idx is not None:
            pb.replace(("spec", "runtimePatches", idx), entry)
        else:
            pb.extend_list(("spec", "runtimePatches"), [entry])
        return pb.ops
    groups = sorted(kinds.replica_groups(job), key=_path_key)
    for g in groups:
        _patch_template(pb, g.template_path, inv, cluster, w, g.name)
    if not groups:
        raise GenerateError(f"{w.object_id}: the {w.kind} in the base has no replica groups")
    return pb.ops


def base_path(out_dir: str, w: Workload) -> str:
    """The base as seen from the overlay directory under `out_dir` (POSIX separators).

    Callers pass `out_dir` with symlinks resolved, as the loader resolves `base_dir`: a relative
    path between a resolved and an unresolved path would not lead anywhere."""
    if not w.base_dir:
        raise GenerateError(f"{w.object_id}: the base directory is unknown")
    overlay = os.path.join(os.path.abspath(out_dir), *cilium.workload_dir(w).split("/"))
    return os.path.relpath(w.base_dir, overlay).replace(os.sep, "/")


def overlay(inv: Inventory, w: Workload, out_dir: str) -> list[OutputFile]:
    info = kinds.TRAINING_KINDS[w.kind]
    group = info.api_version.rpartition("/")[0]
    d = cilium.workload_dir(w)
    # No version in the target: a base may serve the job at another version of the same group
    # (MPIJob kubeflow.org/v1 under training-operator 1.x), and a target that does not match is
    # silently skipped by kustomize, which would leave the job unplaced.
    kust = cilium.kustomization(
        [base_path(out_dir, w), cilium.CNP_FILE], namespace=w.namespace,
        patches=[{"path": PATCH_FILE, "target": {"group": group, "kind": w.kind, "name": w.name}}])
    return [
        OutputFile(f"{d}/kustomization.yaml", (kust,), source=w.pos),
        OutputFile(f"{d}/{PATCH_FILE}", (placement_ops(inv, w),), source=w.pos),
    ]


def render(inv: Inventory, out_dir: str) -> list[OutputFile]:
    out: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        wls = sorted(inv.workloads_of(c.name), key=lambda w: (w.namespace, w.name))
        # Network first: the doors exist before any job they guard is created; then the
        # cluster machinery that places and admits the jobs (Kueue, admission), then the jobs.
        # a job its own Application applies (deployedBy: own) is not the cluster tree's to apply
        resources = ["network"] + (["admission"] if admission.enabled(inv, c) else []) + (
            ["kueue"] if c.kueue else []) + [f"workloads/{w.namespace}/{w.name}" for w in wls if not w.own]
        out.append(OutputFile(f"clusters/{c.name}/kustomization.yaml", (cilium.kustomization(resources),),
                              source=c.pos))
        for w in wls:
            out.extend(overlay(inv, w, out_dir))
    return out
