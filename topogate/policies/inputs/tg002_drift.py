"""TG002 drift: the committed generated tree is not what `topogate generate` writes today.

`check --rendered OUT` renders the inventory in memory and compares it with OUT file by file:
a file that is missing, changed by hand, or left over from a removed workload is a finding, at
the first line that differs, and the text and markdown reports show the unified diff
(`topogate generate INVENTORY -o OUT --check --diff` prints the same diffs, uncut). A file
changes only when its own content does (no inventory-wide digest in the headers), so a change
to one job is a finding on that job's files only.

Why: Argo CD and Flux sync what is committed. If someone edits a generated policy or overlay by
hand, or changes the inventory without regenerating, the cluster no longer follows the map, and
the analysis of the inventory no longer describes what runs.

Failing example: `out/clusters/lab/workloads/ml-demo/train/ciliumnetworkpolicy.yaml` edited by
hand to allow a port the inventory does not name.

Passing example: `topogate generate inventory.yaml -o out` run after the last inventory change,
and its output committed unchanged.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.core.position import Position
from topogate.policies.context import Context

NAME = "drift"
SEVERITY = "error"

_WHAT = {
    "added": "is missing from the rendered tree but `generate` would write it",
    "changed": "differs from what `generate` would write (edited by hand, or the inventory changed)",
    "removed": "is in the rendered tree but `generate` would no longer write it",
}


def check(ctx: Context) -> Iterator[Issue]:
    for d in ctx.given.drift:
        yield Issue(
            f"File/{d.path}",
            f"{d.path} {_WHAT.get(d.status, d.status)}; run `topogate generate {ctx.inventory_file} "
            f"-o {ctx.given.rendered}` and commit the result",
            Position(d.file, d.line, 1),
            detail=d.diff,
        )
