"""Flux: a GitRepository and one Kustomization per cluster and layer.

Tree (paths relative to OUT), generated only when the inventory has a `gitops:` section (Flux
cannot fetch anything without the repository URL, and a placeholder would fail later and
quieter than a missing directory):

    flux/<c>/kustomization.yaml         the entry point for cluster <c> (see Bootstrap below)
    flux/<c>/gitrepository.yaml         GitRepository `topogate` (repo URL, revision, secretRef)
    flux/<c>/kustomizations.yaml        Kustomizations topogate-<c>-network, -job-policies,
                                        -workloads, -monitoring
    flux/<c>/job-policies/              the job-policies layer: each job's CiliumNetworkPolicy
    flux/<c>/workloads/kustomization.yaml  the workloads layer: every job overlay of <c>, minus
                                        the policies the job-policies layer owns

Flux runs inside each cluster it manages, so each cluster gets its own entry point; the
GitRepository is repeated per cluster because each cluster's Flux needs its own.

Bootstrap. Everything under OUT is topogate's: `generate` replaces the whole directory and
refuses to when it holds a file topogate did not write, and `generate --check` lists such a file
as drift. So `flux bootstrap` must never write its `flux-system/` into OUT. Bootstrap each
cluster at a path of the repository OUTSIDE `gitops.path` (the Flux convention
`clusters/<c>` when the tree lives in `deploy/`), and add there, beside `flux-system/`, one
Flux Kustomization of your own whose `spec.path` is `./<gitops.path>/flux/<c>` (docs/gitops.md
has it, and `bootstrap_kustomization()` builds the same object). Where Flux already runs,
`kubectl apply -k <gitops.path>/flux/<c>` does the same once.

Order and health. Three layers apply in order, each only after the previous one is applied
and healthy (`dependsOn` plus `wait: true`):

    topogate-<c>-network        clusters/<c>/network: the CiliumClusterwideNetworkPolicies
    topogate-<c>-job-policies   each job's CiliumNetworkPolicy            dependsOn network
    topogate-<c>-kueue          clusters/<c>/kueue (only with `kueue:`): Topology, flavors, queues
    topogate-<c>-admission      clusters/<c>/admission (only with `admission:`): the policy
    topogate-<c>-workloads      the jobs (and whatever else their bases hold)
                                    dependsOn network, job-policies (, kueue) (, admission)

so no training pod exists before both the boundary and its own allow-list are in place: the
same order Argo CD gets from sync waves -2/-1/0. The workloads layer waits too: for PyTorchJob
and MPIJob a CEL health check (`healthCheckExprs`) says a job is healthy once its Running (or
Succeeded) condition is True and failed once Failed is; a job that never starts (unschedulable
coordinator, the classic) turns the Kustomization not-Ready after `timeout`, visible in
`flux get kustomizations`. The expressions test `has(status.conditions)` first: Flux's docs warn
that an expression reading a field that does not exist errors and the check then waits for the
timeout; a job whose operator has written a status without conditions is thus reported in
progress, not errored. (`has(status)` itself cannot be tested, the docs say, because `status` is
a top-level field: a job with no status at all errors until its operator writes one, which the
Kubeflow operators do on creation.) JobSet and TrainJob have no such condition to wait for;
Flux's generic status check applies to them. `prune: true` everywhere: objects removed from the
inventory are deleted by Flux.

Why the layers are directories of their own. The network layer is `clusters/<c>/network`,
which has its own kustomization. A job's overlay (`clusters/<c>/workloads/<ns>/<job>`) holds
both its CiliumNetworkPolicy and the job, and Kustomize cannot select one object out of a
directory (a file outside a kustomization's root is refused). So `flux/<c>/job-policies/` holds
the same CiliumNetworkPolicy objects, rendered by the same function as the overlays' copy, and
`flux/<c>/workloads/` lists the overlays and removes exactly those policies from them with one
`$patch: delete` per job. Every object has exactly one Flux owner, and the layers together are
exactly the cluster root (tested with kubectl kustomize).

Source. `gitops.fluxSecretRef` becomes `spec.secretRef.name`: the Secret (in `fluxNamespace`)
with the credentials of a private repository (`username`/`password` or `bearerToken` for
HTTPS, `identity`/`known_hosts` for SSH; `flux create secret git` makes one).

Revision: `gitops.targetRevision` is Argo CD's notation; `git_ref` maps it to Flux's
`spec.ref` so both tools follow the same commits:

    0123...cdef (40 hex, any case)  ref.commit (lower-cased)
    refs/heads/<b>                   ref.branch: <b>
    refs/tags/<t>                    ref.tag: <t>
    other refs/...                   ref.name (e.g. refs/pull/42/head)
    HEAD                             ref.name: HEAD
    anything else                    ref.branch

HEAD is the remote's default branch in Argo CD. Omitting `spec.ref` does NOT mean that in Flux:
its docs say a GitRepository without a ref follows the `master` branch. `ref.name` is resolved
against the refs the remote advertises, among them HEAD; name the branch explicitly if you can.
A bare `v1.2.3` is a branch, not a tag: Git lets a branch and a tag share a name, Argo CD
resolves such a name to whichever exists, and Flux needs to be told which. Guessing "tag" from
the shape would follow the wrong ref the day someone creates a release branch of that name;
`branch` fails loudly ("couldn't find remote ref refs/heads/v1.2.3") when it is a tag. Write
`refs/tags/v1.2.3` for a tag.
"""

from __future__ import annotations

import json
import re
from typing import Any

from topogate.core.labels import CLUSTER_LABEL, MANAGED_BY_LABEL
from topogate.generators import admission, cilium
from topogate.generators.argocd import repo_path
from topogate.generators.base import OutputFile
from topogate.inventory.model import Cluster, Inventory, Workload
from topogate.k8s.kustomization import KUSTOMIZE_API

SOURCE_NAME = "topogate"
INTERVAL = "10m"  # full reconcile; Git changes arrive through the GitRepository's own interval
SOURCE_INTERVAL = "1m"
RETRY_INTERVAL = "1m"
TIMEOUT = "5m"
# Layer name -> the layers it depends on, in apply order.
LAYERS: dict[str, tuple[str, ...]] = {
    "network": (),
    "job-policies": ("network",),
    "workloads": ("network", "job-policies"),
    # Monitoring depends on nothing: a cluster without the prometheus-operator CRDs fails only
    # this Kustomization, not the policies or the jobs.
    "monitoring": (),
}
# Opt-in layers (clusters with `kueue:` / `admission:`), each applied before the workloads: a
# job that names a queue before its LocalQueue exists waits inadmissible, and a job created
# before the admission policy is never checked by it.
OPTIONAL_LAYERS = ("kueue", "admission")


def layers(inv: Inventory, cluster: Cluster) -> dict[str, tuple[str, ...]]:
    """The cluster's layers and what each depends on: LAYERS plus the opt-in layers it uses."""
    on = {"kueue": cluster.kueue is not None, "admission": admission.enabled(inv, cluster)}
    extra = tuple(name for name in OPTIONAL_LAYERS if on[name])
    out: dict[str, tuple[str, ...]] = {}
    for name, deps in LAYERS.items():
        if name == "monitoring" and "monitoring" not in inv.outputs:
            continue
        if name == "workloads":
            out.update({x: () for x in extra})
            deps = deps + extra
        out[name] = deps
    return out


def layer_path(inv: Inventory, cluster: Cluster, layer: str) -> str:
    """Where a layer's kustomization lives: the cluster tree's own directories where one holds
    exactly that layer, `flux/<c>/<layer>` where Flux needs a directory of its own."""
    own = {"network": ("clusters", cluster.name, "network"),
           "kueue": ("clusters", cluster.name, "kueue"),
           "admission": ("clusters", cluster.name, "admission"),
           "monitoring": ("monitoring", cluster.name)}
    return repo_path(inv, *own.get(layer, ("flux", cluster.name, layer)))

# Health of the training-job kinds that report a Running condition (Kubeflow v1 / MPI v2beta1).
# `has(status.conditions)` first: reading a missing field is an evaluation error in Flux, and an
# error makes the check wait for the timeout instead of reporting "in progress".
_CONDITIONS = "has(status.conditions) && "
_RUNNING = _CONDITIONS + (
    "status.conditions.exists(e, (e.type == 'Running' || e.type == 'Succeeded') && e.status == 'True')")
_FAILED = _CONDITIONS + "status.conditions.exists(e, e.type == 'Failed' && e.status == 'True')"
HEALTH_EXPRS: dict[str, dict[str, str]] = {
    "PyTorchJob": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "current": _RUNNING, "failed": _FAILED},
    "MPIJob": {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "current": _RUNNING, "failed": _FAILED},
    **{k: {"apiVersion": "kubeflow.org/v1", "kind": k, "current": _RUNNING, "failed": _FAILED}
       for k in ("TFJob", "XGBoostJob", "PaddleJob", "JAXJob")},
}
_SHA = re.compile(r"[0-9a-fA-F]{40}")


def kustomization_name(cluster: str, layer: str) -> str:
    return f"topogate-{cluster}-{layer}"


def git_ref(revision: str) -> dict[str, str]:
    """`spec.ref` of the GitRepository for Argo CD-style `targetRevision` (module docstring)."""
    if _SHA.fullmatch(revision):
        return {"commit": revision.lower()}
    if revision.startswith("refs/heads/") and len(revision) > len("refs/heads/"):
        return {"branch": revision[len("refs/heads/"):]}
    if revision.startswith("refs/tags/") and len(revision) > len("refs/tags/"):
        return {"tag": revision[len("refs/tags/"):]}
    if revision.startswith("refs/") or revision == "HEAD":
        return {"name": revision}
    return {"branch": revision}


def _meta(inv: Inventory, name: str, cluster: Cluster) -> dict[str, Any]:
    assert inv.gitops is not None
    return {"name": name, "namespace": inv.gitops.flux_namespace,
            "labels": {MANAGED_BY_LABEL: "topogate", CLUSTER_LABEL: cluster.name}}


def git_repository(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    assert inv.gitops is not None
    spec: dict[str, Any] = {"interval": SOURCE_INTERVAL, "url": inv.gitops.repo_url,
                            "ref": git_ref(inv.gitops.target_revision)}
    if inv.gitops.flux_secret_ref:
        spec["secretRef"] = {"name": inv.gitops.flux_secret_ref}
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": _meta(inv, SOURCE_NAME, cluster),
        "spec": spec,
    }


def kustomization(inv: Inventory, cluster: Cluster, layer: str, path: str,
                  health: list[dict[str, str]] | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": INTERVAL,
        "retryInterval": RETRY_INTERVAL,
        "timeout": TIMEOUT,
        "sourceRef": {"kind": "GitRepository", "name": SOURCE_NAME},
        "path": "./" + path,
        "prune": True,
        "wait": True,
    }
    depends_on = layers(inv, cluster)[layer]
    if depends_on:
        spec["dependsOn"] = [{"name": kustomization_name(cluster.name, d)} for d in depends_on]
    if health:
        spec["healthCheckExprs"] = health
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": _meta(inv, kustomization_name(cluster.name, layer), cluster),
        "spec": spec,
    }


def bootstrap_kustomization(inv: Inventory, cluster: Cluster, source: str = "flux-system") -> dict[str, Any]:
    """The Flux Kustomization the user keeps beside `flux bootstrap`'s own files, OUTSIDE OUT.

    It applies `<gitops.path>/flux/<c>` from the bootstrap GitRepository (`flux-system`); topogate
    never writes it, because everything topogate writes lives in OUT and bootstrap output must
    not. docs/gitops.md shows it for the example inventory (tested).
    """
    assert inv.gitops is not None
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": {"name": f"topogate-{cluster.name}", "namespace": inv.gitops.flux_namespace},
        "spec": {
            "interval": INTERVAL,
            "sourceRef": {"kind": "GitRepository", "name": source},
            "path": "./" + repo_path(inv, "flux", cluster.name),
            "prune": True,
        },
    }


def _policy_file(w: Workload) -> str:
    return f"{w.namespace}/{w.name}.yaml"


def _delete_patch(w: Workload) -> dict[str, Any]:
    """Removes the job's CiliumNetworkPolicy from its overlay: the job-policies layer owns it."""
    body = {"$patch": "delete", "apiVersion": cilium.API_VERSION, "kind": "CiliumNetworkPolicy",
            "metadata": {"name": cilium.cnp_name(w), "namespace": w.namespace}}
    return {"target": {"group": "cilium.io", "kind": "CiliumNetworkPolicy", "name": cilium.cnp_name(w),
                       "namespace": w.namespace},
            "patch": json.dumps(body, separators=(", ", ": "))}


def render(inv: Inventory) -> list[OutputFile]:
    if inv.gitops is None:
        return []
    files: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        base = f"flux/{c.name}"
        # the jobs its own Flux Kustomization applies (deployedBy: own) are not this layer's
        wls = sorted((w for w in inv.workloads_of(c.name) if not w.own), key=lambda w: (w.namespace, w.name))
        kinds = sorted({w.kind for w in wls})
        health = [HEALTH_EXPRS[k] for k in kinds if k in HEALTH_EXPRS]
        ks = tuple(kustomization(inv, c, layer, layer_path(inv, c, layer),
                                 health=health if layer == "workloads" else None)
                   for layer in layers(inv, c))
        entry = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
                 "resources": ["gitrepository.yaml", "kustomizations.yaml"]}
        policies = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
                    "resources": [_policy_file(w) for w in wls]}
        workloads: dict[str, Any] = {
            "apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
            "resources": [f"../../../clusters/{c.name}/workloads/{w.namespace}/{w.name}" for w in wls],
        }
        if wls:
            workloads["patches"] = [_delete_patch(w) for w in wls]
        files += [
            OutputFile(f"{base}/kustomization.yaml", (entry,), source=c.pos),
            OutputFile(f"{base}/gitrepository.yaml", (git_repository(inv, c),), source=inv.gitops.pos),
            OutputFile(f"{base}/kustomizations.yaml", ks, source=c.pos),
            OutputFile(f"{base}/job-policies/kustomization.yaml", (policies,), source=c.pos),
            OutputFile(f"{base}/workloads/kustomization.yaml", (workloads,), source=c.pos),
        ]
        files += [OutputFile(f"{base}/job-policies/{_policy_file(w)}", (cilium.job_policy(w, inv),), source=w.pos)
                  for w in wls]
    return files
