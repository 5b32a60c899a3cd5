"""Which cluster a manifest belongs to: `--cluster`, else the inventory workload of the same
Kind/namespace/name, else the cluster the GitOps object that rendered it applies it to
(topogate.gitops), else a `clusters/<name>/` (or `overlays/<name>/`) component in its path
(the generated layout, core.layout),
else the inventory's only cluster. Objects that match no cluster (policies among them) are
filed under None: such policies apply to every cluster.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence

from topogate.core.layout import CLUSTER_DIRS
from topogate.gitops.objects import RenderedObject
from topogate.inventory.model import Inventory, Workload
from topogate.k8s.objects import K8sObject


def _named_cluster(text: str, names: Sequence[str]) -> str | None:
    parts = text.replace("\\", "/").split("/")
    for i, p in enumerate(parts[:-1]):
        if p in CLUSTER_DIRS and parts[i + 1].split(" ")[0] in names:
            return parts[i + 1].split(" ")[0]
    return None


def _cluster_from_path(obj: K8sObject, names: Sequence[str]) -> str | None:
    """The build root first: the cluster whose kustomization was built is where the object is
    applied. Only an object read from a file, or built from a root that names no cluster, is
    placed by its own file; for a built object that file is found by tracing it back to its
    source, which parses sources: a clean check of a generated tree never needs to."""
    if obj.built_from:
        found = _named_cluster(obj.built_from, names)
        if found is not None:
            return found
    return _named_cluster(obj.pos.file, names)


def path_clusters(objects: Iterable[K8sObject]) -> list[str]:
    """Cluster names the generated layout shows (`clusters/<name>/`), for runs without an
    inventory (trace): sorted, each once."""
    found: set[str] = set()
    for o in objects:
        for text in (o.pos.file, o.built_from):
            parts = text.replace("\\", "/").split("/")
            found.update(parts[i + 1].split(" ")[0] for i, p in enumerate(parts[:-1]) if p in CLUSTER_DIRS)
    return sorted(n for n in found if n)


class ClusterOf:
    """The one way check and trace decide which cluster an object belongs to (module doc)."""

    def __init__(self, inv: Inventory | None, names: Sequence[str] = ()):
        self.names = [c.name for c in inv.clusters] if inv is not None else list(names)
        workloads = inv.workloads if inv is not None else ()
        self.by_id: dict[tuple[str, str, str], Workload] = {(w.kind, w.namespace, w.name): w for w in workloads}
        self.by_name: dict[tuple[str, str], list[Workload]] = defaultdict(list)
        for wl in workloads:
            self.by_name[(wl.kind, wl.name)].append(wl)

    def own(self, o: K8sObject) -> tuple[str | None, K8sObject]:
        """The cluster the inventory or the path gives the object (None: neither says), and the
        object with the namespace its inventory workload gives it when it has none."""
        w = self.by_id.get((o.kind, o.namespace or "default", o.name))
        if w is None and not o.namespace and len(self.by_name.get((o.kind, o.name), [])) == 1:
            # A base manifest without a namespace: the overlay will set the workload's.
            w = self.by_name[(o.kind, o.name)][0]
            o = _in_namespace(o, w.namespace)
        if w is None and isinstance(o, RenderedObject) and o.cluster is not None:
            return o.cluster, o  # the cluster the Argo CD Application or Flux Kustomization applies it to
        return (w.cluster if w is not None else _cluster_from_path(o, self.names)), o

    def __call__(self, o: K8sObject, override: str | None) -> tuple[str | None, bool, K8sObject]:
        """(cluster, analysed, object): with an override, objects another cluster owns are not
        analysed; without, an object nothing places goes to the only cluster, else to None."""
        own, o = self.own(o)
        if override:
            return override, own is None or own == override, o
        if own is not None:
            return own, True, o
        return (self.names[0] if len(self.names) == 1 else None), True, o


def assign_clusters(inv: Inventory, objects: Iterable[K8sObject],
                    override: str | None) -> dict[str | None, list[K8sObject]]:
    of = ClusterOf(inv)
    out: dict[str | None, list[K8sObject]] = defaultdict(list)
    for o in objects:
        c, analysed, o = of(o, override)
        if analysed:
            out[c].append(o)
    return out


def _in_namespace(o: K8sObject, ns: str) -> K8sObject:
    obj = dict(o.obj)
    obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
    return dataclasses.replace(o, obj=obj)

__all__ = ["ClusterOf", "assign_clusters", "path_clusters"]
