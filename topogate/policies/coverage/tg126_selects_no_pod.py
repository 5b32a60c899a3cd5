"""TG126 selects-no-pod: a policy's subject selects on a label Cilium leaves out of every pod's identity, so it selects no pod and locks nothing.

Cilium builds a pod's identity from its labels after the agent's label filter (its `labels`
option over the version's default list). From 1.19 the default drops `topology.kubernetes.io/*`
(which Kubernetes 1.35 copies from the node onto pods, cilium/cilium#43725), `kubernetes.io/*`,
`k8s.io/*`, `*.beta.kubernetes.io/*`, `pod-template-hash`, `controller-revision-hash` and others.
An `endpointSelector` (or NetworkPolicy `podSelector`) that requires such a label matches no
identity: the policy applies to no pod, its rules and its default deny with it. The inventory's
`cilium:` block names the version and the agent's `labels` option; without it the newest version
topogate knows decides, and the finding says so.

Why: a zone policy that selects nothing looks exactly like one that works, until traffic crosses
the zone it was meant to close.

Failing example: `endpointSelector: {matchLabels: {k8s:topology.kubernetes.io/zone: zone-a}}` on a
1.20 agent with the default `labels`.

Passing example: the same policy selecting `topogate.dev/network-zone: gpu` (a label the overlays
stamp and the identity keeps), or the agent run with `labels: k8s:topology.kubernetes.io/zone ...`
and the inventory saying so.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.coverage.facts import UNSELECTING

NAME = "selects-no-pod"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for policy, sentence, pos, subject in ctx.fact(UNSELECTING):
        if subject:
            yield Issue(policy, f"{policy}: {sentence}.", pos)
