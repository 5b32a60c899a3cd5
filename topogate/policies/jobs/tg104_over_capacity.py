"""TG104 over-capacity: the job asks for more GPUs than the zones it can use hold.

The GPUs a job requests (replicas x GPUs per pod, per group) are compared with the GPUs of the
pools its groups can land on. A job that must stay in one zone has to fit in a single zone.

Why: the scheduler places as many pods as fit and leaves the rest Pending; distributed training
needs every rank, so the placed pods hold their GPUs and do nothing.

Failing example: 4 workers x 8 GPUs pinned to a zone with 2 nodes x 8 GPUs.

Passing example: the same job in a zone with 4 such nodes.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.core.words import plural
from topogate.policies.context import Context

NAME = "over-capacity"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        cap = job.capacity
        if cap.get("fits", True) or not all(any(p.feasible for p in g.pools) for g in job.groups):
            continue
        needs, has = int(cap.get("needs", 0) or 0), int(cap.get("has", 0) or 0)
        where = f"zone {cap['zone']}" if cap.get("zone") else "the pools it can use"
        detail = f" ({cap['message']})" if cap.get("message") else ""
        yield Issue(
            job.object,
            f"{job.object} requests {plural(needs, 'GPU')} but {where} {'holds' if cap.get('zone') else 'hold'} "
            f"{has}{detail}. Pods that fit start "
            "and hold their GPUs idle while the rest stay Pending. Fix: reduce replicas or "
            "GPUs per pod, or add GPU nodes to that zone.",
            job.pos,
            )
