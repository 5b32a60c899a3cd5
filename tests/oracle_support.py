"""The scheduler oracle: topogate's placement verdicts checked against the real kube-scheduler.

A case is an inventory cluster and manifests (training jobs, and other workloads whose pods the
jobs' affinity may follow). The oracle makes the cluster's pools into Node objects and creates
every pod the manifests' controllers would create (the replica groups' labels and pod specs as
``topogate.k8s.jobs`` reads them; no training operator runs), lets kube-scheduler bind them and
compares with ``place_all``:

- every zone the scheduler uses for a group of a job it bound whole is one topogate lists;
- a job topogate calls co-located never has bound pods in two zones, over every run (creation
  order shuffled, the other workloads' pods before the jobs', as they run in the cluster a job
  comes to; later runs also start with pods already bound on random nodes);
- a job topogate calls unschedulable leaves a pod Pending whose PodScheduled message names a
  reason of the kind topogate gives (node filters, pod (anti-)affinity, spread, GPUs);
- a job topogate says may split is split by the scheduler in a node state built for it: one pod
  of one group of that job in the trial's zone, the pods it follows bound before it (in the
  trial's zone, anywhere, elsewhere, or within the zones the group can use) or after it outside
  its zone (five ways per group and zone), then the nodes of that zone are made full (no room
  for another pod: a cordon would not keep out a pod that tolerates every taint) and the rest
  created; each may-split job of a case gets its own such trials, and one whose trials were
  short of GPUs the pods it follows hold is listed apart;
- a job topogate calls schedulable, naming no pending risk, is bound whole on empty nodes in some
  run: left Pending in every run (the first, then up to FOLLOW_UPS more in other orders) is a
  disagreement; left Pending in one run only is listed (the scheduler's order, not a wrong verdict),
  and so is a job whose pods wait for what topogate does not model (GPUs of several sizes on one
  node: packing; GPUs the case's other workloads hold).

Many cases share one scheduler run: each case (and each run of it) gets its own nodes, carrying a
label its pods select (injected into their nodeSelector), and its own namespaces, so neither
node filters nor namespaced pod (anti-)affinity nor spread counting see another case. Zone names
stay as written: zone domains of different cases share a name but never a pod. A case whose
terms span namespaces (namespaceSelector) or whose spread counts every node (nodeAffinityPolicy:
Ignore) would see other cases, so it runs in a batch of its own.
"""

from __future__ import annotations

import copy
import datetime
import json
import random
import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from cluster_support import Cluster as KubeCluster

from topogate.analysis.map.cluster import _strand_risks
from topogate.analysis.placement import JobPlacement, place_all
from topogate.analysis.placement.schedulers import DEFAULT_SCHEDULER, scheduler_of
from topogate.analysis.scheduling import HOSTNAME_LABEL, node_classes, selector_matches, with_label_keys
from topogate.core.labels import REGION_LABEL
from topogate.inventory.model import Cluster
from topogate.k8s.dra import ClaimIndex
from topogate.k8s.jobs import DEFAULT_NAMESPACE, GROUP_LABEL, find_jobs
from topogate.k8s.kinds import PLAIN_POD_TEMPLATES, pod_gpus
from topogate.k8s.podgroups import is_pod_group, read_pod_groups
from topogate.k8s.pods import plain_template

CASE_LABEL = "oracle.topogate.dev/case"  # on nodes and pods: which case (and run) they belong to
ORACLE_LABEL = "oracle.topogate.dev/pod"  # on every pod the oracle makes, to delete them at once
GPU = "nvidia.com/gpu"
IMAGE = "registry.k8s.io/pause:3.10"
MAX_SPLIT_TRIALS = 20  # trials per may-split job (4 (group, zone) pairs, 5 ways each) before it counts as not shown
# Where a split trial's followed pods go (see run_batch): first, in the trial's zone, anywhere,
# elsewhere or within the group's zones; or after the job's first pod, outside its zone.
BEFORE = ("zone", "anywhere", "elsewhere", "within", "after")
WORKERS = 4  # connections creating objects at once
SETTLE = 2.5  # seconds without a change in pod states before a batch counts as settled
# The same for a follow-up run: longer than the scheduler's longest backoff (10 s), so a pod that
# waits for another pod bound late is tried again before the run counts as settled.
PATIENT_SETTLE = 12.0
BATCH_TIMEOUT = 120.0
NODE_PODS = "110"  # pods a Node holds (allocatable); "0" confines it (Api.confine)

# What kube-scheduler's PodScheduled message says per filter (the plugins' status messages),
# and the kinds of topogate reasons each answers.
FILTER_MESSAGES = {
    "node affinity/selector": "nodes", "untolerated taint": "nodes", f"Insufficient {GPU}": "gpus",
    "didn't match pod affinity rules": "affinity", "didn't match pod anti-affinity rules": "anti",
    "didn't satisfy existing pods anti-affinity rules": "anti",
    "didn't match pod topology spread constraints": "spread",
    "cannot allocate all claims": "devices",
    "were unschedulable": "nodes",  # cordoned
    "Too many pods": "nodes",  # confined: another trial's, for a split
}


# The order kube-scheduler's default profile runs its filters in (TaintToleration, NodeAffinity,
# NodeResourcesFit, ..., PodTopologySpread, InterPodAffinity): a node is reported with the first
# one it fails, so a reason of a later filter is masked on a node an earlier one rejects.
FILTER_RANK = {"nodes": 0, "gpus": 1, "spread": 2, "affinity": 3, "anti": 3, "devices": 4, "other": 9}


def reasons_agree(want: set[str], got: set[str]) -> bool:
    """The scheduler's filter kinds on the trial's nodes answer topogate's reasons: one is of a
    kind topogate names, or runs before one (and so masks it on those nodes)."""
    return any(FILTER_RANK[g] <= FILTER_RANK[w] for g in got for w in want)


def reason_kinds(reason: str) -> set[str]:
    """The filter kinds a topogate unschedulable reason may show up as in the scheduler."""
    kinds: set[str] = set()
    if "fits no pool" in reason or "no pool it fits" in reason:
        kinds |= {"nodes", "gpus", "affinity"}
    if "DeviceClass" in reason or "DRA" in reason:
        kinds |= {"devices"}
    if "podAffinity" in reason or "no zone left" in reason or "no zone in common" in reason \
            or "waits" in reason or "do not exist" in reason:
        kinds |= {"affinity"}
    if "podAntiAffinity" in reason or "anti" in reason:
        kinds |= {"anti"}
    if "spread" in reason:
        kinds |= {"spread"}
    if "GPU" in reason or "such pod" in reason or "holds" in reason:
        kinds |= {"gpus", "affinity"}
    return kinds or {"nodes", "gpus", "affinity", "anti", "spread"}


@dataclass(frozen=True)
class Case:
    name: str
    cluster: Cluster
    objects: tuple[dict[str, Any], ...]
    namespace_labels: Mapping[str, Mapping[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class PodPlan:
    """One pod a controller would create: where it comes from and what it is."""

    job: str  # object_id of its training job, "" for a pod of another workload
    group: str
    name: str
    namespace: str
    labels: Mapping[str, str]
    spec: Mapping[str, Any]


def placements(case: Case) -> dict[str, JobPlacement]:
    """topogate's verdicts, read as `topogate check` reads the manifests (analysis.map.cluster):
    jobs, the other workloads' pods as peers, the Workload API's PodGroups."""
    key = id(case)
    if key not in _PLACED or _PLACED[key][0] is not case:
        _PLACED[key] = (case, _place(case))
    return _PLACED[key][1]


_PLACED: dict[int, tuple[Case, dict[str, JobPlacement]]] = {}


def _place(case: Case) -> dict[str, JobPlacement]:
    jobs = find_jobs((o, None) for o in case.objects)
    return place_all(jobs, lambda _j: case.cluster, case.namespace_labels,
                     others=[o for o in case.objects if o.get("kind") in PLAIN_POD_TEMPLATES],
                     pod_groups=read_pod_groups(case.objects),
                     device_classes=ClaimIndex(case.objects).classes)


def pending_risks(case: Case, verdicts: Mapping[str, JobPlacement]) -> dict[str, tuple[str, ...]]:
    """Per job, the scheduling orders topogate warns may leave pods Pending (placement's own and
    the may-strand ones of TG111)."""
    out = {}
    for j in find_jobs((o, None) for o in case.objects):
        pl = verdicts[j.object_id]
        out[j.object_id] = (*pl.pending_risks, *_strand_risks(j, pl, case.cluster.zone_label, pl.placed_whole))
    return out


def uses_workload_api(case: Case) -> bool:
    """PodGroups: the control plane here runs without the Workload API's feature gates
    (GenericWorkload, TopologyAwareWorkloadScheduling), so their constraints cannot be shown."""
    return any(is_pod_group(o) for o in case.objects)


def other_scheduler(case: Case) -> bool:
    """Pods another scheduler places (KAI, Volcano): kube-scheduler here never binds them."""
    return any(scheduler_of(p.spec) != DEFAULT_SCHEDULER for p in pod_plans(case))


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:40] or "x"


def pod_plans(case: Case) -> list[PodPlan]:
    """Every pod of the case's manifests, in manifest order."""
    jobs = find_jobs((o, None) for o in case.objects)
    out: list[PodPlan] = []
    for j in jobs:
        for g in j.groups:
            for i in range(g.pods):
                out.append(PodPlan(j.object_id, g.name, f"{_slug(j.name)}-{_slug(g.name)}-{i}", j.namespace,
                                   g.label_map, g.spec))
    for o in case.objects:
        md = o.get("metadata") or {}
        tpl = plain_template(str(o.get("kind", "")), str(md.get("name", "")), o)
        if tpl is None or GROUP_LABEL in tpl.labels:
            continue
        spec = o.get("spec") or {}
        count = 1 if o.get("kind") == "Pod" else int(spec.get("replicas", spec.get("parallelism", 1)) or 0)
        ns = str(md.get("namespace") or DEFAULT_NAMESPACE)
        for i in range(count):
            out.append(PodPlan("", f"{o['kind']}/{md.get('name')}", f"{_slug(str(md.get('name')))}-{i}", ns,
                               tpl.labels, tpl.spec))
    return out


def needs_own_batch(case: Case) -> bool:
    """Terms that select other namespaces, or spread over every node, would see other cases."""
    text = json.dumps(case.objects)
    return '"namespaceSelector"' in text or '"nodeAffinityPolicy": "Ignore"' in text


# --- making objects -------------------------------------------------------------------------------


def node_objects(cluster: Cluster, tag: str) -> list[dict[str, Any]]:
    """The cluster's pools as Ready Node objects named `tag-zone-pool-i`, labelled with `tag`."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    out = []
    for nc in node_classes(cluster):
        for i in range(nc.nodes):
            name = f"{tag}-{_slug(nc.zone)}-{_slug(nc.pool)}-{i}"
            labels = {**nc.label_map, HOSTNAME_LABEL: name, CASE_LABEL: tag}
            res = {"cpu": "64", "memory": "256Gi", "pods": NODE_PODS}
            if nc.gpus_per_node:
                res[GPU] = str(nc.gpus_per_node)
            taints = [{"key": t.key, "effect": t.effect, **({"value": t.value} if t.value else {})} for t in nc.taints]
            out.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                        "spec": {"taints": taints},
                        "status": {"capacity": res, "allocatable": res, "conditions": [
                            {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "no kubelet",
                             "lastHeartbeatTime": now, "lastTransitionTime": now}]}})
    return out


def _attribute(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": str(v)}


def slice_objects(cluster: Cluster, tag: str) -> list[dict[str, Any]]:
    """A ResourceSlice per node of each pool that declares DRA devices by driver: the devices a
    driver would publish (resource.k8s.io/v1), created as plain objects; no driver runs, none is
    needed for the scheduler to allocate a claim and bind its pod."""
    out = []
    for z in cluster.zones:
        for pool in z.pools:
            entries = [d for d in pool.devices if d.driver]
            for i in range(pool.nodes):
                node = f"{tag}-{_slug(z.name)}-{_slug(pool.name)}-{i}"
                by_driver: dict[str, list[dict[str, Any]]] = {}
                for d in entries:
                    devs = by_driver.setdefault(d.driver, [])
                    for _ in range(d.count):
                        devs.append({"name": f"dev-{len(devs)}",
                                     "attributes": {k: _attribute(v) for k, v in d.attributes}})
                for j, (driver, devs) in enumerate(sorted(by_driver.items())):
                    out.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                                "metadata": {"name": f"{node}-{j}", "labels": {CASE_LABEL: tag}},
                                "spec": {"driver": driver, "nodeName": node,
                                         "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                                         "devices": devs}})
    return out


def claim_objects(case: Case, plans: Sequence[PodPlan], ns_map: Mapping[str, str]) -> list[dict[str, Any]]:
    """The ResourceClaims the pods name: one per pod and template (what the resourceclaim
    controller makes, named here so the pod can name it), and the shared ones of the manifests."""
    templates = {(str(o["metadata"].get("namespace") or DEFAULT_NAMESPACE), o["metadata"]["name"]): o
                 for o in case.objects if o.get("kind") == "ResourceClaimTemplate"}
    shared = {(str(o["metadata"].get("namespace") or DEFAULT_NAMESPACE), o["metadata"]["name"]): o
              for o in case.objects if o.get("kind") == "ResourceClaim"}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for p in plans:
        for c in p.spec.get("resourceClaims") or []:
            if c.get("resourceClaimTemplateName"):
                t = templates.get((p.namespace, c["resourceClaimTemplateName"]))
                if t is not None:
                    name = f"{p.name}-{_slug(c['name'])}"
                    out[(p.namespace, name)] = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                                                "metadata": {"name": name, "namespace": ns_map[p.namespace]},
                                                "spec": copy.deepcopy(t["spec"]["spec"])}
            elif c.get("resourceClaimName"):
                o = shared.get((p.namespace, c["resourceClaimName"]))
                if o is not None:
                    out[(p.namespace, o["metadata"]["name"])] = {
                        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                        "metadata": {"name": o["metadata"]["name"], "namespace": ns_map[p.namespace]},
                        "spec": copy.deepcopy(o["spec"])}
    return list(out.values())


def _pod_spec(spec: Mapping[str, Any], tag: str, ns_map: Mapping[str, str], pod: str = "") -> dict[str, Any]:
    s = copy.deepcopy(dict(spec))
    sel = s.get("nodeSelector")
    sel = sel if isinstance(sel, dict) else {}
    s["nodeSelector"] = {**sel, CASE_LABEL: tag}
    for c in [*(s.get("containers") or []), *(s.get("initContainers") or [])]:
        c["image"] = IMAGE
        for k in ("command", "args", "ports", "env", "envFrom", "volumeMounts", "livenessProbe",
                  "readinessProbe", "startupProbe"):
            c.pop(k, None)
    for k in ("volumes", "serviceAccountName", "serviceAccount", "imagePullSecrets", "priorityClassName"):
        s.pop(k, None)
    s["restartPolicy"] = "Never"
    s["terminationGracePeriodSeconds"] = 0
    for c in s.get("resourceClaims") or []:  # the claim claim_objects made for this pod
        if c.get("resourceClaimTemplateName"):
            del c["resourceClaimTemplateName"]
            c["resourceClaimName"] = f"{pod}-{_slug(c['name'])}"
    aff = s.get("affinity") or {}
    for which in ("podAffinity", "podAntiAffinity"):
        block = aff.get(which) or {}
        for t in block.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if t.get("namespaces"):
                t["namespaces"] = [ns_map.get(n, n) for n in t["namespaces"]]
        for w in block.get("preferredDuringSchedulingIgnoredDuringExecution") or []:
            t = w.get("podAffinityTerm") or {}
            if t.get("namespaces"):
                t["namespaces"] = [ns_map.get(n, n) for n in t["namespaces"]]
    return s


def pod_object(p: PodPlan, tag: str, ns_map: Mapping[str, str]) -> dict[str, Any]:
    labels = {**p.labels, CASE_LABEL: tag, ORACLE_LABEL: "1"}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": p.name, "namespace": ns_map[p.namespace], "labels": labels},
            "spec": _pod_spec(p.spec, tag, ns_map, p.name)}


def blocker(tag: str, node: dict[str, Any], i: int, ns: str, rng: random.Random) -> dict[str, Any]:
    """A pod already running on `node` (bound by name: no scheduler involved), using some CPU and
    sometimes one of its GPUs; it matches no selector of the case."""
    limits = {"cpu": str(rng.choice((8, 16, 32)))}
    gpus = int(node["status"]["allocatable"].get(GPU, "0"))
    if gpus > 1 and rng.random() < 0.3:
        limits[GPU] = "1"
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"{tag}-blocker-{i}", "namespace": ns,
                         "labels": {CASE_LABEL: tag, ORACLE_LABEL: "1", "oracle.topogate.dev/blocker": "1"}},
            "spec": {"nodeName": node["metadata"]["name"], "restartPolicy": "Never",
                     "terminationGracePeriodSeconds": 0,
                     "tolerations": [{"operator": "Exists"}],
                     "containers": [{"name": "b", "image": IMAGE, "resources": {"limits": limits}}]}}


# --- the API server, directly (one keep-alive connection; kubectl per object would be slow) -------


class Api:
    def __init__(self, kube: KubeCluster) -> None:
        import http.client
        import ssl
        from urllib.parse import urlparse

        u = urlparse(kube.server)
        self._ctx = ssl.create_default_context(cafile=str(kube.pki.ca))
        self._host, self._port = u.hostname or "127.0.0.1", u.port or 443
        self._token = kube.token
        self._http = http.client
        self._conn = http.client.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=60)
        self._kube = kube
        self._siblings: list[Api] = []

    def siblings(self, n: int) -> list[Api]:
        """n clients of the same server (this one first), each with its own connection."""
        while len(self._siblings) < n - 1:
            self._siblings.append(Api(self._kube))
        return [self, *self._siblings[: n - 1]]

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
             ok: Iterable[int] = (200, 201, 202)) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self._token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = content_type
        for attempt in range(3):
            try:
                self._conn.request(method, path, body=data, headers=headers)
                resp = self._conn.getresponse()
                raw = resp.read()
                break
            except (OSError, self._http.HTTPException):
                self._conn.close()
                self._conn = self._http.HTTPSConnection(self._host, self._port, context=self._ctx, timeout=60)
                if attempt == 2:
                    raise
        if resp.status not in set(ok):
            raise AssertionError(f"{method} {path}: {resp.status} {raw[:500]!r}")
        return json.loads(raw) if raw else None

    def create(self, obj: Mapping[str, Any]) -> None:
        kind, md = obj["kind"], obj["metadata"]
        if kind == "Namespace":
            self.call("POST", "/api/v1/namespaces", obj, ok=(201, 409))
        elif kind == "Node":
            self.call("POST", "/api/v1/nodes", obj)  # a Node keeps the status it is created with
        elif kind == "Pod":
            self.call("POST", f"/api/v1/namespaces/{md['namespace']}/pods", obj)
        elif kind == "DeviceClass":
            self.call("POST", "/apis/resource.k8s.io/v1/deviceclasses", obj, ok=(201, 409))
        elif kind == "ResourceSlice":
            self.call("POST", "/apis/resource.k8s.io/v1/resourceslices", obj)
        elif kind == "ResourceClaim":
            self.call("POST", f"/apis/resource.k8s.io/v1/namespaces/{md['namespace']}/resourceclaims", obj)
        else:
            raise AssertionError(f"no path for {kind}")

    def pods(self, selector: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = self.call("GET", f"/api/v1/pods?labelSelector={selector}")["items"]
        return out

    def confine(self, node: str, on: bool = True) -> None:
        """Make a node full (room for no more pods) or give it its room back. Not a cordon: a pod
        that tolerates every taint tolerates node.kubernetes.io/unschedulable too, and the
        scheduler's NodeUnschedulable filter lets it onto a cordoned node; a full node keeps out
        every pod, and changes neither spread domains nor affinity counting (they read labels,
        taints and pods, not room)."""
        self.call("PATCH", f"/api/v1/nodes/{node}/status",
                  {"status": {"allocatable": {"pods": "0" if on else NODE_PODS}}},
                  content_type="application/merge-patch+json")

    def delete_pods(self, namespace: str) -> None:
        self.call("DELETE", f"/api/v1/namespaces/{namespace}/pods?gracePeriodSeconds=0",
                  {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": 0})

    def delete_claims(self, namespace: str) -> None:
        self.call("DELETE", f"/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")

    def delete_slices(self, selector: str) -> None:
        self.call("DELETE", f"/apis/resource.k8s.io/v1/resourceslices?labelSelector={selector}")

    def delete_nodes(self, selector: str) -> None:
        self.call("DELETE", f"/api/v1/nodes?labelSelector={selector}")


# --- trials: one realisation of one case ----------------------------------------------------------


@dataclass
class Trial:
    case: Case
    verdicts: Mapping[str, JobPlacement]
    risks: Mapping[str, tuple[str, ...]]  # per job: what topogate warns may leave pods Pending
    tag: str  # node names, the case label and the namespaces' prefix
    mode: str  # "plain", or "split:<job>|<group>@<zone>" (see split_groups)
    seed: int
    blockers: bool  # start with pods already bound on random nodes
    before_in: str = BEFORE[0]  # where a split trial's followed pods go first (one of BEFORE)
    patient: bool = False  # settle with PATIENT_SETTLE (a follow-up run)
    nodes: list[dict[str, Any]] = field(default_factory=list)
    ns_map: dict[str, str] = field(default_factory=dict)
    before: list[dict[str, Any]] = field(default_factory=list)  # a split trial's pods of the other workloads
    first: list[dict[str, Any]] = field(default_factory=list)
    rest: list[dict[str, Any]] = field(default_factory=list)
    pre: list[dict[str, Any]] = field(default_factory=list)
    plan_of: dict[str, PodPlan] = field(default_factory=dict)  # pod name -> its plan
    dra: list[dict[str, Any]] = field(default_factory=list)  # DeviceClasses, ResourceSlices, ResourceClaims

    @property
    def split(self) -> tuple[str, str, str] | None:
        """(job, group, zone) of a split trial: that group's first pod goes first, confined to that
        zone; then that zone is confined instead and the rest created."""
        if not self.mode.startswith("split:"):
            return None
        rest, zone = self.mode.split(":", 1)[1].rsplit("@", 1)
        job, group = rest.split("|", 1)
        return job, group, zone

    @property
    def group_zones(self) -> frozenset[str]:
        """The zones topogate lists for a split trial's group (none for a plain run)."""
        split = self.split
        g = self.verdicts[split[0]].group(split[1]) if split else None
        return frozenset(g.zones) if g is not None else frozenset()

    def build(self) -> None:
        rng = random.Random(self.seed)
        self.nodes = node_objects(self.case.cluster, self.tag)
        plans = pod_plans(self.case)
        nss = sorted({p.namespace for p in plans})
        self.ns_map = {n: f"{self.tag}-{_slug(n)}"[:63] for n in nss}
        self.plan_of = {p.name: p for p in plans}
        self.dra = [*(o for o in self.case.objects if o.get("kind") == "DeviceClass"),
                    *slice_objects(self.case.cluster, self.tag), *claim_objects(self.case, plans, self.ns_map)]
        pods = [pod_object(p, self.tag, self.ns_map) for p in plans]
        if self.mode != "plain" or self.seed % 2:
            rng.shuffle(pods)
        # The other workloads' pods first: they run in the cluster a job comes to, as topogate
        # reads them (a followed Deployment's pod is there before the job's first pod).
        pods.sort(key=lambda p: self.plan_of[p["metadata"]["name"]].job != "")
        split = self.split
        if split is not None:
            # The pods the job's podAffinity follows (and what they follow) run first, as they
            # would in a cluster the job comes to; then the job's chosen pod in the chosen zone,
            # then the rest of the job. The case's other workloads are left out: a split is
            # about this job's placements, not GPUs another job holds or a pod it repels.
            job, group, _ = split
            # Not a followed pod that repels the group following it (or that group it) where the
            # group must join it: a race the pod coming first would win.
            zk = self.case.cluster.zone_label
            followed = {k for k in _followed(plans, job)
                        if not any(_race(q, self.plan_of_group(k), zk) for q in plans if q.job == job)}
            # A followed pod that itself follows the job's pods cannot go before them: it comes
            # with the rest.
            waits = {k for k in followed if any(_selects(self.plan_of_group(k), q) for q in plans if q.job == job)}

            def key(p: dict[str, Any]) -> tuple[str, str]:
                plan = self.plan_of[p["metadata"]["name"]]
                return plan.job, plan.group

            self.before = [p for p in pods if key(p) in followed - waits]
            pods = [p for p in pods if key(p)[0] == job or key(p) in waits]
            i = next(i for i, p in enumerate(pods) if key(p) == (job, group))
            self.first = [pods.pop(i)]
        self.rest = pods
        if self.blockers and self.nodes:
            # Their own namespace: no selector of the case (an empty spread selector) counts them.
            ns = self.ns_map[" blockers"] = f"{self.tag}-blockers"
            self.pre = [blocker(self.tag, rng.choice(self.nodes), i, ns, rng)
                        for i in range(rng.randint(1, max(1, len(self.nodes) // 2)))]

    def plan_of_group(self, k: tuple[str, str]) -> PodPlan:
        return next(p for p in self.plan_of.values() if (p.job, p.group) == k)

    @property
    def zone_of(self) -> dict[str, str]:
        zk = self.case.cluster.zone_label
        return {n["metadata"]["name"]: n["metadata"]["labels"][zk] for n in self.nodes}


def _matching_keys(plan: PodPlan, other: PodPlan, kind: str) -> set[str]:
    """The topology keys of `plan`'s required terms of `kind` (podAffinity, podAntiAffinity)
    that can match the pods of `other`."""
    terms = (plan.spec.get("affinity") or {}).get(kind) or {}
    out = set()
    for t in terms.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
        nss = t.get("namespaces") or [plan.namespace]
        if "namespaceSelector" not in t and other.namespace not in nss:
            continue
        sel = with_label_keys(t.get("labelSelector"), plan.labels, t.get("matchLabelKeys"), t.get("mismatchLabelKeys"))
        if selector_matches(sel, other.labels):
            out.add(str(t.get("topologyKey")))
    return out


def _race(follower: PodPlan, followed: PodPlan, zone_key: str) -> bool:
    """Whether `follower` follows `followed` and one of them repels the other on a key at least
    as wide as the one it follows on (hostname < zone < region; any other key counts as widest
    when it repels, narrowest when followed): it can never join a followed pod already bound.
    Following on the region and repelling on the zone only asks for another zone."""
    rank = {HOSTNAME_LABEL: 0, zone_key: 1, REGION_LABEL: 2}
    follows = [rank.get(k, 0) for k in _matching_keys(follower, followed, "podAffinity")]
    repels = [rank.get(k, 3) for k in (_matching_keys(followed, follower, "podAntiAffinity")
                                       | _matching_keys(follower, followed, "podAntiAffinity"))]
    return bool(follows and repels) and max(repels) >= min(follows)


def _selects(plan: PodPlan, other: PodPlan) -> bool:
    """Whether a required podAffinity term of `plan` can match the pods of `other`."""
    return bool(_matching_keys(plan, other, "podAffinity"))


def _followed(plans: Sequence[PodPlan], job: str) -> set[tuple[str, str]]:
    """(job, group) of every pod outside `job` that its required podAffinity follows, directly
    or through what those follow."""
    groups = {(p.job, p.group): p for p in plans}
    todo = [k for k in groups if k[0] == job]
    seen: set[tuple[str, str]] = set()
    while todo:
        k = todo.pop()
        for other, q in groups.items():
            if other not in seen and other[0] != job and _selects(groups[k], q):
                seen.add(other)
                todo.append(other)
    return seen


def _scheduled_message(pod: Mapping[str, Any]) -> str | None:
    """The PodScheduled=False message of an unbound pod the scheduler has tried, else None."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False":
            return str(c.get("message", ""))
    return None


def _state(pods: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], str]:
    out = {}
    for p in pods:
        md = p["metadata"]
        node = (p.get("spec") or {}).get("nodeName")
        msg = _scheduled_message(p)
        out[(md["namespace"], md["name"])] = f"bound:{node}" if node else (
            f"pending:{msg}" if msg is not None else "new")
    return out


def settle(api: Api, timeout: float = BATCH_TIMEOUT, quiet: float = SETTLE) -> dict[tuple[str, str], dict[str, Any]]:
    """Wait until every oracle pod is bound, or the unbound ones have all been tried and nothing
    changed for `quiet` seconds; the pods by (namespace, name)."""
    deadline = time.monotonic() + timeout
    last: dict[tuple[str, str], str] = {}
    since = time.monotonic()
    while True:
        pods = api.pods(f"{ORACLE_LABEL}=1")
        state = _state(pods)
        now = time.monotonic()
        if state != last:
            last, since = state, now
        done = all(v.startswith("bound:") for v in state.values())
        tried = all(v != "new" for v in state.values())
        if done or (tried and now - since >= quiet) or now > deadline:
            return {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in pods}
        time.sleep(0.3)


_COUNTED = re.compile(r"(\d+) ([^,]+?)(?:,|\.$|$)")


def filter_kinds(message: str, own_nodes: int) -> set[str]:
    """The filter kinds that kept a pod off the trial's own nodes, from its PodScheduled message
    ("0/N nodes are available: 3 Insufficient nvidia.com/gpu, 5 node(s) had untolerated taint ...").
    Another trial's nodes fail the pod's injected nodeSelector, or a taint checked before it, so
    node-filter reasons count only beyond those nodes."""
    head = message.split(" preemption:")[0]
    m = re.match(r"0/(\d+) nodes are available: (.*)", head)
    if not m:
        return {"other"}
    total, body = int(m.group(1)), m.group(2).rstrip(".")
    foreign = total - own_nodes
    kinds: set[str] = set()
    node_count = 0
    for count, what in _COUNTED.findall(body):
        for frag, kind in FILTER_MESSAGES.items():
            if frag in what:
                if kind == "nodes":
                    node_count += int(count)
                else:
                    kinds.add(kind)
                break
        else:
            kinds.add("other")
    if node_count > foreign:
        kinds.add("nodes")
    return kinds


# --- running batches and judging them -------------------------------------------------------------


@dataclass
class Report:
    cases: int = 0
    trials: int = 0
    pods: int = 0
    batches: int = 0
    seconds: float = 0.0
    disagreements: list[str] = field(default_factory=list)
    confirmed_splits: int = 0
    verdicts: dict[str, int] = field(default_factory=dict)  # verdict -> jobs
    # Jobs topogate calls schedulable, with no pending risk named, that the scheduler's own
    # choices left partly Pending on empty nodes in one run but bound whole in another (its order,
    # spreading): listed, not failed, since topogate's verdict is about some placement existing.
    stranded: list[str] = field(default_factory=list)
    # Left Pending where the case depends on what topogate does not model: GPUs of several sizes
    # on shared nodes (which packing the scheduler picks), or GPUs other workloads of the case hold.
    apart: list[str] = field(default_factory=list)
    split_shown: set[tuple[str, str]] = field(default_factory=set)  # (case, job) a split trial split
    # (case, job) whose split trial left it short of GPUs the pods it follows hold
    split_contended: set[tuple[str, str]] = field(default_factory=set)
    # (case, job) -> the first empty-node plain run that left it Pending with nothing said.
    pending_runs: dict[tuple[str, str], str] = field(default_factory=dict)
    bound_whole: set[tuple[str, str]] = field(default_factory=set)  # (case, job) bound whole on empty nodes

    phases: dict[str, float] = field(default_factory=dict)  # seconds per phase of the batches
    _mark: float = 0.0

    def phase(self, name: str, batch_start: float) -> None:
        now = time.monotonic()
        self.phases[name] = self.phases.get(name, 0.0) + now - max(self._mark, batch_start)
        self._mark = now

    def line(self) -> str:
        v = ", ".join(f"{n} {k}" for k, n in sorted(self.verdicts.items()))
        return (f"{self.cases} cases ({v}), {self.trials} trials in {self.batches} scheduler batches, "
                f"{self.pods} pods, {self.confirmed_splits} splits shown, {len(self.stranded)} left Pending "
                f"by the scheduler's order in one run, {len(self.apart)} packing- or contention-dependent, "
                f"{len(self.disagreements)} disagreements, {self.seconds:.1f} s ("
                + ", ".join(f"{k} {v:.1f} s" for k, v in self.phases.items()) + ")")


def verdict(p: JobPlacement) -> str:
    if not p.schedulable:
        return "unschedulable"
    return "colocated" if p.colocated else "may-split"


def split_groups(case: Case, verdicts: Mapping[str, JobPlacement]) -> dict[str, list[str]]:
    """Per may-split job, its (group, zone) pairs as "job|group@zone": each group's first zone,
    groups with the fewest zones first, then each group's second zone, and so on, so that the
    trials a job gets (MAX_SPLIT_TRIALS) start each group first at least once. That group's first
    pod is bound in that zone (the trial's other nodes confined meanwhile), then that zone is
    confined instead, which pushes the rest elsewhere."""
    plans = {(q.job, q.group) for q in pod_plans(case)}
    out: dict[str, list[str]] = {}
    for jid, p in sorted(verdicts.items()):
        if verdict(p) == "may-split":
            groups = sorted((len(g.zones), g.name, g.zones) for g in p.groups
                            if g.pods > 0 and (jid, g.name) in plans and g.zones)
            pairs = [(i, k, name, zones[i]) for k, (_, name, zones) in enumerate(groups) for i in range(len(zones))]
            out[jid] = list(dict.fromkeys(f"{jid}|{n}@{z}" for _, _, n, z in sorted(pairs)))
    return out


def trials_of(case: Case, index: int, runs: int, seed: int) -> list[Trial]:
    """Plain runs (the first on empty nodes, later ones shuffled and with pods already running),
    and for each job that may split a trial with its most confined group first."""
    verdicts = placements(case)
    risks = pending_risks(case, verdicts)
    out = [Trial(case, verdicts, risks, f"o{seed % 1000}-{index}-r{r}", "plain", seed + r, blockers=r > 0)
           for r in range(runs)]
    out += split_trials(case, index, seed, 0)
    return out


def split_trials(case: Case, index: int, seed: int, k: int, shown: Iterable[tuple[str, str]] = ()) -> list[Trial]:
    """The k-th split trial of each may-split job of the case (its k-th group and zone first) whose
    split no trial has shown yet."""
    verdicts = placements(case)
    done = set(shown)
    out = []
    for j, (jid, modes) in enumerate(sorted(split_groups(case, verdicts).items())):
        # Each pair five ways: the pods the job follows first in the pair's zone too, anywhere, in
        # the other zones (in the zone they may fill its GPUs, or be what the rest follows), within
        # the group's zones (a split may need them in two of those), or after the first pod.
        n = len(BEFORE)
        if (case.name, jid) in done or k >= min(n * len(modes), MAX_SPLIT_TRIALS):
            continue
        out.append(Trial(case, verdicts, pending_risks(case, verdicts), f"o{seed % 1000}-{index}-s{k}j{j}",
                         f"split:{modes[k // n]}", seed + 100 + k, False, before_in=BEFORE[k % n]))
    return out


def follow_up_trials(case: Case, index: int, seed: int, k: int) -> list[Trial]:
    """Another plain run on empty nodes, in another order and settled with more patience: does the
    scheduler leave the job Pending again?"""
    verdicts = placements(case)
    return [Trial(case, verdicts, pending_risks(case, verdicts), f"o{seed % 1000}-{index}-p{k}", "plain",
                  seed + 201 + 2 * k, False, patient=True)]


def _each(api: Api, objects: Sequence[Any], what: Any = None) -> None:
    """Create (or with `what`, do that to) the objects over WORKERS connections, in order within
    each connection's share: the API server, not one connection's round trips, sets the pace."""
    import concurrent.futures

    act = what or Api.create
    shares = [objects[i::WORKERS] for i in range(WORKERS)]
    apis = api.siblings(WORKERS)
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        for f in [pool.submit(lambda a, objs: [act(a, o) for o in objs], a, s) for a, s in zip(apis, shares, strict=True)]:
            f.result()


def _create_all(api: Api, objects: Sequence[Mapping[str, Any]]) -> None:
    for o in objects:
        api.create(o)


def run_batch(api: Api, trials: Sequence[Trial], report: Report) -> None:
    """Create every trial's nodes and pods at once, let the scheduler settle, judge, clean up."""
    started = time.monotonic()
    for t in trials:
        t.build()
    _each(api, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
                for t in trials for ns in t.ns_map.values()])
    _each(api, [n for t in trials for n in t.nodes])
    _each(api, [o for t in trials for o in t.dra])
    _each(api, [b for t in trials for b in t.pre])
    splits = [t for t in trials if t.first]

    def others(ts: Sequence[Trial]) -> list[str]:
        return [n for t in ts for n, z in t.zone_of.items() if z != (t.split or ("", "", ""))[2]]

    def inside(ts: Sequence[Trial]) -> list[str]:
        return [n for t in ts for n, z in t.zone_of.items() if z == (t.split or ("", "", ""))[2]]

    if any(t.before for t in splits if t.before_in != "after"):
        # The pods the job follows: in the trial's zone first, in the other zones, or within the
        # zones the group can use (a split may need them in two of those), where the trial asks
        # so (where they can go there); then the rest of them wherever they can.
        held = [*others([t for t in splits if t.before_in == "zone"]),
                *inside([t for t in splits if t.before_in == "elsewhere"]),
                *[n for t in splits if t.before_in == "within" for n, z in t.zone_of.items()
                  if z not in t.group_zones]]
        _each(api, held, Api.confine)
        _each(api, [p for t in splits if t.before_in != "after" for p in t.before])
        report.phase("create", started)
        settle(api)
        if held:
            _each(api, held, lambda a, n: a.confine(n, False))
            settle(api)
        report.phase("settle other workloads", started)
    if splits:
        _each(api, others(splits), Api.confine)
        for t in splits:
            for p in t.first:
                api.create(p)
        report.phase("create", started)
        pods = settle(api)
        report.phase("settle first pods", started)
        for t in splits:
            got = pods.get((t.first[0]["metadata"]["namespace"], t.first[0]["metadata"]["name"])) or {}
            bound = (got.get("spec") or {}).get("nodeName")
            zone = t.zone_of[bound] if bound else ""
            for name, z in t.zone_of.items():
                api.confine(name, z == zone)
        late = [p for t in splits if t.before_in == "after" for p in t.before]
        if late:
            # The pods the job follows after its first pod (a pod that matches its own term goes
            # anywhere while none it matches runs), kept out of that pod's zone.
            _each(api, late)
            settle(api)
            report.phase("settle other workloads", started)
    # Round-robin over the trials, each trial's pods on one connection in the trial's own order.
    lanes: list[list[dict[str, Any]]] = [[] for _ in range(WORKERS)]
    for i, t in enumerate(trials):
        lanes[i % WORKERS].extend(t.rest)
    apis = api.siblings(WORKERS)
    import concurrent.futures
    with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
        for f in [pool.submit(_create_all, a, lane) for a, lane in zip(apis, lanes, strict=True)]:
            f.result()
    report.phase("create", started)
    pods = settle(api, quiet=PATIENT_SETTLE if any(t.patient for t in trials) else SETTLE)
    report.phase("settle", started)
    for t in trials:
        judge(t, pods, report)
        report.trials += 1
        report.pods += len(t.before) + len(t.first) + len(t.rest)
    _each(api, [ns for t in trials for ns in t.ns_map.values()], Api.delete_pods)
    if any(t.dra for t in trials):
        _each(api, [ns for t in trials for ns in t.ns_map.values()], Api.delete_claims)
        api.delete_slices(CASE_LABEL)
    api.delete_nodes(CASE_LABEL)
    report.phase("clean up", started)
    report.batches += 1
    report.seconds += time.monotonic() - started


def _apart(t: Trial, jid: str, messages: Sequence[str]) -> str:
    """Why a job left Pending depends on what topogate does not model, or "": GPUs of several sizes
    on shared nodes (the scheduler's packing), GPUs held by the case's other workloads (any pod
    of the trial short of GPUs, where another workload asks for them: the job may wait for a pod
    that waits for GPUs)."""
    plans = pod_plans(t.case)
    sizes = {pod_gpus(dict(p.spec)) for p in plans} - {0}
    if len(sizes) > 1:
        return "GPUs of several sizes: packing"
    others = any(p.job != jid and pod_gpus(dict(p.spec)) for p in plans)
    if others and any(f"Insufficient {GPU}" in m for m in messages):
        return "GPUs held by the case's other workloads"
    return ""


def _trial_messages(t: Trial, pods: Mapping[tuple[str, str], Mapping[str, Any]]) -> list[str]:
    """Every PodScheduled message of the trial's pods left Pending."""
    out = []
    for p in pods.values():
        if p["metadata"]["labels"].get(CASE_LABEL) == t.tag and not (p.get("spec") or {}).get("nodeName"):
            out.append(_scheduled_message(p) or "")
    return out


def judge(t: Trial, pods: Mapping[tuple[str, str], Mapping[str, Any]], report: Report) -> None:
    zone_of = t.zone_of
    for jid, pl in sorted(t.verdicts.items()):
        mine = [(t.plan_of[name], p) for (ns, name), p in pods.items()
                if p["metadata"]["labels"].get(CASE_LABEL) == t.tag and name in t.plan_of
                and t.plan_of[name].job == jid]
        if not mine:
            continue
        zones: dict[str, set[str]] = {}
        pending: list[tuple[PodPlan, str]] = []
        for plan, p in mine:
            node = (p.get("spec") or {}).get("nodeName")
            if node:
                zones.setdefault(plan.group, set()).add(zone_of[node])
            else:
                pending.append((plan, _scheduled_message(p) or "not tried"))
        used = set().union(*zones.values()) if zones else set()
        where = "; ".join(f"{g}: {', '.join(sorted(z))}" for g, z in sorted(zones.items()))
        said = verdict(pl)
        who = f"{t.case.name} [{t.mode}, seed {t.seed}{', pods running' if t.blockers else ''}] {jid}"
        shortage = any(f"Insufficient {GPU}" in m for _, m in pending)
        split = t.split
        if split is not None:
            if split[0] == jid and len(used) > 1:
                report.split_shown.add((t.case.name, jid))
            elif split[0] == jid and shortage and t.before and _apart(t, jid, _trial_messages(t, pods)):
                report.split_contended.add((t.case.name, jid))
            continue
        if not pending:
            if said == "unschedulable":
                report.disagreements.append(f"{who}: topogate says unschedulable "
                                            f"({'; '.join(pl.unschedulable_reasons)}), the scheduler bound every pod "
                                            f"({where})")
            elif not t.blockers:
                report.bound_whole.add((t.case.name, jid))
            for g, zs in zones.items():
                gp = pl.group(g)
                allowed = set(gp.zones) if gp is not None else set()
                if not zs <= allowed:
                    report.disagreements.append(f"{who}: {g} was bound in {', '.join(sorted(zs - allowed))}, "
                                                f"which topogate does not list (it lists {', '.join(sorted(allowed)) or 'none'})")
        if said == "colocated" and len(used) > 1:
            report.disagreements.append(f"{who}: topogate says co-located, the scheduler split it ({where})")
        if said == "unschedulable" and pending:
            want = set().union(*(reason_kinds(r) for r in pl.unschedulable_reasons))
            own = len(t.nodes)
            got = [filter_kinds(m, own) for _, m in pending]
            if not any(reasons_agree(want, g) for g in got):
                report.disagreements.append(
                    f"{who}: topogate says unschedulable ({'; '.join(pl.unschedulable_reasons)}), the scheduler's "
                    f"reasons are of another kind: {pending[0][1]}")
        if said != "unschedulable" and pending and not t.blockers and not t.risks[jid]:
            line = (f"{who}: topogate says {said} with no pending risk, the scheduler left "
                    f"{len(pending)} pod(s) Pending: {pending[0][0].name}: {pending[0][1]}")
            why = _apart(t, jid, _trial_messages(t, pods))
            if why:
                report.apart.append(f"{line} ({why})")
            else:
                report.pending_runs.setdefault((t.case.name, jid), line)


@dataclass
class Bound:
    pods: list[dict[str, Any]]
    claims: list[dict[str, Any]]
    zone_of: dict[str, str]


def bound_once(api: Api, case: Case, tag: str) -> Bound:
    """One plain run of a case on empty nodes, its pods (and their ResourceClaims) as the
    scheduler left them; everything is deleted afterwards."""
    t = Trial(case, placements(case), pending_risks(case, placements(case)), tag, "plain", 0, False)
    t.build()
    try:
        _each(api, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}} for ns in t.ns_map.values()])
        _each(api, t.nodes)
        _each(api, t.dra)
        _create_all(api, t.rest)
        pods = [p for p in settle(api).values() if p["metadata"]["labels"].get(CASE_LABEL) == tag]
        claims = [c for ns in t.ns_map.values()
                  for c in api.call("GET", f"/apis/resource.k8s.io/v1/namespaces/{ns}/resourceclaims")["items"]]
        return Bound(pods, claims, t.zone_of)
    finally:
        _each(api, list(t.ns_map.values()), Api.delete_pods)
        _each(api, list(t.ns_map.values()), Api.delete_claims)
        api.delete_slices(CASE_LABEL)
        api.delete_nodes(CASE_LABEL)


def _batched(api: Api, shared: Sequence[Trial], alone: Sequence[Trial], report: Report,
             max_nodes: int, max_pods: int) -> None:
    batch: list[Trial] = []
    nodes = pods = 0
    for t in shared:
        n = sum(nc.nodes for nc in node_classes(t.case.cluster))
        k = len(pod_plans(t.case))
        if batch and (nodes + n > max_nodes or pods + k > max_pods):
            run_batch(api, batch, report)
            batch, nodes, pods = [], 0, 0
        batch.append(t)
        nodes, pods = nodes + n, pods + k
    if batch:
        run_batch(api, batch, report)
    for t in alone:
        run_batch(api, [t], report)


def _run(api: Api, trials: Sequence[Trial], report: Report, max_nodes: int, max_pods: int) -> None:
    _batched(api, [t for t in trials if not needs_own_batch(t.case)], [t for t in trials if needs_own_batch(t.case)],
             report, max_nodes, max_pods)


FOLLOW_UPS = 2  # more empty-node runs for a job one left Pending with nothing said


def run_cases(api: Api, cases: Sequence[Case], *, runs: int = 2, seed: int = 0,
              max_nodes: int = 400, max_pods: int = 1200) -> Report:
    """Every case in as few scheduler batches as the node and pod budgets allow."""
    report = Report(cases=len(cases))
    first: list[Trial] = []
    for i, c in enumerate(cases):
        ts = trials_of(c, i, runs, seed + 1000 * i)
        first.extend(ts)
        for pl in ts[0].verdicts.values():
            report.verdicts[verdict(pl)] = report.verdicts.get(verdict(pl), 0) + 1
    _run(api, first, report, max_nodes, max_pods)
    # A split not shown yet gets its next group first, until its groups run out.
    for k in range(1, MAX_SPLIT_TRIALS):
        more = [t for i, c in enumerate(cases) for t in split_trials(c, i, seed + 1000 * i, k, report.split_shown)]
        if not more:
            break
        _run(api, more, report, max_nodes, max_pods)
    # A job left Pending on empty nodes with nothing said runs again, in other orders.
    for k in range(FOLLOW_UPS):
        again = {case for case, jid in report.pending_runs if (case, jid) not in report.bound_whole}
        more = [t for i, c in enumerate(cases) if c.name in again for t in follow_up_trials(c, i, seed + 1000 * i, k)]
        if not more:
            break
        _run(api, more, report, max_nodes, max_pods)
    for (case, jid), line in sorted(report.pending_runs.items()):
        if (case, jid) in report.bound_whole:
            report.stranded.append(line)
        else:
            report.disagreements.append(f"{line}; left Pending on empty nodes in every run ({1 + FOLLOW_UPS})")
    for c in cases:
        verdicts = placements(c)
        for jid, pl in sorted(verdicts.items()):
            if verdict(pl) == "may-split":
                if (c.name, jid) in report.split_shown:
                    report.confirmed_splits += 1
                elif (c.name, jid) in report.split_contended:
                    report.apart.append(f"{c.name} {jid}: topogate says it may split, no trial split it: the pods "
                                        "it follows hold the GPUs it needs (contention between workloads)")
                else:
                    report.disagreements.append(f"{c.name} {jid}: topogate says it may split "
                                                f"({'; '.join(pl.may_split_reasons)}), no trial split it")
    return report
