"""What topogate knows about each training-job kind: where its pod templates live, what its
replica groups are called, which labels its controller stamps on pods, and which flows it needs.

Both the generators (to patch every replica type) and the analysis (to read every replica type)
walk jobs through `replica_groups`, so the two can never disagree about a job's shape.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from topogate.k8s.quantity import GPU_RESOURCES, count

Path = tuple[str | int, ...]

# Plain workload kinds -> path of the pod template inside the object (() = the object itself).
# One table for every reader of plain workloads: `trace` resolving a workload to its pods and
# `analysis.coverage` listing the pod templates no training job includes.
# Kueue's objects (kueue.x-k8s.io): what the analysis reads and the generators write.
KUEUE_KINDS = ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue")

PLAIN_POD_TEMPLATES: dict[str, Path] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "Pod": (),
}


@dataclass(frozen=True)
class KindInfo:
    kind: str
    api_version: str
    coordinator: str | None  # the replica group the others rendezvous with
    rendezvous_port: int | None  # TCP port workers open on the coordinator
    ssh_from_coordinator: bool = False  # MPIJob: launcher reaches workers on TCP 22


TRAINING_KINDS: dict[str, KindInfo] = {
    "PyTorchJob": KindInfo("PyTorchJob", "kubeflow.org/v1", "Master", 23456),
    "MPIJob": KindInfo("MPIJob", "kubeflow.org/v2beta1", "Launcher", None, ssh_from_coordinator=True),
    "JobSet": KindInfo("JobSet", "jobset.x-k8s.io/v1alpha2", None, None),
    "TrainJob": KindInfo("TrainJob", "trainer.kubeflow.org/v1alpha1", "node", 29500),
    # The other Kubeflow training-operator v1 kinds: default ports from each kind's API package
    # (tfjob-port 2222, xgboostjob-port 9999, paddle "master" 36543, jaxjob-port 6666). A TFJob
    # without Chief has its coordinator on Worker 0 and a JAXJob always does: one pod of a group,
    # which a label class cannot single out, so the all-TCP flow among members covers them.
    "TFJob": KindInfo("TFJob", "kubeflow.org/v1", "Chief", 2222),
    "XGBoostJob": KindInfo("XGBoostJob", "kubeflow.org/v1", "Master", 9999),
    "PaddleJob": KindInfo("PaddleJob", "kubeflow.org/v1", "Master", 36543),
    "JAXJob": KindInfo("JAXJob", "kubeflow.org/v1", None, 6666),
}

# Replica-spec maps of the Kubeflow v1/v2beta1 jobs.
REPLICA_SPECS = {
    "PyTorchJob": "pytorchReplicaSpecs", "MPIJob": "mpiReplicaSpecs", "TFJob": "tfReplicaSpecs",
    "XGBoostJob": "xgbReplicaSpecs", "PaddleJob": "paddleReplicaSpecs", "JAXJob": "jaxReplicaSpecs",
}

# training-operator v1 controllers: the operator-name label each stamps, and the replica types
# its IsMasterRole gives job-role=master as a whole group (TFJob: Chief or Master when present).
_V1_OPERATORS = {
    "PyTorchJob": ("pytorchjob-controller", ("master",)),
    "TFJob": ("tfjob-controller", ("chief", "master")),
    "XGBoostJob": ("xgboostjob-controller", ("master",)),
    "PaddleJob": ("paddlejob-controller", ("master",)),
    "JAXJob": ("jaxjob-controller", ()),
    "MPIJob/v1": ("mpijob-controller", ("launcher",)),
}

# TrainJob pods come from its runtime's JobSet; without the runtime at hand, "node" is the
# replicated job every Kubeflow Trainer runtime uses for training pods.
TRAINJOB_DEFAULT_GROUPS = ("node",)


@dataclass(frozen=True)
class GroupRef:
    """One replica group of a job object."""

    name: str
    pods: int
    template_path: Path  # JSON path to the pod template (metadata + spec) inside the object
    template: dict[str, Any]

    @property
    def spec(self) -> dict[str, Any]:
        s = self.template.get("spec")
        return s if isinstance(s, dict) else {}

    @property
    def labels(self) -> dict[str, str]:
        md = self.template.get("metadata")
        lab = md.get("labels") if isinstance(md, dict) else None
        return {str(k): str(v) for k, v in lab.items()} if isinstance(lab, dict) else {}

    @property
    def gpus_per_pod(self) -> int:
        return pod_gpus(self.spec)


def _int(v: Any, default: int) -> int:
    return v if isinstance(v, int) and not isinstance(v, bool) else default


def container_gpus(container: dict[str, Any]) -> int:
    """GPUs one container asks for: its limits (extended resources must set limits), else requests."""
    res = container.get("resources") or {}
    if not isinstance(res, dict):
        return 0
    for section in ("limits", "requests"):
        block = res.get(section)
        if isinstance(block, dict):
            n = sum(count(block.get(name)) for name in GPU_RESOURCES)
            if n:
                return n
    return 0


def pod_gpus(spec: dict[str, Any]) -> int:
    """GPUs of a pod: the sum over its containers, or the largest init container if larger."""
    containers = spec.get("containers") or []
    inits = spec.get("initContainers") or []
    main = sum(container_gpus(c) for c in containers if isinstance(c, dict))
    init = max((container_gpus(c) for c in inits if isinstance(c, dict)), default=0)
    return max(main, init)


def dig(obj: Any, path: Path) -> Any:
    """The value at a JSON path inside plain YAML data, or None where the path does not exist."""
    for p in path:
        if isinstance(p, int):
            if not isinstance(obj, list) or not 0 <= p < len(obj):
                return None
            obj = obj[p]
        else:
            if not isinstance(obj, dict):
                return None
            obj = obj.get(p)
    return obj


def replica_groups(obj: dict[str, Any], runtime_groups: tuple[str, ...] = ()) -> Iterator[GroupRef]:
    """Every replica group of a training-job object, in the object's own order.

    For TrainJob the pod templates live in the runtime; the group comes back with the trainer's
    node count and an empty template path (patches go through `spec.runtimePatches`).
    """
    kind = obj.get("kind")
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if kind in REPLICA_SPECS:
        key = REPLICA_SPECS[str(kind)]
        specs = spec.get(key)
        if not isinstance(specs, dict):
            return
        for name, rs in specs.items():
            if not isinstance(rs, dict):
                continue
            tpl = rs.get("template")
            yield GroupRef(
                str(name), _int(rs.get("replicas"), 1), ("spec", key, str(name), "template"),
                tpl if isinstance(tpl, dict) else {},
            )
    elif kind == "JobSet":
        for i, rj in enumerate(spec.get("replicatedJobs") or []):
            if not isinstance(rj, dict):
                continue
            job_spec = dig(rj, ("template", "spec")) or {}
            parallelism = _int(job_spec.get("parallelism") if isinstance(job_spec, dict) else None, 1)
            tpl = dig(rj, ("template", "spec", "template"))
            yield GroupRef(
                str(rj.get("name", f"job-{i}")), _int(rj.get("replicas"), 1) * parallelism,
                ("spec", "replicatedJobs", i, "template", "spec", "template"),
                tpl if isinstance(tpl, dict) else {},
            )
    elif kind == "TrainJob":
        trainer = spec.get("trainer") if isinstance(spec.get("trainer"), dict) else {}
        assert isinstance(trainer, dict)
        nodes = _int(trainer.get("numNodes"), 1)
        per_node = trainer.get("resourcesPerNode")
        gpus = container_gpus({"resources": per_node}) if isinstance(per_node, dict) else 0
        tpl = {"spec": {"containers": [{"name": "node", "resources": {"limits": {GPU_RESOURCES[0]: gpus}}}]}}
        for name in runtime_groups or TRAINJOB_DEFAULT_GROUPS:
            pods = nodes if name == "node" else 1
            yield GroupRef(name, pods, (), tpl if name == "node" else {"spec": {"containers": []}})


def find_job(docs: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any] | None:
    for d in docs:
        if isinstance(d, dict) and d.get("kind") == kind:
            md = d.get("metadata")
            if isinstance(md, dict) and md.get("name") == name:
                return d
    return None


def controller_labels(kind: str, job: str, group: str, api_version: str = "") -> dict[str, str]:
    """Labels the job's controller adds to every pod of a replica group (used for selectors).

    Only labels whose value is the same on every pod of the group: per-pod values (replica
    index, job index, controller uid, restart counts) cannot be expressed by a label class.
    Checked against the controllers' source:
    - PyTorchJob (training-operator v1.9 pkg/controller.v1/common/pod.go createNewPod): job-name,
      operator-name ``pytorchjob-controller``, replica-type in lower case, and job-role
      ``master`` on the Master replicas (a Master-less job gives it to Worker 0 only: per pod).
      TFJob, XGBoostJob, PaddleJob and JAXJob share that code path with their own operator-name
      (``tfjob-controller``, ...) and IsMasterRole (TFJob Chief/Master, XGBoost and Paddle
      Master; JAX worker 0, a single pod).
    - MPIJob v2beta1 (mpi-operator pkg/controller/mpi_job_controller.go defaultLabels): job-name,
      operator-name ``mpi-operator`` and job-role ``launcher``/``worker``; it sets no replica-type.
      The launcher runs as a batch Job named ``<job>-launcher``, whose controller adds job-name.
    - MPIJob kubeflow.org/v1 (the training-operator's v1 MPI controller, not mpi-operator):
      the PyTorchJob code path with operator-name ``mpijob-controller``, replica-type
      ``launcher``/``worker`` and job-role ``master`` on the Launcher (its IsMasterRole); the
      launcher is a pod of the operator, not a batch Job, so it has no job-name label.
    - JobSet (jobset pkg/controllers/jobset_controller.go labelAndAnnotateObject): jobset-name and
      replicatedjob-name (replicatedjob-replicas and the group labels need the whole JobSet).
    - TrainJob: the trainer creates a JobSet of the TrainJob's name, so its pods carry that
      JobSet's labels.
    """
    if kind == "MPIJob" and api_version == "kubeflow.org/v1":
        kind = "MPIJob/v1"
    if kind in _V1_OPERATORS:
        operator, master_groups = _V1_OPERATORS[kind]
        labels = {
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/replica-type": group.lower(),
            "training.kubeflow.org/operator-name": operator,
        }
        if group.lower() in master_groups:
            labels["training.kubeflow.org/job-role"] = "master"
        return labels
    if kind == "MPIJob":
        labels = {
            "training.kubeflow.org/job-name": job,
            "training.kubeflow.org/job-role": group.lower(),
            "training.kubeflow.org/operator-name": "mpi-operator",
        }
        if group.lower() == "launcher":
            labels["batch.kubernetes.io/job-name"] = f"{job}-launcher"
            labels["job-name"] = f"{job}-launcher"
        return labels
    if kind in ("JobSet", "TrainJob"):
        # A TrainJob's pods belong to the JobSet of the same name that the trainer creates.
        return {"jobset.sigs.k8s.io/jobset-name": job, "jobset.sigs.k8s.io/replicatedjob-name": group}
    return {}

__all__ = ["GroupRef", "TRAINING_KINDS", "KUEUE_KINDS", "PLAIN_POD_TEMPLATES", "Path", "REPLICA_SPECS",
           "container_gpus", "controller_labels", "dig", "find_job", "pod_gpus", "replica_groups"]
