"""TG109 dangling-policy: a namespaced policy selects no pod among the manifests checked.

Each CiliumNetworkPolicy and NetworkPolicy is matched against the label class of every pod the
manifests describe (training-job groups and plain workloads). A policy that selects none of them
is reported. Clusterwide policies are exempt: they are meant for pods that may come later.

A policy topogate generated is reported at the inventory entry that produced it.

Why: a policy whose selector has a typo, or that outlived the job it was written for, protects
nothing, and its author believes the opposite.

Failing example: `endpointSelector: {matchLabels: {app: trian}}` when the job's pods are
labelled `app: train`.

Passing example: the selector names a label the job's pod template carries.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import POLICY_SELECTS

NAME = "dangling-policy"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for sel in ctx.fact(POLICY_SELECTS):
        if sel.selected == 0:
            yield Issue(
                sel.policy,
                f"{sel.policy} selects no pod among the manifests checked: it protects nothing here. "
                "Fix its selector, or delete it if its workload is gone.",
                sel.pos,
            )
