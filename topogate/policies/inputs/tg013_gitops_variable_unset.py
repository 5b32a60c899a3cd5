"""TG013 gitops-variable-unset: an object a Flux Kustomization applies reads a variable that has no value and no default.

Flux substitutes `${VAR}` in every object of a Kustomization with `postBuild` (from
`postBuild.substitute` and the ConfigMaps and Secrets of `postBuild.substituteFrom`).
kustomize-controller substitutes strictly by default (its StrictPostBuildSubstitutions feature,
on since v1.9): a variable read without a value or a default (`${VAR:=default}`) fails the
build, and Flux applies nothing of the Kustomization; the finding is an error. Without strict
substitution Flux writes an empty string. topogate never analyses `${VAR}` as if it were the
value (a zone named `${TRAIN_ZONE}` fits no node): the objects of a failing Kustomization are
not analysed. When the Kustomization defines no variable at all, Flux substitutes nothing and
applies `${VAR}` as written: a warning, and the text is what is checked.

Why: a per-cluster value forgotten for one cluster stops that cluster's deployment, or (with
substitution off) sends the job with an empty zone, which no node has.

Failing example: a job with `values: ["${TRAIN_ZONE}"]` under a Kustomization whose
`postBuild.substitute` sets `CLUSTER` only.

Passing example: `TRAIN_ZONE: zone-a` in `postBuild.substitute`, or `${TRAIN_ZONE:=zone-a}`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.gitops.notes import UNSET
from topogate.policies.context import Context

NAME = "gitops-variable-unset"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for n in ctx.given.gitops:
        if n.kind == UNSET:
            yield Issue(n.object, f"{n.object}: {n.message}.", n.pos, severity=n.severity)
