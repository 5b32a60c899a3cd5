"""Everything the rules may read, computed once before any rule runs."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.result import JobMap
from topogate.inventory.loader import Problem
from topogate.inventory.model import Inventory
from topogate.sources.manifests import K8sObject


@dataclass(frozen=True)
class Drift:
    status: str  # added | changed | removed
    path: str  # relative to the rendered OUT
    file: str  # as displayed in findings
    line: int = 1  # first line of `file` that differs
    diff: str = ""  # unified diff, committed -> what generate writes


@dataclass(frozen=True)
class Context:
    inventory: Inventory | None
    inventory_file: str
    objects: tuple[K8sObject, ...] = ()
    jobs: tuple[JobMap, ...] = ()
    policies: Any = None  # topogate.analysis.netpolicy.PolicySet
    inventory_problems: tuple[Problem, ...] = ()
    drift: tuple[Drift, ...] = ()
    rendered: str | None = None
    today: dt.date = field(default_factory=lambda: dt.date(1970, 1, 1))
    # per-policy facts computed by the map builder: policy ref -> number of pod classes selected
    policy_selects: tuple[tuple[str, int, Any], ...] = ()  # (ref, pod classes selected, Position)
    boundary_openings: tuple[Any, ...] = ()  # analysis.map.Opening
    zone_label_lies: tuple[Any, ...] = ()  # analysis.map.LabelLie
    spread_splits: tuple[Any, ...] = ()  # analysis.map.SpreadSplit
    unprotected: tuple[tuple[str, Any], ...] = ()  # (object, Position)
    unassigned: tuple[tuple[str, Any], ...] = ()  # (object, Position): jobs with no known cluster
    open_ingress: tuple[Any, ...] = ()  # analysis.ingress.OpenIngress
    closed_doors: tuple[Any, ...] = ()  # analysis.doors.ClosedDoor
    ungrouped: tuple[Any, ...] = ()  # analysis.coverage.Ungrouped: pod templates of no job
    not_modelled: tuple[tuple[str, str, str, Any], ...] = ()  # (policy, construct, message, Position)
    skipped: tuple[tuple[Any, str], ...] = ()  # (Position, why): files among PATHs not read
    kueue_concerns: tuple[Any, ...] = ()  # analysis.placement.kueue.Concern
