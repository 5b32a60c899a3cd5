"""TG128 dra-claim-not-modelled: a pod claims devices through Dynamic Resource Allocation in a way topogate does not model, so a verdict may be wrong.

GPUs claimed through DRA (`spec.resourceClaims` naming a ResourceClaimTemplate or a ResourceClaim,
resource.k8s.io/v1) are counted like device-plugin GPUs: per DeviceClass, on one node, only in
pools whose `devices` offer that class (TG103, TG104). What a claim adds beyond a class and a
count is not evaluated, and the finding names it with the way the verdict may be wrong: CEL
`selectors` narrowing the class (every device of the class is counted: too permissive),
`constraints` with `matchAttribute` (devices that must share an attribute: too permissive),
`firstAvailable` alternatives (the first one is counted), a template or claim not among the
PATHs (nothing counted: too permissive), a DeviceClass neither among the PATHs nor named by a
pool, or one whose selector topogate cannot read (only pools naming it count: too strict).

Why: a claim topogate counts wrong can say "ok" for workers that never start (12 GPUs on an
8-GPU zone) or fail a job that fits; either must be visible.

Failing example: a ResourceClaimTemplate whose request narrows `deviceClassName:
gpu.nvidia.com` with `selectors: [{cel: {expression: 'device.attributes["gpu.nvidia.com"].productName == "H100"'}}]`.

Passing example: the same template without `selectors`, the pools declaring the class's devices
(`devices: [{deviceClass: gpu.nvidia.com, count: 8}]`).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "dra-claim-not-modelled"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        for note, pos in job.device_notes:
            yield Issue(job.object, f"{job.object}: {note}. Fix: express the device requirement as a DeviceClass "
                                    "the inventory's pools declare (devices: deviceClass, count), or accept the "
                                    "finding with a waiver.", pos)
