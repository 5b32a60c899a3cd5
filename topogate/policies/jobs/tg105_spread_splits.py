"""TG105 spread-splits: a zone-key topologySpreadConstraint with DoNotSchedule on a training job.

topologySpreadConstraints SPREAD pods. With `topologyKey: topology.kubernetes.io/zone` and
`whenUnsatisfiable: DoNotSchedule`, a group with more pods than `maxSkew` is forced into several
zones, the opposite of what a distributed training job needs.

Severity: error when the constraint splits the group or strands pods today; warning when it is
latent (one eligible zone, or maxSkew covers every pod: it splits nothing until that changes).

Why: it is a tempting "fix" for uneven placement, and it guarantees the split it was meant to
prevent.

Failing example:

```yaml
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
```

Passing example: spread per node inside the zone, softly:

```yaml
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
```
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.core.words import plural
from topogate.policies.context import Context
from topogate.policies.jobs.facts import SPREAD_SPLITS

NAME = "spread-splits"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for s in ctx.fact(SPREAD_SPLITS):
        now = {
            "splits": "the scheduler must put its pods in different zones",
            "strands": ("its pods may only use one zone, so the constraint caps them at maxSkew "
                        "there and the rest stay Pending"),
        }.get(s.effect, "today it splits nothing (one eligible zone, or maxSkew covers every pod), "
                        "but the moment a second zone becomes eligible or replicas grow it forces "
                        "a split")
        yield Issue(
            s.object,
            f"{s.object}: group {s.group} spreads over {s.key} with DoNotSchedule (maxSkew "
            f"{s.max_skew}, {plural(s.pods, 'pod')}): {now}. Fix: co-locate with required nodeAffinity or "
            "podAffinity on the zone key, and spread per kubernetes.io/hostname with "
            "ScheduleAnyway if you want spreading at all.",
            s.pos,
            # The severity follows the effect: a split or stranded pods fail the check, a
            # constraint that splits nothing today is a warning (it fails under --strict).
            severity="warning" if s.effect == "latent" else "",
        )
