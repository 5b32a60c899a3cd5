"""TG127 peer-selects-no-pod: a rule's peer selects on a label Cilium leaves out of every pod's identity, so the rule opens nothing to pods.

The peer selectors of a rule (`fromEndpoints`/`toEndpoints`, a NetworkPolicy peer's
`podSelector`) are matched against pod identities, which keep only the labels the agent's label
filter keeps (see TG126). A peer that requires a dropped label matches no pod: the flows it was
written to allow are denied wherever default deny is on. topogate reports those flows too (TG101
when a job needs them); this finding names the selector.

Why: an allow rule that allows nothing fails closed, but its author believes it works.

Failing example: `fromEndpoints: [{matchLabels: {kubernetes.io/hostname: node-1}}]`.

Passing example: a peer selecting a label of the pod's own, such as `app: client`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.coverage.facts import UNSELECTING

NAME = "peer-selects-no-pod"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for policy, sentence, pos, subject in ctx.fact(UNSELECTING):
        if not subject:
            yield Issue(policy, f"{policy}: {sentence}.", pos)
