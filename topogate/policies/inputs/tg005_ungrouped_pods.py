"""TG005 ungrouped-pods: pod templates that belong to no training job, and that the inventory does not name either, were not analysed.

`check` places and traces training jobs: PyTorchJob, MPIJob, TFJob, XGBoostJob, PaddleJob,
JAXJob, JobSet, TrainJob, and plain workloads (Deployment, StatefulSet, ReplicaSet, Job,
CronJob, Pod) whose pod templates carry the `topogate.dev/group` label. Any other pod template
among the manifests (a Deployment without the label, a DaemonSet, a kind topogate does not
read) is invisible to the analysis: where it lands and what it may reach are not checked, so an
"ok" says nothing about it.

A pod template the inventory names is known, not ungrouped: the pods a door's `to` (or `from`)
selects by namespace and labels (the object-store gateway a door leads to must be among PATHs
for the door to be traced), and the pods of a namespace a workload's `metrics` lets scrape it.
The rest are listed once per namespace, each with its line.

Why: a hand-written training job made of a Deployment and a Job is exactly the case the gate
exists for; without the label it would pass unchecked.

Failing example: a `Job` of GPU workers and a `Deployment` coordinator with no
`topogate.dev/group` label in their pod templates.

Passing example: both pod templates labelled `topogate.dev/group: train` (one job,
`Group/<namespace>/train`), or the manifests hold only training jobs and the services the
inventory's doors lead to.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from topogate.core.findings import Issue
from topogate.inventory.model import Inventory
from topogate.policies.context import Context
from topogate.policies.inputs.facts import UNGROUPED

NAME = "ungrouped-pods"
SEVERITY = "warning"

_LABEL = ("If their pods train together with others, label each pod template `topogate.dev/group: <job>` "
          "(the same value on every member) to analyse them as one job.")


def _labels(obj: dict[str, Any]) -> dict[str, str]:
    """The labels of an object's pod template (a Pod's own; a CronJob's job template's)."""
    raw = obj.get("spec")
    spec: dict[str, Any] = raw if isinstance(raw, dict) else {}
    tpl: Any = obj if obj.get("kind") == "Pod" else spec.get("template")
    if obj.get("kind") == "CronJob":
        job = spec.get("jobTemplate")
        inner = job.get("spec") if isinstance(job, dict) else None
        tpl = inner.get("template") if isinstance(inner, dict) else None
    md = tpl.get("metadata") if isinstance(tpl, dict) else None
    labels = md.get("labels") if isinstance(md, dict) else None
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def named_by_inventory(inv: Inventory | None, namespace: str, labels: dict[str, str]) -> bool:
    """Whether the inventory names these pods: a door's end, or a scraper's namespace."""
    if inv is None:
        return False
    for d in inv.doors:
        for end in (d.source, d.target):
            if end.namespace == namespace and end.labels and all(labels.get(k) == v for k, v in end.labels):
                return True
    return any(w.metrics is not None and w.metrics.namespace == namespace for w in inv.workloads)


def _how(kinds: set[str], groupable: bool) -> str:
    hints = [_LABEL] if groupable else []
    if "DaemonSet" in kinds:
        hints.append("A DaemonSet runs one pod per node and cannot be part of a training job.")
    other = sorted(kinds - {"DaemonSet"} - ({"Deployment", "StatefulSet", "ReplicaSet", "Job", "CronJob", "Pod"}))
    if other:
        hints.append(f"topogate does not read {', '.join(other)} as a training job; run those pods from a kind "
                     "it reads (see docs/coverage.md).")
    hints.append("A service a door leads to is known once the door names its namespace and labels; "
                 "otherwise waive this rule for the namespace if that is intended.")
    return " ".join(hints)


def check(ctx: Context) -> Iterator[Issue]:
    objects = {f"{o.kind}/{o.namespace or 'default'}/{o.name}": o for o in ctx.objects}
    by_ns: dict[str, list[Any]] = {}
    for u in ctx.fact(UNGROUPED):
        o = objects.get(u.object)
        ns = u.object.split("/")[1]
        if o is not None and named_by_inventory(ctx.inventory, ns, _labels(o.obj)):
            continue
        by_ns.setdefault(ns, []).append(u)
    for ns, us in sorted(by_ns.items()):
        # By place, as plain values: a position found eagerly and one found on demand (a
        # template's place inside a file, sources.positions) do not compare with each other.
        us.sort(key=lambda u: (u.pos.file, u.pos.line, u.pos.column, u.object))
        listed = ", ".join(f"{u.object} ({u.pos})" for u in us)
        what = "a pod template that belongs" if len(us) == 1 else f"{len(us)} pod templates that belong"
        yield Issue(
            f"Namespace/{ns}",
            f"namespace {ns} has {what} to no training job, so their placement and network paths "
            f"were not analysed: {listed}. {_how({u.kind for u in us}, any(u.groupable for u in us))}",
            us[0].pos,
        )
