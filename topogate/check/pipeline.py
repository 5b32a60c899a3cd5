"""check's pipeline: each cluster analysed as soon as the builds its path places in it are read,
while kubectl still builds the others.

The read plan knows, before any build, which units (kustomization roots, manifest files) each
cluster's path holds (`ReadPlan.by_cluster`: the generated `clusters/<name>/`). Once the last of
a cluster's units is read, its objects are handed to the analysis (analysis.map.build.Ahead),
which works out that cluster's share of the map then, instead of after the last build (not once
an Argo CD Application or a Flux Kustomization is read: what they apply is rendered after the
read, and replaces what was read). Whether
the share is used is decided once everything is read, by the objects alone (`Ahead.take`): the
pipeline changes when a cluster is worked out, never what is said about it.
"""

from __future__ import annotations

from pathlib import Path

from topogate.analysis.map.build import Ahead
from topogate.check.plan import ReadPlan
from topogate.gitops.engines import is_engine
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import WalkUnit


class Pipeline:
    """Collecting.result's `on_unit`: gathers each cluster's objects as its units are read, and
    hands them to `ahead` when the cluster's last unit is in."""

    def __init__(self, plan: ReadPlan, ahead: Ahead):
        self.ahead = ahead
        self.cluster_of: dict[Path, str] = {}
        self.left: dict[str, set[Path]] = {}
        for c, units in plan.by_cluster().items():
            if c is not None:
                self.left[c] = {u.path for u in units}
                self.cluster_of.update((u.path, c) for u in units)
        self.objects: dict[str, list[K8sObject]] = {}
        self.rendered = False  # an Argo CD Application or Flux Kustomization was read

    def __call__(self, unit: WalkUnit, objects: list[K8sObject]) -> None:
        if self.rendered or any(is_engine(o) for o in objects):
            # What Argo CD or Flux apply replaces what was read (topogate.gitops): no share
            # worked out from the objects as read would be used.
            self.rendered = True
            return
        c = self.cluster_of.get(unit.path)
        if c is None:
            return
        self.objects.setdefault(c, []).extend(objects)
        left = self.left[c]
        left.discard(unit.path)
        if left:
            return
        mine = self.objects.pop(c)
        try:
            self.ahead.cluster(c, mine)  # shapes checked: the read hands on no unit before that
        except Exception:  # noqa: BLE001 - the share is dropped; worked out again after the read
            # (the same objects give the same error there, in the order the serial run gives it)
            return


__all__ = ["Pipeline"]
