"""Flux: a GitRepository and one Kustomization per cluster and layer.

Tree (paths relative to OUT), generated only when the inventory has a `gitops:` section (Flux
cannot fetch anything without the repository URL, and a placeholder would fail later and
quieter than a missing directory):

    flux/<c>/kustomization.yaml         the entry point for cluster <c>: `flux bootstrap ...
                                        --path=<gitops.path>/flux/<c>`, or `kubectl apply -k`
    flux/<c>/gitrepository.yaml         GitRepository `topogate` (repo URL, revision)
    flux/<c>/kustomizations.yaml        Kustomizations topogate-<c>-network, -workloads, -monitoring
    flux/<c>/workloads/kustomization.yaml  the workloads layer: every job overlay of <c>

Flux runs inside each cluster it manages, so each cluster gets its own entry point; the
GitRepository is repeated per cluster because each cluster's Flux needs its own.

Order and health. `topogate-<c>-workloads` `dependsOn` `topogate-<c>-network`, and the network
Kustomization has `wait: true`, so Flux applies the jobs only after every network policy of the
cluster is applied and reported healthy. The workloads layer waits too: for PyTorchJob and
MPIJob a CEL health check (`healthCheckExprs`) says a job is healthy once its Running (or
Succeeded) condition is True and failed once Failed is; a job that never starts (unschedulable
coordinator, the classic) turns the Kustomization not-Ready after `timeout`, visible in
`flux get kustomizations`. JobSet and TrainJob have no such condition to wait for; Flux's generic
status check applies to them. `prune: true` everywhere: objects removed from the inventory are
deleted by Flux.

Why a separate workloads directory: the network layer is `clusters/<c>/network`, which has its
own kustomization. The workloads have none of their own (the cluster root lists network and
every overlay), and pointing Flux at `clusters/<c>/workloads` would make it generate a
kustomization over every YAML file below, patches included. So `flux/<c>/workloads/` lists the
overlays, in the same order as the cluster root.

Revision: `gitops.targetRevision` becomes `ref.commit` when it is a full commit SHA, `ref.name`
when it starts with `refs/` (`refs/tags/v1`), and `ref.branch` otherwise.
"""

from __future__ import annotations

import re
from typing import Any

from topogate.generators.argocd import repo_path
from topogate.generators.base import OutputFile
from topogate.inventory.model import MANAGED_BY_LABEL, Cluster, Inventory

SOURCE_NAME = "topogate"
INTERVAL = "10m"  # full reconcile; Git changes arrive through the GitRepository's own interval
SOURCE_INTERVAL = "1m"
RETRY_INTERVAL = "1m"
TIMEOUT = "5m"

# Health of the training-job kinds that report a Running condition (Kubeflow v1 / MPI v2beta1).
_RUNNING = "status.conditions.exists(e, (e.type == 'Running' || e.type == 'Succeeded') && e.status == 'True')"
_FAILED = "status.conditions.exists(e, e.type == 'Failed' && e.status == 'True')"
HEALTH_EXPRS: dict[str, dict[str, str]] = {
    "PyTorchJob": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "current": _RUNNING, "failed": _FAILED},
    "MPIJob": {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "current": _RUNNING, "failed": _FAILED},
}


def kustomization_name(cluster: str, layer: str) -> str:
    return f"topogate-{cluster}-{layer}"


def git_ref(revision: str) -> dict[str, str]:
    if re.fullmatch(r"[0-9a-f]{40}", revision):
        return {"commit": revision}
    if revision.startswith("refs/"):
        return {"name": revision}
    return {"branch": revision}


def _meta(inv: Inventory, name: str, cluster: Cluster) -> dict[str, Any]:
    assert inv.gitops is not None
    return {"name": name, "namespace": inv.gitops.flux_namespace,
            "labels": {MANAGED_BY_LABEL: "topogate", "topogate.dev/cluster": cluster.name}}


def git_repository(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    assert inv.gitops is not None
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": _meta(inv, SOURCE_NAME, cluster),
        "spec": {"interval": SOURCE_INTERVAL, "url": inv.gitops.repo_url,
                 "ref": git_ref(inv.gitops.target_revision)},
    }


def kustomization(inv: Inventory, cluster: Cluster, layer: str, path: str,
                  depends_on: tuple[str, ...] = (), health: list[dict[str, str]] | None = None,
                  ) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "interval": INTERVAL,
        "retryInterval": RETRY_INTERVAL,
        "timeout": TIMEOUT,
        "sourceRef": {"kind": "GitRepository", "name": SOURCE_NAME},
        "path": "./" + path,
        "prune": True,
        "wait": True,
    }
    if depends_on:
        spec["dependsOn"] = [{"name": d} for d in depends_on]
    if health:
        spec["healthCheckExprs"] = health
    return {
        "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
        "kind": "Kustomization",
        "metadata": _meta(inv, kustomization_name(cluster.name, layer), cluster),
        "spec": spec,
    }


def render(inv: Inventory) -> list[OutputFile]:
    if inv.gitops is None:
        return []
    files: list[OutputFile] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        base = f"flux/{c.name}"
        wls = sorted(inv.workloads_of(c.name), key=lambda w: (w.namespace, w.name))
        kinds = sorted({w.kind for w in wls})
        network = kustomization(inv, c, "network", repo_path(inv, "clusters", c.name, "network"))
        workloads = kustomization(
            inv, c, "workloads", repo_path(inv, base, "workloads"),
            depends_on=(kustomization_name(c.name, "network"),),
            health=[HEALTH_EXPRS[k] for k in kinds if k in HEALTH_EXPRS])
        # Monitoring depends on nothing: a cluster without the prometheus-operator CRDs fails only
        # this Kustomization, not the policies or the jobs.
        monitoring = kustomization(inv, c, "monitoring", repo_path(inv, "monitoring", c.name))
        entry = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": ["gitrepository.yaml", "kustomizations.yaml"],
        }
        layer = {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": [f"../../../clusters/{c.name}/workloads/{w.namespace}/{w.name}" for w in wls],
        }
        files += [
            OutputFile(f"{base}/kustomization.yaml", (entry,), source=c.pos),
            OutputFile(f"{base}/gitrepository.yaml", (git_repository(inv, c),), source=inv.gitops.pos),
            OutputFile(f"{base}/kustomizations.yaml", (network, workloads, monitoring), source=c.pos),
            OutputFile(f"{base}/workloads/kustomization.yaml", (layer,), source=c.pos),
        ]
    return files
