"""TG009 remote-root: a kustomization root among the PATHs needs the network to build (a remote base, a Helm chart), so topogate did not build it and nothing in it was checked.

`kubectl kustomize` would fetch a remote base (`github.com/...`, `https://...`, `?ref=`) or
inflate a chart (`helmCharts`) from whatever the network serves at that moment. A pull request is
hostile input: topogate never fetches. Such a root used to stop the whole run (exit 2), even for
clusters that do not use it; now it is this one finding, at the line that names the remote
entry, and every other root is checked.

Fix: vendor what it fetches into the repository (copy the base and name it by its path;
`kustomize localize` writes such a copy; `helm template` the chart into a file listed under
`resources`). To leave the root out on purpose, name it in `--exclude` or in the configuration's
`exclude:` (docs/cli.md): the finding goes, and the run says nothing about that root.

Failing example: `overlays/prod/kustomization.yaml` with
`resources: [github.com/acme/base?ref=v1]` among the PATHs.

Passing example: the base copied to `vendor/acme-base/` and `resources: [../../vendor/acme-base]`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context

NAME = "remote-root"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for root, pos, why in ctx.given.not_local:
        yield Issue(f"Kustomization/{root}", (
            f"{root} was not built, so nothing in it was checked: {why}; or leave it out on purpose "
            f"with --exclude {root} (or `exclude:` in .topogate.yaml)"), pos)
