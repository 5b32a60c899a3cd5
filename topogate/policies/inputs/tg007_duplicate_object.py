"""TG007 duplicate-object: the same object is among the PATHs twice, so which copy counts depends on the order of the arguments.

Two copies of one object (same API group, kind, namespace and name, in one cluster) are what
kustomize refuses when a kustomization lists both. Among PATHs they used to be taken silently:
the first copy was analysed and the others dropped, so `check INV --rendered OUT OUT apps/`
passed where `check INV apps/ OUT` failed. Now the first copy (in the order of the PATHs) is
analysed and every other is this error, which names both places.

Why: a verdict that depends on argument order is no verdict; the usual causes are a base passed
beside the overlay built on it, a hand-written copy of a generated job, or the generated tree
passed twice (once as `--rendered OUT`'s content and once inside another PATH).

Failing example: `check inv.yaml job.yaml copy/job.yaml` where both files declare
`PyTorchJob ml-demo/train`.

Passing example: only one of the two files among the PATHs (or two objects with different
names).
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.inputs.facts import DUPLICATES

NAME = "duplicate-object"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for d in ctx.fact(DUPLICATES):
        first_root, root = d.roots
        if first_root and root and first_root != root:
            # one base built by two kustomization roots: two deployers, not a PATH given twice
            yield Issue(d.object, (
                f"{d.object} is rendered by two kustomization roots, {first_root} and {root} (the copy "
                f"analysed is {first_root}'s). Each is what a GitOps tool applies (an Argo CD "
                "Application's or a Flux Kustomization's path), so the object would have two owners "
                "that overwrite each other on every sync, and only one of them carries the "
                "placement. Fix: deploy it through one root: point the Application (or Flux "
                "Kustomization) that applies the other at the overlay topogate generates, and stop "
                "it applying the base (docs/adopting.md)."), d.pos)
            continue
        if (d.pos.file, d.pos.line, d.pos.column) == (d.first.file, d.first.line, d.first.column):
            yield Issue(d.object, (
                f"{d.object} is read twice: its file is among the PATHs twice (a directory and a "
                "file in it, or one file named twice). Fix: pass it once."), d.pos)
            continue
        yield Issue(
            d.object,
            f"{d.object} is among the PATHs twice: here and at {d.first} (the copy analysed). "
            "Kustomize refuses an object it already has; which copy counts would depend on the order "
            "of the PATHs. Fix: pass only one of the files or trees that hold it (a base beside its "
            "overlay, a hand-written copy of a generated job, the rendered tree twice).",
            d.pos,
        )
