"""TG008 workload-absent: a workload the inventory declares in a cluster checked is not among the PATHs.

The inventory is the map of every training job. When a run reads some of a cluster's
manifests but not one of the jobs the inventory places in that cluster, that job was not
checked, and an ok says nothing about it: its overlay may be missing from the repository, its
manifests elsewhere, or the PATHs incomplete. (When none of the declared jobs is found at all,
TG006 fails the run instead.)

Why: the gate reports what it did not look at; a job left out of the PATHs must not pass by
silence.

Failing example: the multi example's inventory (four jobs in two clusters) checked against the
overlay of one gpu-east job only: the other gpu-east job is absent.

Passing example: the whole generated tree of the cluster (`OUT/clusters/gpu-east`).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.inputs.facts import declared_absent

NAME = "workload-absent"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    if not ctx.jobs:
        return  # nothing found at all: TG006
    for w in declared_absent(ctx):
        oid = f"{w.kind}/{w.namespace}/{w.name}"
        yield Issue(oid, (
            f"{oid} is declared in cluster {w.cluster} by the inventory, but it is not among the "
            "PATHs checked: it was not analysed. Fix: pass its manifests (its overlay in the "
            f"generated tree, `OUT/clusters/{w.cluster}`), or remove it from the inventory if it "
            "is gone."), w.pos)
