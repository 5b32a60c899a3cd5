"""Which cluster a manifest belongs to: `--cluster`, else the inventory workload of the same
Kind/namespace/name, else a `clusters/<name>/` component in its path (the generated layout),
else the inventory's only cluster. Objects that match no cluster (policies among them) are
filed under None: such policies apply to every cluster.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence

from topogate.inventory.model import Inventory, Workload
from topogate.manifests import K8sObject


def _cluster_from_path(obj: K8sObject, names: Sequence[str]) -> str | None:
    for text in (obj.pos.file, obj.built_from):
        parts = text.replace("\\", "/").split("/")
        for i, p in enumerate(parts[:-1]):
            if p == "clusters" and parts[i + 1].split(" ")[0] in names:
                return parts[i + 1].split(" ")[0]
    return None


def assign_clusters(inv: Inventory, objects: Iterable[K8sObject],
                    override: str | None) -> dict[str | None, list[K8sObject]]:
    names = [c.name for c in inv.clusters]
    by_id: dict[tuple[str, str, str], Workload] = {(w.kind, w.namespace, w.name): w for w in inv.workloads}
    by_name: dict[tuple[str, str], list[Workload]] = defaultdict(list)
    for wl in inv.workloads:
        by_name[(wl.kind, wl.name)].append(wl)
    out: dict[str | None, list[K8sObject]] = defaultdict(list)
    for o in objects:
        w = by_id.get((o.kind, o.namespace or "default", o.name))
        if w is None and not o.namespace and len(by_name.get((o.kind, o.name), [])) == 1:
            # A base manifest without a namespace: the overlay will set the workload's.
            w = by_name[(o.kind, o.name)][0]
            o = _in_namespace(o, w.namespace)
        own = w.cluster if w is not None else _cluster_from_path(o, names)
        c: str | None
        if override:
            if own is not None and own != override:
                continue  # the inventory (or its path) puts it in another cluster: not analysed
            c = override
        else:
            c = own if own is not None else (names[0] if len(names) == 1 else None)
        out[c].append(o)
    return out


def _in_namespace(o: K8sObject, ns: str) -> K8sObject:
    obj = dict(o.obj)
    obj["metadata"] = {**(obj.get("metadata") or {}), "namespace": ns}
    return dataclasses.replace(o, obj=obj)
