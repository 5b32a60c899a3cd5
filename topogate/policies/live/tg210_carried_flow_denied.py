"""TG210 carried-flow-denied: a flow the cluster carried would be denied by the tree.

`check --flows FILE` replays recorded Hubble flows (`hubble observe -o json`, one flow per
line) against the policies of the tree being checked, as `topogate replay` does: each endpoint
becomes the pod class of its namespace and labels (an address outside the cluster a CIDR peer,
a reserved identity its entity), replies are skipped, and each flow is decided by the evaluator
`trace` uses. A flow the cluster forwarded that the tree denies is reported at the FILE line
where it was first seen, with the deciding rule (or the policy whose default deny drops it).

Why: the recording is traffic the cluster needs today. A change that denies it breaks a
running job the moment it is applied, however clean the rest of the check is. If the flow
should stop, drop it from the recording; if it should go on, `topogate replay --suggest` prints
the inventory `egress:`/`doors:` entry that admits exactly it.

Failing example: workers of `ml-demo` were seen calling 198.51.100.7:443; the tree's
`zone-a-only` policy enforces egress and allows no such address.

Passing example: every forwarded flow of the recording is allowed by the tree.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import CARRIED_DENIED, issues

NAME = "carried-flow-denied"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, CARRIED_DENIED)
