"""Admission from the inventory: the API server itself refuses a training job that is not placed.

Per cluster with `admission:` and at least one workload (paths relative to OUT):

    clusters/<c>/admission/kustomization.yaml
    clusters/<c>/admission/policy.yaml    ValidatingAdmissionPolicy `topogate-placement` and its
                                          ValidatingAdmissionPolicyBinding (admissionregistration
                                          .k8s.io/v1, Kubernetes >= 1.30)

GitOps checks only what goes through Git; `kubectl apply` around it, or a job submitted from a
notebook, never meets `topogate check`. The policy meets every CREATE and UPDATE of a
PyTorchJob, MPIJob, JobSet or TrainJob in a namespace the inventory manages (the namespaces of
the cluster's workloads, selected by `kubernetes.io/metadata.name`) and demands of every replica
template:

1. the `topogate.dev/network-zone` label, naming one of the cluster's network zones: the
   boundary policies select on it, so a pod without it is outside every door;
2. a node constraint inside that network zone: required node affinity on the zone label (in
   every nodeSelectorTerm, the terms being ORed) or a nodeSelector on it, with only zones of the
   labelled network zone.

A podAffinity on the job's own pods (`follow`) or Kueue's `podset-required-topology` keeps the
pods in one zone, but not in which: the first pod may land in any zone its node constraints
allow, and Kueue may pick a flavor of any zone its ClusterQueue lists. Alone, either admits a job
that runs wholly in another network zone (which `topogate check` reports as TG106), so neither
counts; the overlays topogate generates carry the node affinity on every template, follow and
Kueue jobs included.

Each rule is one validation per kind, its message naming the kind, the job, the first replica
type that fails and what to add. A job without the label is told about the label only (the zone
check needs the label to know which zones are allowed). An expression that errors fails closed
(`failurePolicy: Fail`).

TrainJob: its pod templates live in the runtime, which the policy cannot read; it checks the
replicated jobs the TrainJob patches through `spec.runtimePatches` and refuses a TrainJob that
patches none. `validationActions` come from the inventory: `[Deny]` enforces, `[Warn, Audit]`
reports without refusing (for a rollout).
"""

from __future__ import annotations

import json
from typing import Any

from topogate.core.labels import MANAGED_BY_LABEL, NAMESPACE_NAME_LABEL, NETWORK_ZONE_LABEL
from topogate.generators import cilium
from topogate.generators.base import OutputFile
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s import kinds

API_VERSION = "admissionregistration.k8s.io/v1"
ADMISSION_KINDS = ("ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")
NAME = "topogate-placement"
_REQ = "requiredDuringSchedulingIgnoredDuringExecution"
# (apiGroup, resource) the policy matches, per kind.
_RESOURCES = {"PyTorchJob": ("kubeflow.org", "pytorchjobs"), "MPIJob": ("kubeflow.org", "mpijobs"),
              "JobSet": ("jobset.x-k8s.io", "jobsets"), "TrainJob": ("trainer.kubeflow.org", "trainjobs")}
# The other training-operator v1 kinds: matched and checked only on a cluster that runs one (the
# four above always are), so a policy grows only where those kinds are in use.
_V1_RESOURCES = {"TFJob": ("kubeflow.org", "tfjobs"), "XGBoostJob": ("kubeflow.org", "xgboostjobs"),
                 "PaddleJob": ("kubeflow.org", "paddlejobs"), "JAXJob": ("kubeflow.org", "jaxjobs")}


def admission_dir(cluster: str) -> str:
    return f"clusters/{cluster}/admission"


def namespaces(inv: Inventory, cluster: Cluster) -> list[str]:
    return sorted({w.namespace for w in inv.workloads_of(cluster.name)})


def _lit(s: str) -> str:
    """A CEL string literal (JSON's escaping is valid CEL for these label keys and names)."""
    return json.dumps(s)


def _has_chain(root: str, *fields: str) -> str:
    """`has(root.a) && has(root.a.b) && ...`: CEL's has() errors on a missing parent."""
    parts, cur = [], root
    for f in fields:
        cur = f"{cur}.{f}"
        parts.append(f"has({cur})")
    return " && ".join(parts)


class _Checks:
    """The CEL predicates on one pod template, the template written as `t`."""

    def __init__(self, cluster: Cluster):
        self.zl = _lit(cluster.zone_label)

    def labelled(self, t: str) -> str:
        nz = _lit(NETWORK_ZONE_LABEL)
        return (f"({_has_chain(t, 'metadata', 'labels')} && {nz} in {t}.metadata.labels && "
                f"{t}.metadata.labels[{nz}] in variables.networkZones)")

    def _zones(self, t: str) -> str:
        return f"variables.networkZones[{t}.metadata.labels[{_lit(NETWORK_ZONE_LABEL)}]]"

    def node(self, t: str) -> str:
        terms = f"{t}.spec.affinity.nodeAffinity.{_REQ}.nodeSelectorTerms"
        in_zone = (f"e.key == {self.zl} && e.operator == 'In' && has(e.values) && size(e.values) > 0 "
                   f"&& e.values.all(v, v in {self._zones(t)})")
        affinity = (f"({_has_chain(t, 'spec', 'affinity', 'nodeAffinity', _REQ, 'nodeSelectorTerms')}"
                    f" && size({terms}) > 0 && {terms}.all(term, has(term.matchExpressions) && "
                    f"term.matchExpressions.exists(e, {in_zone})))")
        selector = (f"({_has_chain(t, 'spec', 'nodeSelector')} && {self.zl} in {t}.spec.nodeSelector "
                    f"&& {t}.spec.nodeSelector[{self.zl}] in {self._zones(t)})")
        return f"({affinity} || {selector})"

    def zoned(self, t: str) -> str:
        """The network-zone constraint, for a template that passed `labelled` (else vacuously true)."""
        return f"(!{self.labelled(t)} || {self.node(t)})"

    def advice(self, cluster: Cluster) -> str:
        return (f"add to its pod template a required nodeAffinity (in every nodeSelectorTerm) "
                f"{cluster.zone_label} In [zones of its network zone], or a nodeSelector on "
                f"{cluster.zone_label}; a podAffinity or Kueue's topology alone does not say which "
                "network zone (topogate generate writes the affinity)")


class _Replicas:
    """How to walk a kind's replica templates in CEL over `object`: `every(pred)` is true when
    every template satisfies `pred` (a function of the template's CEL expression), `first(pred)`
    names the first replica that does not; `present` says there is something to walk."""

    def __init__(self, kind: str):
        self.kind = kind
        if kind in kinds.REPLICA_SPECS:
            field = kinds.REPLICA_SPECS[kind]
            self.present = f"has(object.spec) && has(object.spec.{field})"
            self.where = f"spec.{field}.<replica>.template"
            self._list, self._var = f"object.spec.{field}", "n"
            self._tpl, self._name = f"object.spec.{field}[n].template", "n"
        elif kind == "JobSet":
            self.present = "has(object.spec) && has(object.spec.replicatedJobs)"
            self.where = "spec.replicatedJobs[<replica>].template.spec.template"
            self._list, self._var = "object.spec.replicatedJobs", "r"
            self._tpl, self._name = "r.template.spec.template", "r.name"
        else:  # TrainJob: a list (per runtime patch) of lists of patched replicated jobs
            self.present = "variables.trainJobPatches.exists(l, size(l) > 0)"
            self.where = ("spec.runtimePatches[].trainingRuntimeSpec.template.spec.replicatedJobs"
                          "[<replica>].template.spec.template")
            self._list, self._var = "", "r"
            self._tpl, self._name = "r.template.spec.template", "r.name"

    def _bind(self, pred: str) -> str:
        # `[x].all(t, ...)` binds the template to `t` once: standard CEL has no `let`.
        return f"[{self._tpl}].all(t, {pred})"

    def every(self, pred: str) -> str:
        if self.kind == "TrainJob":
            return f"variables.trainJobPatches.all(l, l.all(r, {self._bind(pred)}))"
        return f"{self._list}.all({self._var}, {self._bind(pred)})"

    def first(self, pred: str) -> str:
        bad = f"!{self._bind(pred)}"
        if self.kind == "TrainJob":
            return (f"variables.trainJobPatches.map(l, l.filter(r, {bad}).map(r, r.name))"
                    ".filter(l, size(l) > 0)[0][0]")
        if self.kind == "JobSet":
            return f"{self._list}.filter(r, {bad})[0].name"
        return f"{self._list}.filter(n, {bad})[0]"


def _validations(cluster: Cluster, kind: str) -> list[dict[str, str]]:
    ch = _Checks(cluster)
    rs = _Replicas(kind)
    t = "t"
    who = f"'{kind} ' + object.metadata.name + ': replica '"
    nz_names = ", ".join(n.name for n in cluster.network_zones)
    out: list[dict[str, str]] = []
    if kind == "TrainJob":
        out.append({
            "expression": f"object.kind != 'TrainJob' || {rs.present}",
            "message": ("TrainJob: its pods come from a runtime this policy cannot read; add "
                        "spec.runtimePatches with a trainingRuntimeSpec for every replicated job, "
                        f"carrying the {NETWORK_ZONE_LABEL} label and a zone constraint "
                        "(topogate generate writes it)"),
            "reason": "Invalid",
        })
    out.append({
        "expression": f"object.kind != '{kind}' || !({rs.present}) || {rs.every(ch.labelled(t))}",
        "messageExpression": (
            f"{who} + {rs.first(ch.labelled(t))} + "
            + _lit(f" lacks the label {NETWORK_ZONE_LABEL} naming its network zone ({nz_names}), which "
                   f"the boundary policies select on; add it to {rs.where}.metadata.labels")),
        "reason": "Invalid",
    })
    out.append({
        "expression": f"object.kind != '{kind}' || !({rs.present}) || {rs.every(ch.zoned(t))}",
        "messageExpression": (
            f"{who} + {rs.first(ch.zoned(t))} + "
            + _lit(f" is not held inside its network zone; {ch.advice(cluster)}")),
        "reason": "Invalid",
    })
    return out


def _train_job_patches() -> str:
    """The replicated jobs of each of a TrainJob's runtimePatches, those with a pod template
    (a list of lists; empty for other kinds). Standard CEL has no flatten, so the checks walk
    the nesting."""
    has = _has_chain("p", "trainingRuntimeSpec", "template", "spec", "replicatedJobs")
    rj = f"has(r.name) && {_has_chain('r', 'template', 'spec', 'template')}"
    return (f"object.kind == 'TrainJob' && has(object.spec) && has(object.spec.runtimePatches) ? "
            f"object.spec.runtimePatches.filter(p, {has}).map(p, "
            f"p.trainingRuntimeSpec.template.spec.replicatedJobs.filter(r, {rj})) : []")


def policy(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    extra = sorted({w.kind for w in inv.workloads_of(cluster.name)} & set(_V1_RESOURCES))
    kinds_here = sorted(set(_RESOURCES) | set(extra))
    groups: dict[str, list[str]] = {}
    for k in kinds_here:
        g, r = {**_RESOURCES, **_V1_RESOURCES}[k]
        groups.setdefault(g, []).append(r)
    rules = [{"apiGroups": [g], "apiVersions": ["*"], "operations": ["CREATE", "UPDATE"],
              "resources": sorted(rs)} for g, rs in sorted(groups.items())]
    zones = ", ".join(f"{_lit(n.name)}: [{', '.join(_lit(z) for z in n.zones)}]"
                      for n in cluster.network_zones)
    validations = [v for k in ("PyTorchJob", "MPIJob", "JobSet", "TrainJob", *extra)
                   for v in _validations(cluster, k)]
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": NAME, "labels": {MANAGED_BY_LABEL: "topogate"}},
        "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"resourceRules": rules},
            "variables": [
                {"name": "networkZones", "expression": "{" + zones + "}"},
                {"name": "trainJobPatches", "expression": _train_job_patches()},
            ],
            "validations": validations,
        },
    }


def binding(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    assert cluster.admission is not None
    return {
        "apiVersion": API_VERSION,
        "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": NAME, "labels": {MANAGED_BY_LABEL: "topogate"}},
        "spec": {
            "policyName": NAME,
            "validationActions": list(cluster.admission.validation_actions),
            "matchResources": {"namespaceSelector": {"matchExpressions": [
                {"key": NAMESPACE_NAME_LABEL, "operator": "In",
                 "values": namespaces(inv, cluster)}]}},
        },
    }


def render(inv: Inventory) -> list[OutputFile]:
    out: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        if not enabled(inv, c):
            continue
        assert c.admission is not None
        d = admission_dir(c.name)
        out += [
            OutputFile(f"{d}/kustomization.yaml", (cilium.kustomization(["policy.yaml"]),), source=c.admission.pos),
            OutputFile(f"{d}/policy.yaml", (policy(inv, c), binding(inv, c)), source=c.admission.pos),
        ]
    return out


def enabled(inv: Inventory, cluster: Cluster) -> bool:
    """Admission objects exist for a cluster that opted in and manages at least one namespace
    (a namespace selector `In []` is invalid, and there would be nothing to guard)."""
    return cluster.admission is not None and bool(namespaces(inv, cluster))
