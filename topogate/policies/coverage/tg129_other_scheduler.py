"""TG129 other-scheduler: pods of a job are placed by a scheduler other than kube-scheduler, so topogate's placement rests on what it assumed of that scheduler.

A pod template whose `schedulerName` is not `default-scheduler` (or a Volcano Job, whose pods
its scheduler places) is not placed by the scheduler topogate models. topogate keeps judging the
node filters, pod affinity and spread as kube-scheduler's (the schedulers named below honour
them), and reads what the scheduler documents as co-location: KAI Scheduler's
`kai.scheduler/topology-required-placement` on the workload, with `kai.scheduler/topology`,
where each domain of that label lies in one zone; Volcano's `networkTopology: {mode: hard}` where
every HyperNode of the allowed tiers selects nodes of one zone. The finding names the scheduler
and what was assumed; anything else of that scheduler (its queues, gang admission, bin packing)
is not modelled.

Why: another scheduler can keep pods Pending or place them where kube-scheduler would not; a
verdict about such a job is only as good as the assumptions it names.

Failing example: a PyTorchJob whose templates set `schedulerName: kai-scheduler`.

Passing example: the same job without `schedulerName` (kube-scheduler places it).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "other-scheduler"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        for group, scheduler, assumed, pos in job.other_schedulers:
            yield Issue(job.object, f"{job.object}: {group} is placed by {scheduler}, not kube-scheduler: {assumed}.",
                        pos)
