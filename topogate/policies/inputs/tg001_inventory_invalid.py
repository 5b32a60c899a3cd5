"""TG001 inventory-invalid: the inventory cannot be read as a valid topogate inventory.

Every problem the loader finds is reported at once, each at its own line: YAML syntax, duplicate
and unknown keys, wrong types, missing fields, names that are not DNS-1123 labels (they become
paths), references to clusters, zones or network zones that do not exist, a zone claimed by two
network zones, a `pin` without a single zone, a `base` missing or outside the repository, and a
job that needs more GPUs than any zone it may use has.

Why: nothing else can be trusted when the map itself is wrong, so `check` stops here and exits 2.

Failing example:

```yaml
workloads:
- name: llama-ft
  cluster: gpu-west        # no such cluster
```

Passing example:

```yaml
workloads:
- name: llama-ft
  cluster: gpu-east        # defined under clusters:
```
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "inventory-invalid"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for p in ctx.given.inventory_problems:
        yield Issue(f"Inventory/{ctx.inventory_file}", p.message, p.pos)
