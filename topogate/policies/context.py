"""The rule context: everything the rules may read, computed once before any rule runs.

One home: `analysed()` is the only place a context is built from the map, for `check`,
`check --live` and any other command that runs the rules, so no command can leave a fact out
(the live check once ran without six of them and was silent on TG112, TG113, TG120 and TG3xx).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from topogate.analysis.map.build import MapFacts
from topogate.analysis.map.coverage import Ungrouped, Unread, ungrouped_templates, unread_objects
from topogate.analysis.map.duplicates import Duplicate
from topogate.analysis.map.labels import LabelLie, SpreadSplit
from topogate.analysis.placement.kueue import Concern
from topogate.analysis.proofs.boundary import Opening
from topogate.analysis.proofs.doors import ClosedDoor
from topogate.analysis.proofs.ingress import OpenIngress
from topogate.analysis.result import JobMap
from topogate.core.position import Position
from topogate.gitops.notes import Note
from topogate.inventory.model import Inventory, Workload
from topogate.inventory.problems import Problem
from topogate.sources.manifests import K8sObject


@dataclass(frozen=True)
class Drift:
    status: str  # added | changed | removed
    path: str  # relative to the rendered OUT
    file: str  # as displayed in findings
    line: int = 1  # first line of `file` that differs
    diff: str = ""  # unified diff, committed -> what generate writes


@dataclass(frozen=True, order=True)
class LiveFact:
    """A fact about the live cluster (check --live, drift), one kind per TG2xx rule."""

    kind: str
    object: str
    message: str
    pos: Position


@dataclass(frozen=True, order=True)
class Weakened:
    """One setting of the pull request's settings file that narrows the gate more than the
    settings at the `--changed-since` ref do (TG011): where the pull request writes it."""

    setting: str  # select | ignore | strict | cluster | exclude | per-path-ignores
    object: str  # Settings/<file>
    message: str
    pos: Position


@dataclass(frozen=True)
class PolicySelects:
    """How many pod classes of the map a policy selects (TG109 reports the ones with none)."""

    policy: str
    selected: int
    pos: Position


@dataclass(frozen=True)
class Context:
    inventory: Inventory | None
    inventory_file: str
    objects: tuple[K8sObject, ...] = ()
    jobs: tuple[JobMap, ...] = ()
    inventory_problems: tuple[Problem, ...] = ()
    drift: tuple[Drift, ...] = ()
    rendered: str | None = None
    today: dt.date = field(default_factory=lambda: dt.date(1970, 1, 1))
    policy_selects: tuple[PolicySelects, ...] = ()
    boundary_openings: tuple[Opening, ...] = ()
    zone_label_lies: tuple[LabelLie, ...] = ()
    spread_splits: tuple[SpreadSplit, ...] = ()
    unprotected: tuple[tuple[str, Position], ...] = ()  # (object, where)
    unassigned: tuple[tuple[str, Position], ...] = ()  # (object, where): jobs with no known cluster
    open_ingress: tuple[OpenIngress, ...] = ()
    closed_doors: tuple[ClosedDoor, ...] = ()
    ungrouped: tuple[Ungrouped, ...] = ()  # pod templates of no job
    unread: tuple[Unread, ...] = ()  # objects of kinds not read that select pods or nodes
    not_modelled: tuple[tuple[str, str, str, Position], ...] = ()  # (policy, construct, message, where)
    refused: tuple[tuple[str, str, Position], ...] = ()  # (policy, why, where): the agent imports none of it
    unselecting: tuple[tuple[str, str, Position, bool], ...] = ()  # (policy, sentence, where, subject)
    skipped: tuple[tuple[Position, str], ...] = ()  # (where, why): files among PATHs not read
    other_files: tuple[tuple[Position, str], ...] = ()  # (PATH, which): files of other extensions
    # (root, where, why): kustomization roots among PATHs not built (remote, Helm): never fetched
    not_local: tuple[tuple[str, Position, str], ...] = ()
    kueue_concerns: tuple[Concern, ...] = ()
    # What rendering the Argo CD Applications and Flux Kustomizations among the inputs said:
    # what it could not read, unset variables, renders the engine itself fails (TG012-TG014)
    gitops: tuple[Note, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()  # later copies of an object among PATHs
    checked_clusters: tuple[str, ...] = ()  # the clusters whose manifests were analysed
    live: tuple[LiveFact, ...] = ()  # check --live and drift only
    weakened: tuple[Weakened, ...] = ()  # check --changed-since: settings weaker than the ref's
    # The rules that exist (ID -> name), set by the engine before any rule runs: a suppression
    # annotation naming no rule is a finding (TG010).
    known_rules: tuple[tuple[str, str], ...] = ()


def declared_absent(ctx: Context) -> tuple[Workload, ...]:
    """The inventory's workloads of the clusters checked that no analysed job is."""
    if ctx.inventory is None:
        return ()
    # By namespace and name: a job written by hand as a group of plain workloads
    # (topogate.dev/group: NAME) is that workload, under another form.
    found = {tuple(ref.split("/")[1:3]) for ref in (*(j.object for j in ctx.jobs),
                                                    *(obj for obj, _ in ctx.unassigned))}
    return tuple(w for c in ctx.checked_clusters for w in ctx.inventory.workloads_of(c)
                 if (w.namespace, w.name) not in found)


def analysed(inv: Inventory, inventory_file: str, objects: tuple[K8sObject, ...],
             jobs: tuple[JobMap, ...], facts: MapFacts, *, today: dt.date,
             drift: tuple[Drift, ...] = (), rendered: str | None = None,
             skipped: tuple[tuple[Position, str], ...] = (),
             other_files: tuple[tuple[Position, str], ...] = (),
             not_local: tuple[tuple[str, Position, str], ...] = (),
             live: tuple[LiveFact, ...] = (), weakened: tuple[Weakened, ...] = (),
             gitops: tuple[Note, ...] = ()) -> Context:
    """The context of a run that built the map (analysis.map.build_map) over `objects`."""
    return Context(
        inv, inventory_file, objects, jobs, drift=drift, rendered=rendered,
        today=today,
        policy_selects=tuple(PolicySelects(ref, n, pos) for ref, n, pos in facts.policy_selects),
        boundary_openings=facts.boundary_openings, zone_label_lies=facts.zone_label_lies,
        spread_splits=facts.spread_splits, unprotected=facts.unprotected,
        unassigned=facts.unassigned, open_ingress=facts.open_ingress,
        closed_doors=facts.closed_doors, ungrouped=ungrouped_templates(objects), unread=unread_objects(objects),
        not_modelled=facts.not_modelled, refused=facts.refused, unselecting=facts.unselecting,
        skipped=skipped, other_files=other_files, not_local=not_local,
        kueue_concerns=facts.kueue_concerns, gitops=gitops,
        duplicates=facts.duplicates, checked_clusters=facts.checked_clusters, live=live,
        weakened=weakened)


__all__ = ["Context", "Drift", "LiveFact", "Weakened", "analysed", "declared_absent"]
