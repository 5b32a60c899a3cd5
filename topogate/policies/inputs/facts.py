"""The facts the input rules read from the map (TG004-TG008): the jobs of no known cluster, pod
templates of no job, later copies of an object, and the clusters checked."""

from __future__ import annotations

from typing import Any

from topogate.analysis.map.coverage import Ungrouped, ungrouped_templates
from topogate.analysis.map.duplicates import Duplicate
from topogate.analysis.map.facts import Fact, of_map
from topogate.core.position import Position
from topogate.inventory.model import Workload
from topogate.policies.context import Context

# (object, where): jobs of no known cluster, not analysed (TG004)
UNASSIGNED: Fact[object, tuple[tuple[str, Position], ...]] = of_map("unassigned", lambda whole: whole.unassigned)
UNGROUPED: Fact[object, tuple[Ungrouped, ...]] = of_map(
    "ungrouped", lambda whole: ungrouped_templates(whole.objects))  # pod templates of no job
DUPLICATES: Fact[object, tuple[Duplicate, ...]] = of_map(
    "duplicates", lambda whole: whole.duplicates)  # later copies of an object among PATHs
# The clusters whose manifests were analysed (some of them read), or the run was about.
CHECKED_CLUSTERS: Fact[object, tuple[str, ...]] = of_map("checked-clusters", lambda whole: whole.checked)

FACTS: tuple[Fact[Any, Any], ...] = (UNASSIGNED, UNGROUPED, DUPLICATES, CHECKED_CLUSTERS)


def declared_absent(ctx: Context) -> tuple[Workload, ...]:
    """The inventory's workloads of the clusters checked that no analysed job is."""
    if ctx.inventory is None:
        return ()
    # By namespace and name: a job written by hand as a group of plain workloads
    # (topogate.dev/group: NAME) is that workload, under another form.
    found = {tuple(ref.split("/")[1:3]) for ref in (*(j.object for j in ctx.jobs),
                                                    *(obj for obj, _ in ctx.fact(UNASSIGNED)))}
    return tuple(w for c in ctx.fact(CHECKED_CLUSTERS) for w in ctx.inventory.workloads_of(c)
                 if (w.namespace, w.name) not in found)


__all__ = ["DUPLICATES", "FACTS", "UNASSIGNED", "UNGROUPED", "declared_absent"]
