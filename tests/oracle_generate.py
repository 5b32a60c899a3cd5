"""Random cases for the scheduler oracle (tests/oracle_support.py): an inventory cluster and the
manifests of one to three training jobs, sometimes with a plain Deployment beside them (which
sometimes carries the first job's `app` label, so that job's selectors count its pods).

Clusters: 2-4 zones of uneven size, a GPU pool (1-5 nodes of 2-8 GPUs, a `gpu-mem` label for
Gt/Lt, up to three taints: NoSchedule, NoExecute, PreferNoSchedule) and/or a CPU pool.
Jobs: PyTorchJob (Master, Workers), MPIJob v2beta1 (Launcher, Workers), JobSet (1-3 replicated
jobs, each replicas x parallelism) and TrainJob (a ClusterTrainingRuntime of 1-3 replicated jobs,
the trainer's sized by numNodes and resourcesPerNode). Each group draws tolerations (none, some,
or every taint), a nodeSelector, required node affinity (zone In/NotIn, Gt/Lt, ORed terms),
required and preferred pod affinity and anti-affinity (zone, hostname or region key; to the
group itself, its job, the coordinator, another group, another job or the Deployment), and spread
constraints (zone or hostname key, maxSkew, DoNotSchedule or ScheduleAnyway, minDomains,
matchLabelKeys, nodeAffinityPolicy, nodeTaintsPolicy). Most cases ask for GPUs of one size, so
the scheduler's packing never strands a pod some other packing would place; a few mix sizes and
are judged apart (oracle_support._apart).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from oracle_support import Case

from topogate.inventory.model import Cluster, Pool, Taint, Zone

ZK = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
REGION = "topology.kubernetes.io/region"
GPU_TAINT = Taint("gpu", "NoSchedule", "present")
DEDICATED = Taint("dedicated", "NoExecute", "ml")
SPOT = Taint("spot", "PreferNoSchedule", "true")
TOLERATE = [{"key": "gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"}]
TOLERATIONS: tuple[list[dict[str, Any]], ...] = (
    [],
    TOLERATE,
    [{"key": "gpu", "operator": "Exists"}],
    [*TOLERATE, {"key": "dedicated", "operator": "Equal", "value": "ml", "effect": "NoExecute"}],
    [{"key": "dedicated", "operator": "Exists"}],
    [{"operator": "Exists"}],  # every taint, cordons included
)
NS = "ml"


def random_cluster(rng: random.Random, name: str) -> Cluster:
    zones = []
    for z in range(rng.randint(2, 4)):
        pools = []
        extra = 2 if rng.random() < 0.15 else 0  # uneven zones: now and then a large one
        if rng.random() < 0.8 or z == 0:
            taints = [t for t, p in ((GPU_TAINT, 0.55), (DEDICATED, 0.2), (SPOT, 0.15)) if rng.random() < p]
            labels = (("gpu-mem", rng.choice(("40", "80"))), ("node-type", "gpu"))
            pools.append(Pool("gpu", rng.choice((1, 1, 2, 3)) + extra, rng.choice((2, 4, 8, 8)), labels, tuple(taints)))
        if rng.random() < 0.5 or not pools:
            taints = [DEDICATED] if rng.random() < 0.1 else []
            pools.append(Pool("cpu", rng.choice((1, 1, 2)), 0, (("node-type", "cpu"),), tuple(taints)))
        zones.append(Zone(f"zone-{'abcd'[z]}", tuple(pools)))
    return Cluster(name, "aws", "us-east-1", zones=tuple(zones))


@dataclass(frozen=True)
class Member:
    """A group of pods in the case that terms can select."""

    job: str
    group: str
    labels: dict[str, str]
    namespace: str = NS


def _term(labels: dict[str, str], key: str, namespaces: list[str] | None = None) -> dict[str, Any]:
    t: dict[str, Any] = {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
    if namespaces:
        t["namespaces"] = namespaces
    return t


def _key(rng: random.Random) -> str:
    r = rng.random()
    return HOST if r < 0.1 else REGION if r < 0.18 else ZK


class CaseGen:
    """One case's workloads: what each group's terms can point at is known before any is drawn."""

    def __init__(self, rng: random.Random, cluster: Cluster, members: list[Member], gpus: int, mixed: bool) -> None:
        self.rng, self.cluster, self.members, self.gpus, self.mixed = rng, cluster, members, gpus, mixed
        self.zones = [z.name for z in cluster.zones]

    def gpu_size(self) -> int:
        return self.rng.choice((1, 2, 4)) if self.mixed else self.gpus

    def _target(self, me: Member, coordinator: Member | None) -> tuple[dict[str, str], list[str] | None]:
        rng = self.rng
        mine = [m for m in self.members if m.job == me.job and m is not me]
        others = [m for m in self.members if m.job != me.job]
        choices: list[tuple[dict[str, str], list[str] | None]] = [({"app": me.job}, None), (me.labels, None)]
        if coordinator is not None and coordinator is not me:
            choices.append((coordinator.labels, None))
        choices += [(m.labels, None) for m in mine]
        if others and rng.random() < 0.35:
            o = rng.choice(others)
            sel = {"app": o.job} if o.job != o.group and rng.random() < 0.5 else o.labels
            return sel, ([o.namespace] if o.namespace != me.namespace else None)
        return rng.choice(choices)

    def node_affinity(self, gpus: int) -> dict[str, Any] | None:
        rng = self.rng
        r = rng.random()
        if r < 0.18:
            pick = rng.sample(self.zones, rng.randint(1, len(self.zones)))
            exprs = [{"key": ZK, "operator": "In", "values": sorted(pick)}]
        elif r < 0.23:
            exprs = [{"key": ZK, "operator": "NotIn", "values": [rng.choice(self.zones)]}]
        elif r < 0.29:
            exprs = [{"key": "gpu-mem", "operator": rng.choice(("Gt", "Lt")), "values": [rng.choice(("50", "60"))]}]
        elif r < 0.33:
            return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": ZK, "operator": "In", "values": [rng.choice(self.zones)]}]},
                {"matchExpressions": [{"key": "gpu-mem", "operator": "Gt", "values": ["50"]}]}]}}
        else:
            return None
        return {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": exprs}]}}

    def spec(self, me: Member, gpus: int, coordinator: Member | None) -> dict[str, Any]:
        rng = self.rng
        container: dict[str, Any] = {"name": "main", "image": "example/train:1"}
        if gpus:
            container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
        spec: dict[str, Any] = {"containers": [container]}
        if rng.random() < (0.8 if gpus else 0.45):
            spec["tolerations"] = rng.choice(TOLERATIONS[1:])
        if rng.random() < 0.2:
            spec["nodeSelector"] = {"node-type": "gpu" if gpus else rng.choice(("gpu", "cpu"))}
        aff: dict[str, Any] = {}
        na = self.node_affinity(gpus)
        if na:
            aff["nodeAffinity"] = na
        required: list[dict[str, Any]] = []
        if rng.random() < 0.45:
            sel, nss = self._target(me, coordinator)
            required.append(_term(sel, _key(rng), nss))
            if rng.random() < 0.08:
                sel2, nss2 = self._target(me, coordinator)
                required.append(_term(sel2, rng.choice((ZK, HOST, REGION)), nss2))
        anti: list[dict[str, Any]] = []
        if rng.random() < 0.12:
            anti.append(_term(me.labels, HOST))
        if rng.random() < 0.06:
            anti.append(_term(me.labels, ZK))
        if rng.random() < 0.12:
            sel, nss = self._target(me, coordinator)
            if sel != me.labels:
                anti.append(_term(sel, ZK, nss))
        if required and rng.random() < 0.06:  # the same pods both followed and repelled
            anti.append(dict(required[0], topologyKey=required[0]["topologyKey"]))
        if required or rng.random() < 0.12:
            aff["podAffinity"] = {}
            if required:
                aff["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = required
            if rng.random() < 0.25:
                sel, nss = self._target(me, coordinator)
                aff["podAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": rng.randint(1, 100), "podAffinityTerm": _term(sel, ZK, nss)}]
            if not aff["podAffinity"]:
                del aff["podAffinity"]
        if anti or rng.random() < 0.1:
            aff["podAntiAffinity"] = {}
            if anti:
                aff["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"] = anti
            if rng.random() < 0.3:
                aff["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"] = [
                    {"weight": 50, "podAffinityTerm": _term(me.labels, rng.choice((HOST, ZK)))}]
            if not aff["podAntiAffinity"]:
                del aff["podAntiAffinity"]
        if rng.random() < 0.08:
            aff.setdefault("nodeAffinity", {})["preferredDuringSchedulingIgnoredDuringExecution"] = [
                {"weight": 10, "preference": {"matchExpressions": [{"key": ZK, "operator": "In",
                                                                    "values": [rng.choice(self.zones)]}]}}]
        if aff:
            spec["affinity"] = aff
        if rng.random() < 0.22:
            first = self.spread(me)
            spec["topologySpreadConstraints"] = [first]
            if rng.random() < 0.15:  # a second one must differ in key or whenUnsatisfiable
                second = self.spread(me)
                second["topologyKey"] = HOST if first["topologyKey"] == ZK else ZK
                spec["topologySpreadConstraints"].append(second)
        return spec

    def spread(self, me: Member) -> dict[str, Any]:
        rng = self.rng
        hard = rng.random() < 0.75
        c: dict[str, Any] = {"maxSkew": rng.choice((1, 1, 2)), "topologyKey": ZK if rng.random() < 0.85 else HOST,
                             "whenUnsatisfiable": "DoNotSchedule" if hard else "ScheduleAnyway"}
        if rng.random() < 0.3:
            c["labelSelector"] = {"matchLabels": {"app": me.job}}
            if rng.random() < 0.5:
                c["matchLabelKeys"] = ["role"]  # counts the group's own pods only
        else:
            c["labelSelector"] = {"matchLabels": me.labels}
        if hard and rng.random() < 0.25:
            c["minDomains"] = rng.randint(2, 4)
        r = rng.random()
        if r < 0.1:
            c["nodeAffinityPolicy"] = "Ignore"
        elif r < 0.2:
            c["nodeAffinityPolicy"] = "Honor"
        if rng.random() < 0.25:
            c["nodeTaintsPolicy"] = rng.choice(("Honor", "Ignore"))
        return c


def _template(labels: dict[str, str], spec: dict[str, Any], restart: str) -> dict[str, Any]:
    return {"metadata": {"labels": labels}, "spec": {**spec, "restartPolicy": restart}}


def _kubeflow(gen: CaseGen, kind: str, name: str, groups: list[tuple[Member, int]]) -> dict[str, Any]:
    coordinator = groups[0][0]
    specs = {}
    for m, n in groups:
        g_gpus = gen.gpu_size() if (m is not coordinator or gen.rng.random() < 0.3) else 0
        specs[m.group] = {"replicas": n, "restartPolicy": "OnFailure",
                          "template": _template(m.labels, gen.spec(m, g_gpus, coordinator), "OnFailure")}
    if kind == "MPIJob":
        return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name, "namespace": NS},
                "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": specs}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": name, "namespace": NS},
            "spec": {"pytorchReplicaSpecs": specs}}


def _replicated(gen: CaseGen, groups: list[tuple[Member, int, int]], trainer: str = "") -> list[dict[str, Any]]:
    out = []
    for i, (m, replicas, parallelism) in enumerate(groups):
        g_gpus = gen.gpu_size() if (i == 0 or gen.rng.random() < 0.5) and m.group != trainer else 0
        labels = dict(m.labels)
        if m.group == trainer:
            labels["trainer.kubeflow.org/trainjob-ancestor-step"] = "trainer"
        out.append({"name": m.group, "replicas": replicas, "template": {
            "metadata": {"labels": labels} if m.group == trainer else {},
            "spec": {"parallelism": parallelism, "completions": parallelism,
                     "template": _template(m.labels, gen.spec(m, g_gpus, None), "Never")}}})
    return out


def _plan(rng: random.Random, kind: str, name: str) -> list[tuple[Member, int, int]]:
    """The groups of a job: (member, replicas, parallelism)."""
    def member(group: str) -> Member:
        return Member(name, group, {"app": name, "role": group.lower()})

    if kind in ("PyTorchJob", "MPIJob"):
        lead = "Master" if kind == "PyTorchJob" else "Launcher"
        return [(member(lead), 1, 1), (member("Worker"), rng.randint(1, 4), 1)]
    if kind == "TrainJob":
        out = [(member("node"), 1, rng.randint(1, 4))]
        return out + [(member(g), 1, 1) for g in rng.sample(("launcher", "initializer"), rng.randint(0, 2))]
    return [(member(f"g{i}"), rng.randint(1, 2), rng.randint(1, 3)) for i in range(rng.randint(1, 3))]


def random_case(rng: random.Random, name: str) -> Case:
    cluster = random_cluster(rng, name)
    kinds = [rng.choice(("PyTorchJob", "MPIJob", "JobSet", "TrainJob")) for _ in range(rng.choice((1, 1, 2, 2, 3)))]
    plans = {f"j{i}": (k, _plan(rng, k, f"j{i}")) for i, k in enumerate(kinds)}
    deploy = None
    if rng.random() < 0.4:
        ns = "data" if rng.random() < 0.15 else NS
        # Sometimes it carries the first job's `app` label: that job's selectors (its spread's,
        # its terms on its whole job) then count or match the Deployment's pods too.
        app = "j0" if rng.random() < 0.25 else "fs"
        deploy = (Member("fs", "Deployment/fs", {"app": app, "tier": "store"}, ns), rng.choice((1, 1, 1, 2, 3)))
    members = [m for _, groups in plans.values() for m, _, _ in groups] + ([deploy[0]] if deploy else [])
    gen = CaseGen(rng, cluster, members, rng.choice((1, 1, 2, 4)), rng.random() < 0.08)
    objects: list[dict[str, Any]] = []
    for job, (kind, groups) in plans.items():
        if kind in ("PyTorchJob", "MPIJob"):
            objects.append(_kubeflow(gen, kind, job, [(m, r) for m, r, _ in groups]))
        elif kind == "JobSet":
            objects.append({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                            "metadata": {"name": job, "namespace": NS},
                            "spec": {"replicatedJobs": _replicated(gen, groups)}})
        else:
            trainer = groups[0]
            rjobs = _replicated(gen, [(trainer[0], 1, 1), *groups[1:]], trainer="node")
            objects.append({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
                            "metadata": {"name": f"{name}-{job}"},
                            "spec": {"mlPolicy": {"numNodes": 1}, "template": {"spec": {"replicatedJobs": rjobs}}}})
            tgpus = gen.gpu_size() if rng.random() < 0.8 else 0
            trainer_spec: dict[str, Any] = {"numNodes": trainer[2]}
            if tgpus:
                trainer_spec["resourcesPerNode"] = {"limits": {"nvidia.com/gpu": tgpus}}
            objects.append({"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                            "metadata": {"name": job, "namespace": NS},
                            "spec": {"runtimeRef": {"name": f"{name}-{job}"}, "trainer": trainer_spec}})
    if deploy is not None:
        m, replicas = deploy
        spec = gen.spec(m, 0, None)
        objects.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "fs", "namespace": m.namespace},
                        "spec": {"replicas": replicas, "selector": {"matchLabels": m.labels},
                                 "template": {"metadata": {"labels": m.labels}, "spec": spec}}})
    return Case(name, cluster, tuple(objects))


def generated_cases(count: int, seed: int) -> list[Case]:
    rng = random.Random(seed)
    return [random_case(rng, f"generated-{seed}-{i}") for i in range(count)]
