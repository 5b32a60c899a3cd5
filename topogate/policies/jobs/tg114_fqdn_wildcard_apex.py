"""TG114 fqdn-wildcard-apex: an egress FQDN like `*.huggingface.co` does not match the name
`huggingface.co` itself.

Cilium's `matchPattern: "*.example.com"` matches names with at least one more label in front
(`cdn.example.com`), never the apex `example.com`. A job that downloads from the apex (many
hubs and object stores redirect there first) is denied though the inventory seems to allow it.
The finding sits at the FQDN's own line.

Why: the failure shows only at run time, as a connection timeout in the middle of a download.

Failing example:

```yaml
egress:
- fqdns: ["*.huggingface.co"]
  ports: [{port: 443}]
```

Passing example: list the apex too when the job needs it, `fqdns: [huggingface.co,
"*.huggingface.co"]`, or only the exact names it uses.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "fqdn-wildcard-apex"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    inv = ctx.inventory
    if inv is None:
        return
    for w in inv.workloads:
        names = {f for e in w.egress for f in e.fqdns}
        for e in w.egress:
            for i, f in enumerate(e.fqdns):
                apex = f[2:] if f.startswith("*.") else None
                if apex is None or apex in names:
                    continue
                pos = e.fqdn_pos[i] if i < len(e.fqdn_pos) else e.pos
                yield Issue(
                    w.object_id,
                    f"{w.object_id}: egress FQDN '{f}' matches subdomains of {apex} only, not "
                    f"{apex} itself. Fix: add '{apex}' to the list if the job reaches it, or "
                    "name the exact hosts it uses.",
                    pos,
                )
