"""TG014 gitops-render-fails: Argo CD or Flux would fail to render an Application or Kustomization, and apply nothing of it.

topogate renders each Application and Flux Kustomization of this repository as its engine does
(docs/gitops.md). Where the engine's own render fails, it applies nothing, so the jobs the
pull request means to deploy never arrive (or keep running in their old form): the path does
not exist, the edited kustomization does not build (a patch that targets nothing, a component
outside the repository), a variable name Flux refuses, `${...}` Flux cannot parse, an image
argument `kustomize edit set image` refuses, a label Argo CD's `kustomize edit add label` finds
already set.

Why: `kubectl kustomize` of the directory alone can succeed while the engine's edited build
fails; the pull request gate must fail then too.

Failing example: a Flux Kustomization with `spec.path: ./apps/trian` (a typo).

Passing example: `spec.path: ./apps/train`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.gitops.notes import FAILS
from topogate.policies.context import Context

NAME = "gitops-render-fails"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for n in ctx.given.gitops:
        if n.kind == FAILS:
            yield Issue(n.object, f"{n.object}: {n.message}.", n.pos, severity=n.severity)
