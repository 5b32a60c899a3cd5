"""TG011 settings-weakened: the pull request's settings file narrows the gate more than the settings at the `--changed-since` ref do.

`.topogate.yaml` (or `[tool.topogate]` in pyproject.toml) can leave paths unread (`exclude`),
restrict the check to one cluster (`cluster`), drop rules (`select`, `ignore`,
`per-path-ignores`) and turn `strict` off. A pull request can change that file, and the
change would decide the check of the very pull request that makes it. So under
`check --changed-since REF` (the pull-request mode the GitHub Action uses) every setting that
narrows the gate is read from REF, through git, and a setting of the working tree's file that
narrows more than REF's is not applied: the check uses REF's, and this rule reports the
setting at its line, saying what it would hide once merged. Settings that only strengthen the
gate (more rules, fewer ignores, `strict: true`) are taken from the pull request. Without
`--changed-since` there is no REF to compare with, and the file is used as it is; every report
names it and what each of its settings left out.

Why: a gate whose configuration the change under review can loosen is no gate. A pull request
that adds its failing file to `exclude:` or its failing rule to `ignore:` would pass, and the
report would only count "hidden" findings, as if the workflow had asked for it.

Fix: if the narrowing is meant, make it a pull request of its own that changes only the
settings, for the gate's owners to review (a CODEOWNERS entry for the settings file helps);
once it is merged, REF has it and later pull requests are checked with it. Otherwise drop the
setting from this pull request.

Failing example: REF's `.topogate.yaml` says `ignore: [TG120]`, the pull request's says
`ignore: [TG120, TG101]`.

Passing example: the pull request's says `ignore: []` (it reports more than REF's, and is used).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "settings-weakened"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for w in ctx.given.weakened:
        yield Issue(w.object, w.message, w.pos)
