"""``topogate diff``: what does a change open or close?

Lists every (sender, receiver, port range, protocol) whose verdict differs between a base
tree (GITREF, read from a git worktree of it) and the head tree (the work tree), with the
deciding rule on each side at its file:line, grouped per job and per pair of network zones,
and marks the rows that cross a network-zone boundary. Every verdict is the one evaluator's,
the one `check` and `trace` use; nothing here decides a flow.

  trees.py    the two trees, read as `check` reads them (the base from a git worktree)
  members.py  per cluster: the endpoints asked about, and the policies compiled as trace does
  compare.py  the rows: both trees' port classes per pair, overlaid
  render.py   text, JSON, markdown (with a mermaid picture), SARIF
"""

from __future__ import annotations

from collections.abc import Sequence

from topogate.analysis.netpolicy import PolicyError
from topogate.diff.compare import Decision, DiffResult, Row, diff_trees
from topogate.diff.trees import DiffError, Tree, both_trees, read_tree, same_trees


def run_diff(inventory: str, paths: Sequence[str], base: str) -> DiffResult:
    """Diff the work tree against GITREF `base` (module doc)."""
    with both_trees(inventory, paths, base) as (b, h):
        try:
            return diff_trees(b, h, base)
        except PolicyError as err:
            raise DiffError(str(err)) from None


def failed(d: DiffResult, fail_on: str | None) -> bool:
    """Whether `--fail-on` turns this diff into exit 1."""
    if fail_on == "opened-boundary":
        return bool(d.opened_boundary)
    if fail_on == "opened-from-world":  # an address outside the cluster newly reaches a job
        return bool(d.opened_from_world)
    if fail_on == "opened":
        return any(r.change == "opened" for r in d.rows)
    if fail_on == "any":
        return bool(d.rows)
    return False


__all__ = ["Decision", "DiffError", "DiffResult", "Row", "Tree", "both_trees", "diff_trees",
           "failed", "read_tree", "run_diff", "same_trees"]
