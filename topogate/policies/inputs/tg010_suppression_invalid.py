"""TG010 suppression-invalid: a `topogate.dev/ignore` annotation that hides nothing, because it
names no rule, gives no reason, or names a rule that cannot be suppressed.

An object may silence one rule's findings on itself with the annotation
`topogate.dev/ignore: "RULE: reason"` (one line per rule; RULE is an ID or a name). The reason is
required: it is what a reviewer reads in the report's summary, where every honoured suppression
is listed. A malformed line suppresses nothing, and this rule says what to write instead.

Why: a suppression that silently fails leaves a finding the author believes is handled, and one
without a reason is a silenced alarm nobody can judge.

Failing example:

```yaml
metadata:
  annotations:
    topogate.dev/ignore: TG102
```

Passing example:

```yaml
metadata:
  annotations:
    topogate.dev/ignore: "TG102: a single-node smoke test; zones do not matter"
```
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.selection import ANNOTATION, object_annotations, parse_annotation

NAME = "suppression-invalid"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    known = dict(ctx.known_rules)
    for o in ctx.objects:
        value = object_annotations(o).get(ANNOTATION)
        if value is None:
            continue
        _, problems = parse_annotation(value, known)
        for p in problems:
            yield Issue(o.ref, f"{p}; until then it suppresses nothing",
                        o.locate(("metadata", "annotations", ANNOTATION)))
