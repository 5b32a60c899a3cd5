"""TG204 gpu-drift: a pool's nodes offer another number of GPUs than its `gpusPerNode`.

GPUs per node are the node's `status.allocatable` of `nvidia.com/gpu`, `amd.com/gpu` and
`habana.ai/gaudi` (what the device plugin offers the scheduler, not the hardware count), counted
as `check` counts what a job asks for.

Why: a pod asking for 8 GPUs fits only on a node offering 8. With fewer allocatable (a failed
GPU, a device plugin not running, another instance type) the job is pending though `check`
counted enough GPUs.

Failing example: `gpusPerNode: 8`; the nodes report `nvidia.com/gpu: 4` allocatable.

Passing example: `gpusPerNode: 8` and every node of the pool offers 8.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import GPUS, issues

NAME = "gpu-drift"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, GPUS)
