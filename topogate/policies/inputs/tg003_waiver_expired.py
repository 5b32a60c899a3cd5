"""TG003 waiver-expired: a waiver in the inventory has passed its `expires` date.

Waivers are data: `waivers: [{rule, object, reason, expires}]` in the inventory hide findings of
one rule on one object (or `*`) until they expire. Once expired the waiver hides nothing and this
rule reports it, so a temporary exception cannot silently become permanent.

Why: a waiver written for an incident ("GPU nodes in zone-b are coming next sprint") outlives the
reason it was written for unless something reminds its author.

Failing example:

```yaml
waivers:
- {rule: may-split, object: PyTorchJob/ml/train, reason: capacity move, expires: "2020-01-31"}
```

Passing example:

```yaml
waivers:
- {rule: may-split, object: PyTorchJob/ml/train, reason: capacity move, expires: "2999-01-31"}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "waiver-expired"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    if ctx.inventory is None:
        return
    for w in ctx.inventory.waivers:
        if w.expires is not None and w.expires < ctx.today:
            yield Issue(
                w.object,
                f"waiver for {w.rule} on {w.object} expired on {w.expires.isoformat()} "
                f"(reason: {w.reason}); fix the finding it hid, or renew the waiver with a new date",
                w.pos,
            )
