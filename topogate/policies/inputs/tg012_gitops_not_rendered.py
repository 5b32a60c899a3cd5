"""TG012 gitops-not-rendered: part of what an Argo CD Application or a Flux Kustomization applies could not be rendered, so it was not checked.

`check` checks what Argo CD and Flux will apply: each Application and Flux Kustomization among
the inputs whose source is this repository is rendered as its engine renders it
(docs/gitops.md, "What Argo CD and Flux apply, and what topogate checks"). Some sources cannot
be read from the repository alone, and this finding names each, says that the render is
incomplete and which way the verdict may be wrong:

- a source in another repository, a Helm chart, a Config Management Plugin, an OCI or bucket
  source, jsonnet files, a remote base, an ApplicationSet generator other than a list: what it
  applies is not checked, so a job it deploys may be split or blocked with no finding;
- a Flux `substituteFrom` ConfigMap or Secret that is not among the inputs: the objects that
  read a variable it may set are not analysed;
- a GitRepository that is not among the inputs, or an inventory without `gitops.repoURL`:
  which repository is fetched cannot be told;
- `${ARGOCD_APP_REVISION}` in an image or label, known only when Argo CD syncs;
- a field the Flux v1 API does not have (the API server drops it), or a GitRepository
  `spec.include` whose files are not read (warnings).

Why: a verdict on less than what is applied must say so; silence would read as "checked".

Failing example: a Flux Kustomization whose `substituteFrom` names ConfigMap `cluster-vars`,
defined only in the cluster, and a job that reads `${TRAIN_ZONE}` from it.

Passing example: `cluster-vars` committed beside the Kustomization (and passed to `check`), or
the value in `postBuild.substitute`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.gitops.notes import NOT_RENDERED
from topogate.policies.context import Context

NAME = "gitops-not-rendered"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for n in ctx.given.gitops:
        if n.kind == NOT_RENDERED:
            yield Issue(n.object, f"{n.object}: {n.message}.", n.pos, severity=n.severity)
