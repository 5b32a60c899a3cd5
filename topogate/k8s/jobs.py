"""Find the training jobs among parsed manifests and flatten each into replica groups.

A *job* is what must be co-located: a PyTorchJob, MPIJob, JobSet, a TrainJob (whose pods come
from its ClusterTrainingRuntime/TrainingRuntime), or a set of plain workloads (Deployment,
StatefulSet, ReplicaSet, Job, Pod) that share a ``topogate.dev/group`` pod-template label. A
*group* is one pod template with its pod count: what the scheduler places and what the network
sees as one label class. Every group keeps the pod spec, the labels its pods will carry (template
labels plus what the controller stamps, via ``kinds.controller_labels``) and where its template is
written, so findings can point at the line to fix.

Positions: each manifest comes with a ``source`` (anything with ``.file``, ``.line``, ``.column``)
and optionally a ``locate(path) -> source | None`` that resolves a JSON path inside that object
(e.g. ``("spec", "pytorchReplicaSpecs", "Worker", "template")``). Without ``locate`` every group
points at its object.

TrainJob resolution (Kubeflow Trainer v2, trainer.kubeflow.org/v1alpha1):
- ``spec.runtimeRef`` names the runtime; ``kind`` defaults to ClusterTrainingRuntime
  (cluster-scoped), a TrainingRuntime is looked up in the TrainJob's namespace.
- The runtime's ``spec.template`` is a JobSet template; each replicatedJob is a group with
  ``replicas * parallelism`` pods, like a JobSet.
- The trainer's replicated job is the one labelled ``trainer.kubeflow.org/trainjob-ancestor-step:
  trainer``, or else the one named ``node``. It gets ``trainer.numNodes`` pods (else the runtime's
  ``mlPolicy.numNodes``) and ``trainer.resourcesPerNode`` replaces the resources of its ``node``
  container (else its first container).
- ``spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs[]`` (and the older
  ``podTemplateOverrides``/``podSpecOverrides`` with ``targetJobs``) patch the named jobs' pod
  templates in list order: labels and nodeSelector merge key by key, tolerations append, each of
  nodeAffinity/podAffinity/podAntiAffinity replaces the runtime's.
- Pods carry the JobSet labels of the JobSet the trainer creates with the TrainJob's name.
A TrainJob whose runtime is not among the manifests still yields its "node" group (from
``kinds.replica_groups``), flagged in ``problems`` because its real pod spec is unknown.

Group workloads: each object is a group named ``Kind/name`` with ``replicas`` pods (Deployment,
StatefulSet, ReplicaSet; default 1), ``min(parallelism, completions)`` pods (Job; default 1) or 1
(Pod); a CronJob counts as the Job of its ``jobTemplate`` (whose per-run name is no label class);
the job is ``Group/<namespace>/<label value>``. Job pods also carry ``job-name`` and
``batch.kubernetes.io/job-name`` (kubernetes.io/docs/reference/labels-annotations-taints/).
Labels whose value differs per pod (pod-template-hash, replica index, controller uid) are left
out: a selector on them matches a subset of a group, which label classes cannot express.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from topogate.core.labels import JOB_GROUP_LABEL, Pairs
from topogate.k8s.dra import ClaimIndex, PodDevices, pod_devices
from topogate.k8s.kinds import (
    TRAINING_KINDS,
    Path,
    controller_labels,
    dig,
    pod_gpus,
    replica_groups,
)

GROUP_LABEL = JOB_GROUP_LABEL
GROUP_KIND = "Group"
DEFAULT_NAMESPACE = "default"
TRAINER_ANCESTOR_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_GROUP = "node"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
GROUPABLE_KINDS = ("Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod")



class SourceLike(Protocol):
    """Where something is written: the loader's Position or any object with these fields."""

    @property
    def file(self) -> str: ...

    @property
    def line(self) -> int: ...

    @property
    def column(self) -> int: ...


Locate = Callable[[Path], SourceLike | None]
# A manifest: (object, source) or (object, source, locate).
ManifestItem = tuple[Any, ...]


@dataclass(frozen=True)
class JobGroup:
    """One replica group: pods that share one pod template."""

    name: str
    pods: int
    gpus_per_pod: int
    labels: Pairs  # sorted; template labels + controller labels
    spec: dict[str, Any] = field(compare=False, repr=False)  # the pod spec, patches applied
    template_path: Path = ()  # inside the object that holds the template
    source: SourceLike | None = field(default=None, compare=False)  # where the template is written
    owner: str = ""  # Kind/namespace/name of the object holding the template
    annotations: Pairs = ()  # sorted; the template's (Kueue reads its pod-set requests there)
    # Devices each pod claims through DRA (``k8s.dra``), counted in gpus_per_pod too.
    devices: PodDevices = PodDevices()
    # where a field of the template is written (a path below the template): the line a finding
    # about that field points at (a nodeSelector in the base, an affinity a patch added)
    item: _Item | None = field(default=None, compare=False, repr=False)

    def locate(self, path: Path) -> SourceLike | None:
        """The source of `path` inside this group's pod template (the template's own when the
        object has no locator, or the path is not there)."""
        return self.item.at((*self.template_path, *path)) if self.item is not None else self.source

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def gpus(self) -> int:
        return self.pods * self.gpus_per_pod


@dataclass(frozen=True)
class TrainingJob:
    kind: str  # PyTorchJob | MPIJob | JobSet | TrainJob | Group
    name: str
    namespace: str
    groups: tuple[JobGroup, ...]
    api_version: str = ""
    source: SourceLike | None = field(default=None, compare=False)
    runtime: str = ""  # TrainJob: "ClusterTrainingRuntime/<name>" or "TrainingRuntime/<ns>/<name>"
    problems: tuple[str, ...] = ()  # what could not be resolved (e.g. a missing runtime)
    annotations: Pairs = ()  # sorted; the job object's own (another scheduler may read them)
    # A Volcano Job's spec.networkTopology (mode, highestTierAllowed, highestTierName), sorted.
    network_topology: tuple[tuple[str, Any], ...] = ()

    @property
    def object_id(self) -> str:
        return f"{self.kind}/{self.namespace}/{self.name}"

    @property
    def gpus(self) -> int:
        return sum(g.gpus for g in self.groups)

    def group(self, name: str) -> JobGroup | None:
        return next((g for g in self.groups if g.name == name), None)


# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Item:
    obj: dict[str, Any]
    source: SourceLike | None
    locate: Locate | None

    def at(self, path: Path) -> SourceLike | None:
        if self.locate is not None and path:
            try:
                found = self.locate(path)
            except (KeyError, IndexError, TypeError, ValueError):
                found = None
            if found is not None:
                return found
        return self.source


def _items(manifests: Iterable[ManifestItem]) -> list[_Item]:
    out: list[_Item] = []
    for m in manifests:
        if not isinstance(m, tuple) or not m:
            continue
        obj = m[0]
        if not isinstance(obj, dict):
            continue
        source = m[1] if len(m) > 1 else None
        locate = m[2] if len(m) > 2 and callable(m[2]) else None
        out.append(_Item(obj, source, locate))
    return out


def _meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _namespace(obj: Mapping[str, Any], default: str) -> str:
    return str(_meta(obj).get("namespace") or default)


def _int(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def _labels_of(template: Mapping[str, Any]) -> dict[str, str]:
    md = template.get("metadata")
    lab = md.get("labels") if isinstance(md, dict) else None
    return {str(k): str(v) for k, v in lab.items()} if isinstance(lab, dict) else {}


def _annotations_of(template: Mapping[str, Any]) -> Pairs:
    md = template.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    return tuple(sorted((str(k), str(v)) for k, v in ann.items())) if isinstance(ann, dict) else ()


def _spec_of(template: Mapping[str, Any]) -> dict[str, Any]:
    s = template.get("spec")
    return s if isinstance(s, dict) else {}


def _group(
    name: str, pods: int, template: Mapping[str, Any], extra_labels: Mapping[str, str],
    path: Path, item: _Item, owner: str,
) -> JobGroup:
    spec = _spec_of(template)
    # Controller labels are stamped over the template's: the controller has the last word.
    labels = {**_labels_of(template), **extra_labels}
    return JobGroup(
        name=name, pods=max(pods, 0), gpus_per_pod=pod_gpus(spec), labels=tuple(sorted(labels.items())),
        spec=spec, template_path=path, source=item.at(path), owner=owner,
        annotations=_annotations_of(template), item=item,
    )


# ---------------------------------------------------------------------------------------------
# Kubeflow v1 / MPI / JobSet: the shape is in kinds.replica_groups


def _from_kind(item: _Item, kind: str, default_ns: str) -> TrainingJob:
    obj = item.obj
    name, ns = _name(obj), _namespace(obj, default_ns)
    oid = f"{kind}/{ns}/{name}"
    groups = tuple(
        _group(g.name, g.pods, g.template, controller_labels(kind, name, g.name, str(obj.get("apiVersion") or "")),
               g.template_path, item, oid)
        for g in replica_groups(obj)
    )
    return TrainingJob(kind, name, ns, groups, str(obj.get("apiVersion") or ""), item.source,
                       annotations=_annotations_of(obj))


# ---------------------------------------------------------------------------------------------
# Volcano Job (batch.volcano.sh/v1alpha1): one group per task, its pods stamped by the
# controller (pkg/controllers/job createJobPod: volcano.sh/job-name, volcano.sh/task-spec,
# volcano.sh/job-namespace, volcano.sh/queue-name; the per-pod volcano.sh/task-index is left
# out), and the job's schedulerName on a template that names none.

VOLCANO_GROUP = "batch.volcano.sh"
VOLCANO_DEFAULT_TASK = "default"
VOLCANO_DEFAULT_QUEUE = "default"
VOLCANO_SCHEDULER = "volcano"


def is_volcano_job(obj: Mapping[str, Any]) -> bool:
    return obj.get("kind") == "Job" and str(obj.get("apiVersion", "")).split("/", 1)[0] == VOLCANO_GROUP


def _from_volcano(item: _Item, default_ns: str) -> TrainingJob:
    obj = item.obj
    name, ns = _name(obj), _namespace(obj, default_ns)
    spec = _dict(obj.get("spec"))
    queue = str(spec.get("queue") or VOLCANO_DEFAULT_QUEUE)
    scheduler = str(spec.get("schedulerName") or VOLCANO_SCHEDULER)
    groups = []
    for i, t in enumerate(spec.get("tasks") or []):
        if not isinstance(t, dict):
            continue
        tname = str(t.get("name") or VOLCANO_DEFAULT_TASK)
        path: Path = ("spec", "tasks", i, "template")
        template = copy.deepcopy(_dict(t.get("template")))
        pod = _dict(template.get("spec"))
        pod.setdefault("schedulerName", scheduler)
        template["spec"] = pod
        stamped = {"volcano.sh/job-name": name, "volcano.sh/task-spec": tname, "volcano.sh/job-namespace": ns,
                   "volcano.sh/queue-name": queue}
        groups.append(_group(tname, _int(t.get("replicas"), 0), template, stamped, path, item, f"Job/{ns}/{name}"))
    topo = _dict(spec.get("networkTopology"))
    return TrainingJob("Job", name, ns, tuple(groups), str(obj.get("apiVersion") or ""), item.source,
                       annotations=_annotations_of(obj),
                       network_topology=tuple(sorted((str(k), v) for k, v in topo.items())) if "networkTopology" in spec
                       else ())


# ---------------------------------------------------------------------------------------------
# TrainJob + runtime


def _dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def _merge_pod_patch(template: dict[str, Any], patch: Mapping[str, Any]) -> None:
    """Apply one pod-template patch (metadata.labels/annotations, spec.nodeSelector/tolerations/
    affinity)."""
    for key in ("labels", "annotations"):
        pmap = _dict(patch.get("metadata")).get(key)
        if isinstance(pmap, dict):
            md = _dict(template.get("metadata"))
            md[key] = {**_dict(md.get(key)), **pmap}
            template["metadata"] = md
    pspec = patch.get("spec")
    if not isinstance(pspec, dict):
        return
    spec = _dict(template.get("spec"))
    template["spec"] = spec
    if isinstance(pspec.get("nodeSelector"), dict):
        spec["nodeSelector"] = {**_dict(spec.get("nodeSelector")), **pspec["nodeSelector"]}
    if isinstance(pspec.get("tolerations"), list):
        tols = spec.get("tolerations")
        spec["tolerations"] = [*(tols if isinstance(tols, list) else []), *pspec["tolerations"]]
    if isinstance(pspec.get("affinity"), dict):
        spec["affinity"] = {**_dict(spec.get("affinity")), **pspec["affinity"]}


def _runtime_patches(trainjob: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(replicated job name, pod-template patch) in application order."""
    spec = trainjob.get("spec") if isinstance(trainjob.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    out: list[tuple[str, dict[str, Any]]] = []
    for rp in spec.get("runtimePatches") or []:
        rjobs = dig(rp, ("trainingRuntimeSpec", "template", "spec", "replicatedJobs"))
        for rj in rjobs if isinstance(rjobs, list) else []:
            if not isinstance(rj, dict):
                continue
            pod = dig(rj, ("template", "spec", "template"))
            if isinstance(pod, dict):
                out.append((str(rj.get("name", "")), pod))
    # Older Trainer releases: podTemplateOverrides (v2.1) / podSpecOverrides (v2.0).
    for key in ("podTemplateOverrides", "podSpecOverrides"):
        for ov in spec.get(key) or []:
            if not isinstance(ov, dict):
                continue
            if key == "podSpecOverrides":
                patch = {"spec": {k: v for k, v in ov.items() if k != "targetJobs"}}
            else:
                patch = {k: v for k, v in ov.items() if k in ("metadata", "spec")}
            for t in ov.get("targetJobs") or []:
                if isinstance(t, dict) and t.get("name"):
                    out.append((str(t["name"]), patch))
    return out


def _trainer_job_name(rjobs: Sequence[Any]) -> str:
    for rj in rjobs:
        if isinstance(rj, dict):
            labels = dig(rj, ("template", "metadata", "labels"))
            if isinstance(labels, dict) and labels.get(TRAINER_ANCESTOR_LABEL) == "trainer":
                return str(rj.get("name", ""))
    return TRAINER_GROUP


def _set_trainer_resources(template: dict[str, Any], resources: Mapping[str, Any]) -> None:
    spec = template.get("spec")
    containers = spec.get("containers") if isinstance(spec, dict) else None
    if not isinstance(containers, list) or not containers:
        return
    target = next((c for c in containers if isinstance(c, dict) and c.get("name") == TRAINER_GROUP), None)
    if target is None and isinstance(containers[0], dict):
        target = containers[0]
    if target is not None:
        target["resources"] = copy.deepcopy(dict(resources))


def _runtime_key(trainjob: Mapping[str, Any], ns: str) -> tuple[str, str, str]:
    ref = dig(trainjob, ("spec", "runtimeRef"))
    ref = ref if isinstance(ref, dict) else {}
    kind = str(ref.get("kind") or "ClusterTrainingRuntime")
    name = str(ref.get("name") or "")
    return (kind, ns if kind == "TrainingRuntime" else "", name)


# The problem of a TrainJob whose runtime is not among the manifests (TG122 reads the id back).
MISSING_RUNTIME = "runtime {} is not among the manifests: pod templates unknown"


def missing_runtime(problem: str) -> str | None:
    """The runtime id (ClusterTrainingRuntime/NAME, TrainingRuntime/NS/NAME) a MISSING_RUNTIME
    problem names; None for any other problem."""
    head, tail = MISSING_RUNTIME.split("{}")
    if problem.startswith(head) and problem.endswith(tail):
        return problem[len(head):len(problem) - len(tail)]
    return None


def _from_trainjob(item: _Item, runtimes: Mapping[tuple[str, str, str], _Item], default_ns: str) -> TrainingJob:
    obj = item.obj
    name, ns = _name(obj), _namespace(obj, default_ns)
    oid = f"TrainJob/{ns}/{name}"
    key = _runtime_key(obj, ns)
    runtime_id = f"{key[0]}/{key[1]}/{key[2]}" if key[1] else f"{key[0]}/{key[2]}"
    rt = runtimes.get(key)
    api = str(obj.get("apiVersion") or "")
    if rt is None:
        # The runtime's own pod template is unknown, but what the TrainJob patches into it
        # (labels, affinity, tolerations, nodeSelector) is known and decides placement and policy.
        fallback_groups: list[JobGroup] = []
        for g in replica_groups(obj):
            patched = copy.deepcopy(g.template)
            for target, patch in _runtime_patches(obj):
                if target == g.name:
                    _merge_pod_patch(patched, patch)
            fallback_groups.append(
                _group(g.name, g.pods, patched, controller_labels("TrainJob", name, g.name), (), item, oid))
        fallback = tuple(fallback_groups)
        return TrainingJob("TrainJob", name, ns, fallback, api, item.source, runtime_id,
                           (MISSING_RUNTIME.format(runtime_id),))
    rjobs = dig(rt.obj, ("spec", "template", "spec", "replicatedJobs"))
    rjobs = rjobs if isinstance(rjobs, list) else []
    trainer_name = _trainer_job_name(rjobs)
    trainer = dig(obj, ("spec", "trainer"))
    trainer = trainer if isinstance(trainer, dict) else {}
    num_nodes = _int(trainer.get("numNodes"), _int(dig(rt.obj, ("spec", "mlPolicy", "numNodes")), 0))
    patches = _runtime_patches(obj)
    rt_id = f"{rt.obj.get('kind')}/{_name(rt.obj)}"
    groups: list[JobGroup] = []
    for i, rj in enumerate(rjobs):
        if not isinstance(rj, dict):
            continue
        gname = str(rj.get("name", f"job-{i}"))
        tpl_path: Path = ("spec", "template", "spec", "replicatedJobs", i, "template", "spec", "template")
        tpl = dig(rt.obj, tpl_path)
        template: dict[str, Any] = copy.deepcopy(tpl) if isinstance(tpl, dict) else {}
        job_spec = dig(rj, ("template", "spec"))
        job_spec = job_spec if isinstance(job_spec, dict) else {}
        pods = _int(rj.get("replicas"), 1) * _int(job_spec.get("parallelism"), 1)
        if gname == trainer_name:
            if num_nodes > 0:
                pods = num_nodes  # the trainer sets parallelism = completions = numNodes
            if isinstance(trainer.get("resourcesPerNode"), dict):
                _set_trainer_resources(template, trainer["resourcesPerNode"])
        for target, patch in patches:
            if target == gname:
                _merge_pod_patch(template, patch)
        grp = _group(gname, pods, template, controller_labels("TrainJob", name, gname), tpl_path, rt, rt_id)
        groups.append(grp)
    return TrainingJob("TrainJob", name, ns, tuple(groups), api, item.source, runtime_id,
                       annotations=_annotations_of(obj))


# ---------------------------------------------------------------------------------------------
# topogate.dev/group workloads


def _workload_template(obj: Mapping[str, Any]) -> tuple[dict[str, Any], Path]:
    if obj.get("kind") == "Pod":
        return {"metadata": _meta(obj), "spec": obj.get("spec") if isinstance(obj.get("spec"), dict) else {}}, ()
    path: Path = ("spec", "jobTemplate", "spec", "template") if obj.get("kind") == "CronJob" else ("spec", "template")
    tpl = dig(obj, path)
    return (tpl if isinstance(tpl, dict) else {}), path


def _workload_pods(obj: Mapping[str, Any]) -> int:
    kind = obj.get("kind")
    spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    if kind == "Pod":
        return 1
    if kind == "CronJob":  # each run is a Job of the jobTemplate
        inner = dig(spec, ("jobTemplate", "spec"))
        spec = inner if isinstance(inner, dict) else {}
        kind = "Job"
    if kind == "Job":
        par = _int(spec.get("parallelism"), 1)
        comp = spec.get("completions")
        return min(par, comp) if isinstance(comp, int) and not isinstance(comp, bool) else par
    return _int(spec.get("replicas"), 1)


def _workload_labels(obj: Mapping[str, Any]) -> dict[str, str]:
    if obj.get("kind") == "Job":
        n = _name(obj)
        return {"job-name": n, "batch.kubernetes.io/job-name": n}
    return {}


# ---------------------------------------------------------------------------------------------


def find_jobs(manifests: Iterable[ManifestItem], default_namespace: str = DEFAULT_NAMESPACE) -> tuple[TrainingJob, ...]:
    """Every training job among the manifests, sorted by object id.

    ``manifests`` yields ``(object, source)`` or ``(object, source, locate)``. An object id seen
    twice keeps its first occurrence (the same file given twice, or a base and its build).
    """
    items = _items(manifests)
    runtimes: dict[tuple[str, str, str], _Item] = {}
    for it in items:
        kind = it.obj.get("kind")
        if kind in RUNTIME_KINDS:
            ns = _namespace(it.obj, default_namespace) if kind == "TrainingRuntime" else ""
            runtimes.setdefault((str(kind), ns, _name(it.obj)), it)

    jobs: dict[str, TrainingJob] = {}
    grouped: dict[tuple[str, str], list[_Item]] = {}
    for it in items:
        kind = it.obj.get("kind")
        if kind == "TrainJob":
            job = _from_trainjob(it, runtimes, default_namespace)
        elif is_volcano_job(it.obj):
            job = _from_volcano(it, default_namespace)
        elif isinstance(kind, str) and kind in TRAINING_KINDS:
            job = _from_kind(it, kind, default_namespace)
        elif kind in GROUPABLE_KINDS:
            tpl, _ = _workload_template(it.obj)
            value = _labels_of(tpl).get(GROUP_LABEL)
            if value:
                grouped.setdefault((_namespace(it.obj, default_namespace), value), []).append(it)
            continue
        else:
            continue
        jobs.setdefault(job.object_id, job)

    for (ns, value), members in grouped.items():
        by_group: dict[str, JobGroup] = {}
        for it in members:
            tpl, path = _workload_template(it.obj)
            gname = f"{it.obj.get('kind')}/{_name(it.obj)}"
            owner = f"{it.obj.get('kind')}/{ns}/{_name(it.obj)}"
            by_group.setdefault(gname, _group(gname, _workload_pods(it.obj), tpl, _workload_labels(it.obj), path, it, owner))
        job = TrainingJob(GROUP_KIND, value, ns, tuple(by_group[k] for k in sorted(by_group)), "", members[0].source)
        jobs.setdefault(job.object_id, job)

    claims = ClaimIndex(it.obj for it in items)
    return tuple(_with_devices(jobs[k], claims) for k in sorted(jobs))


def _with_devices(job: TrainingJob, claims: ClaimIndex) -> TrainingJob:
    """The job with each group's DRA claims resolved against the manifests' templates: the
    devices each pod claims count as its GPUs (TG103/TG104), and only pools offering them fit."""
    if not any(g.spec.get("resourceClaims") for g in job.groups):
        return job
    groups = []
    for g in job.groups:
        devices = pod_devices(g.spec, job.namespace, claims)
        groups.append(dataclasses.replace(g, devices=devices, gpus_per_pod=pod_gpus(g.spec) + devices.count)
                      if devices.requests or devices.problems else g)
    return dataclasses.replace(job, groups=tuple(groups))



__all__ = ["is_volcano_job", "DEFAULT_NAMESPACE", "GROUPABLE_KINDS", "GROUP_KIND", "GROUP_LABEL", "JobGroup",
           "Locate", "Pairs", "RUNTIME_KINDS", "missing_runtime", "TrainingJob", "find_jobs"]
