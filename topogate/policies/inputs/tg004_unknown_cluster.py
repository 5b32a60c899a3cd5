"""TG004 unknown-cluster: a training job was found but nothing says which cluster it runs in.

A job's node pools, zones and network zones come from its cluster. `check` takes the cluster
from `--cluster`, from the inventory workload with the same Kind/namespace/name, or from a
`clusters/<name>/` directory in the manifest's path; with one cluster in the inventory, that one.
When none applies the job cannot be analysed, and passing it silently would hide every problem
it has.

Why: a gate that says "ok" about a job it never looked at is worse than no gate.

Failing example: `topogate check inventory.yaml jobs/` with two clusters in the inventory and a
hand-written PyTorchJob in `jobs/` that the inventory does not list.

Passing example: `topogate check inventory.yaml jobs/ --cluster gpu-east`, or the job listed
under `workloads:`, or kept under `clusters/gpu-east/`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.inputs.facts import UNASSIGNED

NAME = "unknown-cluster"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    clusters = ", ".join(c.name for c in ctx.inventory.clusters) if ctx.inventory else ""
    for obj, pos in ctx.fact(UNASSIGNED):
        yield Issue(
            obj,
            f"{obj} is not an inventory workload and not under clusters/<name>/, and the inventory "
            f"has several clusters ({clusters}): it was not analysed. Fix: pass --cluster NAME, or "
            "list it under `workloads:`.",
            pos,
        )
