"""Argo CD: what to sync per cluster, and in which order.

Tree (paths relative to OUT):

    argocd/clusters/<c>/kustomization.yaml   what Argo CD syncs for cluster <c>: the cluster root
                                             (`clusters/<c>`) plus sync-wave annotations
    argocd/apps/<c>.yaml                      Application `topogate-<c>` (network + workloads) and
                                             `topogate-<c>-monitoring`          [needs `gitops:`]
    argocd/kustomization.yaml                 every Application: `kubectl apply -k OUT/argocd`, or
                                             point an app-of-apps at it         [needs `gitops:`]

Order. Argo CD applies one Application's resources wave by wave, and starts a wave only when
the previous one is applied and healthy. So one Application per cluster carries both layers, and
the wrapper kustomization stamps the waves onto the built objects:

    wave -3  Kueue objects (when `kueue:`)    the queues and flavors the jobs are admitted by
    wave -3  admission policy + binding       (when `admission:`) refuses unplaced jobs
    wave -2  CiliumClusterwideNetworkPolicy   the network layer: the doors between network zones
    wave -1  CiliumNetworkPolicy              each job's allow-list
    wave  0  everything else                  the jobs

so no training pod exists before the policies that guard it. The alternative, two Applications
per cluster ordered by waves in an app-of-apps, only works when Argo CD is given a health check
for `Application` (removed from Argo CD in 1.8 and re-added per installation in `argocd-cm`);
waves inside one Application need no configuration at all. The wrapper is plain Kustomize, so
`kubectl kustomize OUT/argocd/clusters/<c>` shows exactly what Argo CD will apply, annotations
included, and the Config Management Plugin (examples/argocd-cmp) builds the same directory.

Monitoring is its own Application so that a cluster without the prometheus-operator CRDs still
syncs its network and workloads.

Without a `gitops:` section there is no repository URL to point Applications at. Rather than
invent a placeholder that would sync nothing (or the wrong repository), only the wrappers are
generated (the plugin and hand-written Applications use them) and the Applications are not.

Destination: with one cluster in the inventory, `gitops.destinationServer` (default
`https://kubernetes.default.svc`, the cluster Argo CD runs in). With several, each Application
targets `destination.name: <cluster>`: register each cluster in Argo CD under its inventory name
(`argocd cluster add CONTEXT --name <cluster>`).

The Applications carry no `resources-finalizer.argocd.argoproj.io`: deleting an Application
(say, while moving Argo CD) must not delete running training jobs. Pruning of objects removed
from the inventory is on (`automated.prune`) and happens last (`PruneLast`), after new objects
are in place.
"""

from __future__ import annotations

import json
import posixpath
from typing import Any

from topogate.core.labels import CLUSTER_LABEL, MANAGED_BY_LABEL
from topogate.generators import admission
from topogate.generators.base import OutputFile
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s import kueue as kueue_api
from topogate.k8s.kustomization import KUSTOMIZE_API

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
# (apiVersion, kind, wave): the order in which a cluster's objects are applied.
WAVES: tuple[tuple[str, str, str], ...] = (
    ("cilium.io/v2", "CiliumClusterwideNetworkPolicy", "-2"),
    ("cilium.io/v2", "CiliumNetworkPolicy", "-1"),
)
# The cluster machinery of the opt-ins goes first of all: a job that names a Kueue queue, or
# that an admission policy must see, is created only after them.
KUEUE_WAVE = "-3"
ADMISSION_WAVE = "-3"
SYNC_OPTIONS = ("PruneLast=true",)


def waves(inv: Inventory, cluster: Cluster) -> tuple[tuple[str, str, str], ...]:
    """WAVES plus the waves of the opt-in objects the cluster has (a patch only for kinds that
    are there, so a cluster without them builds exactly as before)."""
    extra: tuple[tuple[str, str, str], ...] = ()
    if cluster.kueue is not None:
        extra += tuple((kueue_api.API_VERSION, k, KUEUE_WAVE)
                       for k in ("Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue"))
    if admission.enabled(inv, cluster):
        extra += tuple((admission.API_VERSION, k, ADMISSION_WAVE) for k in admission.ADMISSION_KINDS)
    return extra + WAVES


def repo_path(inv: Inventory, *parts: str) -> str:
    """A path inside the Git repository: the `gitops.path` the tree lives under, plus `parts`."""
    root = inv.gitops.path if inv.gitops else "."
    p = posixpath.normpath(posixpath.join(root.strip("/") or ".", *parts))
    return "" if p == "." else p


def app_name(cluster: str, layer: str = "") -> str:
    return f"topogate-{cluster}" + (f"-{layer}" if layer else "")


def wrapper_dir(cluster: str) -> str:
    return f"argocd/clusters/{cluster}"


def _wave_patch(api_version: str, kind: str, wave: str) -> dict[str, Any]:
    # A strategic-merge patch with a target applies to every object of that kind; kustomize
    # needs apiVersion/kind/name in the patch body, and ignores the name when a target is given.
    # (A JSON6902 "add" to /metadata/annotations/... would fail on objects without annotations.)
    body = {"apiVersion": api_version, "kind": kind,
            "metadata": {"name": "all", "annotations": {SYNC_WAVE: wave}}}
    return {"target": {"group": api_version.split("/")[0], "kind": kind},
            "patch": json.dumps(body, separators=(", ", ": "))}


def wrapper(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    return {
        "apiVersion": KUSTOMIZE_API,
        "kind": "Kustomization",
        "resources": [f"../../../clusters/{cluster.name}"],
        "patches": [_wave_patch(a, k, w) for a, k, w in waves(inv, cluster)],
    }


def _destination(inv: Inventory, cluster: Cluster) -> dict[str, str]:
    assert inv.gitops is not None
    if len(inv.clusters) == 1:
        return {"server": inv.gitops.destination_server}
    return {"name": cluster.name}


def application(inv: Inventory, cluster: Cluster, layer: str, path: str) -> dict[str, Any]:
    g = inv.gitops
    assert g is not None
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": {
            "name": app_name(cluster.name, layer),
            "namespace": g.argocd_namespace,
            "labels": {MANAGED_BY_LABEL: "topogate", CLUSTER_LABEL: cluster.name},
        },
        "spec": {
            "project": g.argocd_project,
            "source": {"repoURL": g.repo_url, "targetRevision": g.target_revision, "path": path},
            "destination": _destination(inv, cluster),
            "syncPolicy": {
                "automated": {"prune": True, "selfHeal": True},
                "syncOptions": list(SYNC_OPTIONS),
                "retry": {"limit": 5, "backoff": {"duration": "10s", "factor": 2, "maxDuration": "3m"}},
            },
        },
    }


def render(inv: Inventory) -> list[OutputFile]:
    files: list[OutputFile] = []
    clusters = sorted(inv.clusters, key=lambda c: c.name)
    for c in clusters:
        files.append(OutputFile(f"{wrapper_dir(c.name)}/kustomization.yaml", (wrapper(inv, c),), source=c.pos))
    if inv.gitops is None:
        return files
    for c in clusters:
        apps: tuple[dict[str, Any], ...] = (application(inv, c, "", repo_path(inv, wrapper_dir(c.name))),)
        if "monitoring" in inv.outputs:
            apps += (application(inv, c, "monitoring", repo_path(inv, "monitoring", c.name)),)
        files.append(OutputFile(f"argocd/apps/{c.name}.yaml", apps, source=inv.gitops.pos))
    root = {
        "apiVersion": KUSTOMIZE_API,
        "kind": "Kustomization",
        "resources": [f"apps/{c.name}.yaml" for c in clusters],
    }
    files.append(OutputFile("argocd/kustomization.yaml", (root,), source=inv.gitops.pos))
    return files
