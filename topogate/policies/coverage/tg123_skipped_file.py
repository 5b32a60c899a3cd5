"""TG123 skipped-file: a file among the PATHs was not read (a Helm template, a file git does not track), so nothing in it was checked.

Walking a directory, `check` reads every `.yaml`, `.yml` and `.json` file, as `kubectl apply
-f DIR` and an Argo CD directory application do; the files of other extensions it meets are
named in one note (severity info) per PATH. A Helm chart's `templates/` hold
`{{ ... }}` expressions that are not YAML until `helm template` renders them; one such file used
to make the whole directory unreadable (exit 2). It is now skipped and named here, so the rest
of the directory is checked and the gap is visible. A template given explicitly as a PATH is
still an error (exit 2): there is nothing else to check.

Why: a chart beside the manifests is common; failing everything hides the checkable part, and
skipping silently would hide the chart.

Failing example: `manifests/` holding `job.yaml` and `chart/templates/deployment.yaml` with
`replicas: {{ .Values.replicas }}`.

Passing example: the chart rendered first (`helm template chart > rendered/chart.yaml`) and
`rendered/` checked instead of `chart/`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "skipped-file"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for pos, why in ctx.given.skipped:
        yield Issue(f"File/{pos.file}", f"{pos.file}: {why}.", pos)
    for pos, which in ctx.given.other_files:
        # A note, not a warning: a README or a script beside the manifests is normal.
        yield Issue(f"File/{pos.file}", f"{pos.file}: {which}.", pos, severity="info")
