"""TG209 policy-differs: a policy the generated tree contains is missing from the cluster, or its
spec there differs from the generated one.

Compared are the `spec` (and `specs`) and the labels the generator sets; what the API server adds
(status, uid, annotations) is ignored.

Why: the proof of `check` is about the generated policies. If the cluster runs an older or a
hand-edited version, or GitOps has not synced it, the proof is about something that does not run.

Failing example: the job's CiliumNetworkPolicy in the cluster allows only port 23456, the
generated one all TCP between the job's pods.

Passing example: the cluster's copy has the same spec as the generated file.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import DIFFERS, issues

NAME = "policy-differs"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, DIFFERS)
