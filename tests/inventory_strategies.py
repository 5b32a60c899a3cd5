"""Hypothesis strategies for whole inventories, as a user would write them: YAML data with every
property and enum value of topogate/schemas/inventory.schema.json, names that are valid but
edgy (one character, 63 characters, all digits), and cross-references (clusters, zones,
network zones, workloads, queues, doors) that mostly resolve, so most inventories are accepted.

Values the schema allows but the generators might not expect (free-text fields such as
`region`, `targetRevision`, `argocdProject`, `destinationServer`) are drawn from text that is
valid for the schema yet awkward downstream: spaces, unicode, YAML indicators.

`InventoryCase` is the inventory plus the files of every workload's base; `write` puts both in
a scratch repository (with a .git, so bases resolve inside it).
"""

from __future__ import annotations

import copy
import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from topogate.k8s import kinds

KINDS = ["PyTorchJob", "MPIJob", "TrainJob", "JobSet", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob"]
assert sorted(KINDS) == sorted(kinds.TRAINING_KINDS)

# Valid DNS-1123 labels, the boundaries included.
DNS_NAMES = st.sampled_from(["a", "b", "c", "0", "9z", "a-b", "gpu", "x" * 63, "a" + "-" * 61 + "z",
                             "team-1", "kustomization", "default", "kube-system"])
LABEL_KEYS = st.sampled_from(["node-type", "gpu", "a", "example.com/pool", "x.y-z.io/A_b.c",
                              "k" * 63, "nvidia.com/gpu.product", "Capital", "l1", "l2", "l3", "l4",
                              "l5", "topology.kubernetes.io/zone", "kubernetes.io/hostname"])
LABEL_VALUES = st.sampled_from(["", "gpu", "a", "A_b.c-d", "v" * 63, "0", "present", "true"])
# Free text the schema allows anywhere it says only `type: string` (minLength 1 where it says so).
ODD_TEXT = st.sampled_from(["x", "us-east-1", "a b", "ünïcode", "x:y", "#not-a-comment", "- item",
                            "{a: b}", "*", "&anchor", "'quoted'", '"dq"', "\\", "line1\nline2",
                            "tab\there", "v1.2.3", "feature/x", "refs/heads/main", "0", "true",
                            "null", "~", "y" * 300, "%", "@", "!tag", "é/ü", "²", "a\x05b", "\x89"])
PORTS = st.one_of(st.sampled_from([1, 22, 53, 443, 2049, 8080, 65535]), st.integers(1, 65535))


def _maybe(draw: st.DrawFn, p_strategy: st.SearchStrategy[Any]) -> Any:
    """A value or the sentinel _ABSENT (the field is left out)."""
    return draw(p_strategy) if draw(st.booleans()) else _ABSENT


_ABSENT = object()


def _put(d: dict[str, Any], key: str, value: Any) -> None:
    if value is not _ABSENT:
        d[key] = value


# Strategies are built once, here: building one per draw costs more than drawing from it.
# Label maps: mostly a few; sometimes more than a Kueue ResourceFlavor takes (8 node labels).
LABELS = st.one_of(*[st.dictionaries(LABEL_KEYS, LABEL_VALUES, max_size=n) for n in (3, 3, 3, 10)])
SOME_LABELS = st.dictionaries(LABEL_KEYS, LABEL_VALUES, min_size=1, max_size=3)
_TAINT = st.fixed_dictionaries(
    {"key": LABEL_KEYS, "effect": st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute"])},
    optional={"value": LABEL_VALUES})
TAINTS = st.one_of(*[st.lists(_TAINT, max_size=n) for n in (3, 3, 3, 10)])
_NODES = st.sampled_from([0, 1, 2, 4, 4, 1000])
# an autoscaled pool's {min, max} (min <= max, as the loader requires)
_SCALED = st.tuples(st.sampled_from([0, 1, 2]), st.sampled_from([2, 4, 16])).map(
    lambda t: {"min": min(t), "max": max(t)})
_GPUS_PER_NODE = st.sampled_from([0, 1, 4, 8, 8, 16])
_CPU = st.sampled_from([0, 1, 96, "500m", "32", "0m", "1000000"])
_MEMORY = st.sampled_from(["0", "1", "128Gi", "768Mi", "1T", "2Pi", "1000k"])
# DRA devices a pool's nodes offer: by DeviceClass, or by driver with attributes a class selects on
# (one entry per class, driver and attributes: the loader rejects a repeat).
_ATTRIBUTES = st.dictionaries(st.sampled_from(["productName", "memory", "mig", "a"]),
                              st.one_of(st.sampled_from(["H100", "A100", "", "x y"]), st.integers(0, 80),
                                        st.booleans()), max_size=3)
_DEVICE = st.one_of(
    st.fixed_dictionaries({"deviceClass": st.sampled_from(["gpu.nvidia.com", "gpu.example.com", "x"]),
                           "count": st.sampled_from([1, 8, 64])}),
    st.fixed_dictionaries({"driver": st.sampled_from(["gpu.nvidia.com", "dra.example.com"]),
                           "count": st.sampled_from([1, 8])},
                          optional={"attributes": _ATTRIBUTES, "deviceClass": st.just("gpu.nvidia.com")}))
_DEVICES = st.lists(_DEVICE, min_size=1, max_size=3,
                    unique_by=lambda d: json.dumps({k: v for k, v in d.items() if k != "count"}, sort_keys=True))
_PROVIDERS = st.sampled_from(["aws", "gcp", "azure", "other"])
_REGIONS = st.one_of(st.sampled_from(["us-east-1", "europe-west4"]), ODD_TEXT)
_ZONE_LABELS = st.sampled_from(["topology.kubernetes.io/zone", "example.com/zone", "zone",
                                "failure-domain.beta.kubernetes.io/zone"])
_ADMISSION = st.one_of(st.just({}), st.fixed_dictionaries({
    "validationActions": st.sampled_from([["Deny"], ["Warn"], ["Audit"], ["Warn", "Audit"],
                                          ["Deny", "Audit"], ["Audit", "Warn"]])}))
# The cluster's Cilium agent: every setting, each value the schema allows, `labels` in the
# agent's own syntax (entries that compile; the bad-inventory corpus has those that do not).
_CILIUM = st.fixed_dictionaries({}, optional={
    "version": st.sampled_from(["1.18", "1.19.0", "v1.20.2", "1.20", "1.20.1", "1.20.9"]),
    "labels": st.sampled_from(["", "k8s:app", "k8s:!team k8s:io.kubernetes.pod.namespace",
                               "!topology\\.kubernetes\\.io", "reserved:.* k8s:role k8s:app",
                               "k8s:example.com/pool k8s:(a|b)$"]),
    "policyCIDRMatchMode": st.sampled_from(["", "nodes", "pods", "nodes pods", " pods "]),
    "enableNodeSelectorLabels": st.booleans(),
    "allowLocalhost": st.sampled_from(["auto", "always", "policy"]),
    "policyEnforcement": st.sampled_from(["default", "always", "never"]),
    "clusterName": st.sampled_from(["default", "a", "gpu-east", "c" * 32]),
    "kubeAPIServer": st.sampled_from(["remote-node", "host", "world"]),
    "enableK8sClusterNetworkPolicy": st.booleans(),
})
_ZONE_COUNTS = st.sampled_from([1, 2, 2, 3])
_DOOR_COUNTS = st.sampled_from([1, 2, 2, 0])
_WORKLOAD_COUNTS = st.sampled_from([1, 2, 3, 0])
_NZ_NAMES = DNS_NAMES.filter(lambda n: n != "kustomization")


@st.composite
def _pool(draw: st.DrawFn, name: str, kueue_cpu: bool | None, kueue_mem: bool | None) -> dict[str, Any]:
    p: dict[str, Any] = {"name": name, "nodes": draw(_SCALED) if draw(st.integers(0, 5)) == 0 else draw(_NODES)}
    if draw(st.integers(0, 3)):  # mostly GPU pools, so that most jobs fit
        p["gpusPerNode"] = draw(_GPUS_PER_NODE)
    _put(p, "labels", _maybe(draw, LABELS))
    _put(p, "taints", _maybe(draw, TAINTS))
    if draw(st.integers(0, 4)) == 0:
        p["devices"] = draw(_DEVICES)
    # Kueue wants cpu/memory on every pool or on none (the loader says so): decide per cluster.
    cpu = draw(st.booleans()) if kueue_cpu is None else kueue_cpu
    mem = draw(st.booleans()) if kueue_mem is None else kueue_mem
    if cpu:
        p["cpuPerNode"] = draw(_CPU)
    if mem:
        p["memoryPerNode"] = draw(_MEMORY)
    return p


@st.composite
def _cluster(draw: st.DrawFn, name: str) -> dict[str, Any]:
    c: dict[str, Any] = {"name": name, "provider": draw(_PROVIDERS), "region": draw(_REGIONS)}
    _put(c, "zoneLabel", _maybe(draw, _ZONE_LABELS))
    if draw(st.booleans()):
        c["cost"] = draw(_COST)
        if c["cost"].get("tagKey") == "NAME":
            c["cost"]["tagKey"] = f"kubernetes.io/cluster/{name}"
    kueue = draw(st.booleans())
    if kueue:
        c["kueue"] = {"queue": draw(DNS_NAMES)}
    _put(c, "admission", _maybe(draw, _ADMISSION))
    _put(c, "trainingRuntimes", _maybe(draw, st.lists(st.one_of(DNS_NAMES, st.builds(
        lambda ns, n: f"{ns}/{n}", DNS_NAMES, DNS_NAMES)), max_size=2, unique=True)))
    kcpu, kmem = (draw(st.booleans()), draw(st.booleans())) if kueue else (None, None)
    n_zones = draw(_ZONE_COUNTS)
    znames = draw(st.lists(DNS_NAMES, min_size=n_zones, max_size=n_zones, unique=True))
    zones = []
    for zn in znames:
        z: dict[str, Any] = {"name": zn}
        pnames = draw(st.lists(DNS_NAMES, min_size=draw(st.sampled_from([0, 1, 1])), max_size=2, unique=True))
        if pnames or draw(st.booleans()):
            z["pools"] = [draw(_pool(pn, kcpu, kmem)) for pn in pnames]
        zones.append(z)
    c["zones"] = zones
    # Partition the zones into network zones: each zone in exactly one.
    # Mostly one network zone per zone: doors need two, and a boundary is what topogate draws.
    n_nz = len(znames) if draw(st.booleans()) else draw(st.integers(1, len(znames)))
    nz_names = draw(st.lists(_NZ_NAMES, min_size=n_nz, max_size=n_nz, unique=True))
    members: list[list[str]] = [[] for _ in nz_names]
    for i, zn in enumerate(znames):
        members[i if i < n_nz else draw(st.integers(0, n_nz - 1))].append(zn)
    c["networkZones"] = [{"name": n, "zones": m} for n, m in zip(nz_names, members, strict=True)]
    _put(c, "cilium", _maybe(draw, _CILIUM))
    return c


def _pod_template(gpus: int, extras: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "main", "image": "example.com/train:1"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    return {"metadata": {"labels": {"app": "train"}}, "spec": {"containers": [container], **extras}}


# What a user's pod template may already say about placement (the overlay must keep it valid).
_POD_EXTRAS = st.sampled_from([
    {}, {"tolerations": [{"key": "spot", "operator": "Exists"}]},
    {"nodeSelector": {"node-type": "gpu"}},
    {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [
            {"key": "node-type", "operator": "In", "values": ["gpu"]}]}]}}}},
    {"topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                    "whenUnsatisfiable": "ScheduleAnyway"}]}])
_JOB_GPUS = st.sampled_from([0, 1, 1, 2])
# The edges of Cilium's toFQDNs (matchName pattern, maxLength 255): a 63-character label and a
# 253-character name are taken; an empty label and an over-long name must be refused at load.
_FQDNS = st.lists(st.sampled_from(["s3.amazonaws.com", "*.hf.co", "a", "0.example", "x-y.z",
                                   "a" * 63 + ".io", ".".join(["a" * 63] * 3 + ["b" * 61]),
                                   "x..y", ".".join(["a" * 60] * 5)]),
                  min_size=1, max_size=2)
_CIDRS = st.lists(st.sampled_from(["10.0.0.0/8", "0.0.0.0/0", "2001:db8::/32", "192.168.1.1/32",
                                   "::/0", "10.1.2.3/16"]), min_size=1, max_size=2)
_PROTOCOLS = st.sampled_from(["TCP", "UDP", "SCTP"])


@st.composite
def _base_job(draw: st.DrawFn, kind: str, name: str) -> list[dict[str, Any]]:
    """The base's documents: the job, and for a TrainJob sometimes its namespaced runtime."""
    api = kinds.TRAINING_KINDS[kind].api_version
    extras = copy.deepcopy(draw(_POD_EXTRAS))
    gpus = draw(_JOB_GPUS)
    md = {"name": name}
    if kind in kinds.REPLICA_SPECS:
        coord = kinds.TRAINING_KINDS[kind].coordinator
        specs: dict[str, Any] = {"Worker": {"replicas": draw(st.integers(1, 3)),
                                            "template": _pod_template(gpus, extras)}}
        if coord and draw(st.booleans()) or kind == "MPIJob":
            specs[coord or "Launcher"] = {"replicas": 1, "template": _pod_template(0, extras)}
        spec: dict[str, Any] = {kinds.REPLICA_SPECS[kind]: specs}
        if kind == "MPIJob":
            spec["slotsPerWorker"] = 1
        return [{"apiVersion": api, "kind": kind, "metadata": md, "spec": spec}]
    if kind == "JobSet":
        rjs = [{"name": f"rj{i}", "replicas": draw(st.integers(1, 2)), "template": {"spec": {
            "parallelism": 1, "completions": 1, "template": {
                **_pod_template(gpus, extras), "spec": {**_pod_template(gpus, extras)["spec"],
                                                        "restartPolicy": "Never"}}}}}
               for i in range(draw(st.integers(1, 3)))]
        return [{"apiVersion": api, "kind": kind, "metadata": md, "spec": {"replicatedJobs": rjs}}]
    job = {"apiVersion": api, "kind": kind, "metadata": md, "spec": {
        "runtimeRef": {"apiGroup": "trainer.kubeflow.org", "kind": "TrainingRuntime", "name": "rt"},
        "trainer": {"numNodes": draw(st.integers(1, 3)),
                    "resourcesPerNode": {"limits": {"nvidia.com/gpu": gpus}}}}}
    docs = [job]
    if draw(st.booleans()):
        docs.append({"apiVersion": api, "kind": "TrainingRuntime", "metadata": {"name": "rt"},
                     "spec": {"template": {"spec": {"replicatedJobs": [
                         {"name": "node", "template": {"spec": {"template": {"spec": {
                             "containers": [{"name": "node", "image": "example.com/t:1"}]}}}}}]}}}})
    return docs


@st.composite
def _egress(draw: st.DrawFn) -> dict[str, Any]:
    e: dict[str, Any] = {}
    _put(e, "fqdns", _maybe(draw, _FQDNS))
    if "fqdns" not in e or draw(st.booleans()):
        e["cidrs"] = draw(_CIDRS)
    e["ports"] = draw(_EGRESS_PORTS)
    return e


@st.composite
def _port_entry(draw: st.DrawFn) -> dict[str, Any]:
    p: dict[str, Any] = {"port": draw(PORTS)}
    if draw(st.booleans()):
        p["endPort"] = draw(st.integers(p["port"], 65535))
    _put(p, "protocol", _maybe(draw, _PROTOCOLS))
    return p


_COST = st.fixed_dictionaries({}, optional={
    "tagKey": st.one_of(st.just("NAME"), ODD_TEXT), "tagValue": st.one_of(st.just(""), ODD_TEXT),
    "budgetUSDPerDay": st.sampled_from([0, 1, 2.5, 1e12, 0.001])})
_METRICS = st.fixed_dictionaries({"port": PORTS}, optional={"namespace": DNS_NAMES})
_EGRESS_PORTS = st.lists(_port_entry(), min_size=1, max_size=2)
_EGRESS_LIST = st.lists(_egress(), max_size=2)
_DOOR_PORTS = st.lists(_port_entry(), min_size=1, max_size=3)


@st.composite
def _workload(draw: st.DrawFn, clusters: list[dict[str, Any]], kind: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    c = draw(st.sampled_from(clusters))
    nz = draw(st.sampled_from(c["networkZones"]))
    name = draw(DNS_NAMES)
    w: dict[str, Any] = {"name": name, "namespace": draw(DNS_NAMES), "cluster": c["name"],
                         "kind": kind, "base": "", "networkZone": nz["name"]}
    placement = draw(st.sampled_from(["pin", "follow", None]))
    if placement is not None:
        w["placement"] = placement
    if placement != "follow" and (len(nz["zones"]) > 1 or draw(st.booleans())):
        w["zone"] = draw(st.sampled_from(nz["zones"]))
    _put(w, "metrics", _maybe(draw, _METRICS))
    _put(w, "egress", _maybe(draw, _EGRESS_LIST))
    if "kueue" in c and draw(st.booleans()):
        w["scheduler"] = "kueue"
        _put(w, "queue", _maybe(draw, DNS_NAMES))
    elif draw(st.integers(0, 4)) == 0:
        w["scheduler"] = "default"
    _put(w, "deployedBy", _maybe(draw, st.sampled_from(["topogate", "own"])))
    return w, draw(_base_job(kind, name))


@st.composite
def _door(draw: st.DrawFn, clusters: list[dict[str, Any]], workloads: list[dict[str, Any]]) -> dict[str, Any]:
    c = draw(st.sampled_from(clusters))
    nzs = [n["name"] for n in c["networkZones"]]
    mine = [w for w in workloads if w["cluster"] == c["name"]]
    src: dict[str, Any]
    if mine and draw(st.booleans()):
        picks = draw(st.lists(st.sampled_from(mine), min_size=1, max_size=2, unique_by=id))
        src = {"workloads": [w["name"] if draw(st.booleans()) else f"{w['namespace']}/{w['name']}"
                             for w in picks]}
        src_nzs = {w["networkZone"] for w in picks}
    else:
        src = {"networkZone": draw(st.sampled_from(nzs))}
        src_nzs = {src["networkZone"]}
    others = [n for n in nzs if n not in src_nzs]
    dst: dict[str, Any]
    if others and draw(st.booleans()):
        dst = {"networkZone": draw(st.sampled_from(others))}
    else:
        dst = {"namespace": draw(DNS_NAMES), "labels": draw(SOME_LABELS)}
    return {"name": draw(DNS_NAMES), "cluster": c["name"], "from": src, "to": dst,
            "ports": draw(_DOOR_PORTS)}


_GIT_URLS = st.sampled_from(["https://git.example.com/acme/ml.git", "ssh://git@github.com/acme/ml.git",
                             "http://10.0.0.1/x", "https://h", "https://host:8443/a/b/c"])


_GITOPS = st.fixed_dictionaries({"repoURL": _GIT_URLS}, optional={
    "targetRevision": st.one_of(st.sampled_from(["main", "v1.0.0", "HEAD", "0123abc"]), ODD_TEXT),
    "path": st.sampled_from([".", "deploy", "a/b/c", "out.d/x_y", "-dash", "..x"]),
    "argocdNamespace": DNS_NAMES,
    "argocdProject": st.one_of(st.just("default"), ODD_TEXT),
    "fluxNamespace": DNS_NAMES,
    "destinationServer": st.one_of(st.just("https://kubernetes.default.svc"), st.just(""), ODD_TEXT),
    "fluxSecretRef": st.sampled_from(["git-creds", "a", "a.b-c", "s" * 253]),
})


_WAIVER = st.fixed_dictionaries(
    {"rule": st.sampled_from(["TG101", "hard-block", "TG999", "a"]),
     "object": st.one_of(st.just("*"), st.just("PyTorchJob/ns/name"), ODD_TEXT),
     "reason": ODD_TEXT},
    optional={"expires": st.sampled_from(["2099-12-31", "2000-01-01"])})


@dataclass(frozen=True)
class InventoryCase:
    inventory: dict[str, Any]
    bases: dict[str, list[dict[str, Any]]]  # base directory (relative) -> its documents

    def text(self) -> str:
        return yaml.safe_dump(self.inventory, sort_keys=False, allow_unicode=True)

    def write(self, repo: Path) -> Path:
        """Write the case into `repo` (emptied first); the inventory file's path."""
        if repo.exists():
            shutil.rmtree(repo)
        (repo / ".git").mkdir(parents=True)
        for rel, docs in self.bases.items():
            d = repo / rel
            d.mkdir(parents=True, exist_ok=True)
            (d / "job.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
            (d / "kustomization.yaml").write_text(
                "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- job.yaml\n")
        inv = repo / "inventory.yaml"
        inv.write_text(self.text(), encoding="utf-8")
        return inv

    def key(self) -> str:
        return json.dumps([self.inventory, self.bases], sort_keys=True)


@st.composite
def inventory_cases(draw: st.DrawFn) -> InventoryCase:
    cnames = draw(st.lists(DNS_NAMES, min_size=1, max_size=2, unique=True))
    clusters = [draw(_cluster(n)) for n in cnames]
    inv: dict[str, Any] = {"apiVersion": "topogate.dev/v1alpha1", "kind": "Inventory",
                           "metadata": {"name": draw(DNS_NAMES)}, "clusters": clusters}
    bases: dict[str, list[dict[str, Any]]] = {}
    workloads: list[dict[str, Any]] = []
    # The kinds in a random order, one per workload: every kind turns up often.
    order = draw(st.permutations(KINDS))
    for i in range(draw(_WORKLOAD_COUNTS)):
        w, docs = draw(_workload(clusters, order[i]))
        w["base"] = draw(st.sampled_from([f"bases/w{i}", f"./bases/w{i}", f"bases/w{i}/"]))
        bases[f"bases/w{i}"] = docs
        workloads.append(w)
    if workloads or draw(st.booleans()):
        inv["workloads"] = workloads
    if draw(st.booleans()):
        inv["doors"] = [draw(_door(clusters, workloads)) for _ in range(draw(_DOOR_COUNTS))]
    if draw(st.booleans()):
        inv["gitops"] = draw(_GITOPS)
    if draw(st.booleans()):
        inv["waivers"] = draw(st.lists(_WAIVER, max_size=2))
    if draw(st.integers(0, 3)) == 0:
        inv["outputs"] = draw(st.lists(st.sampled_from(["argocd", "flux", "monitoring"]), unique=True))
    if draw(st.booleans()):
        inv["runbookURL"] = draw(st.sampled_from(
            ["https://wiki.example.com/ml/topogate", "http://runbooks.internal/a_b-c.d"]))
    return InventoryCase(inv, bases)
