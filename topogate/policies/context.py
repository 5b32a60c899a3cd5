"""The rule context: everything the rules may read, computed once before any rule runs.

It holds what every rule reads; a fact only some rules read is declared by their family
(policies/<family>/facts.py) and computed with the map (analysis.map.facts), and the run's own
inputs are one record, `Given`. One home: `analysed()` is the only place a context is built
from the map, for `check`, `check --live` and any other command that runs the rules, so no
command can leave a fact out (the live check once ran without six of them and was silent on
TG112, TG113, TG120 and TG3xx); `policies.FACTS` is every family's facts, handed to the map.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from typing import Any, TypeVar

from topogate.analysis.map.facts import Fact, Facts
from topogate.analysis.result import JobMap
from topogate.core.position import Position
from topogate.gitops.notes import Note
from topogate.inventory.model import Inventory
from topogate.inventory.problems import Problem
from topogate.k8s.objects import K8sObject

V = TypeVar("V")


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
class Given:
    """What the run itself hands the rules, besides the map: what it read or could not read, and
    what it compared. Each is read by the rules of one family (named)."""

    inventory_problems: tuple[Problem, ...] = ()  # TG001: the inventory could not be read
    drift: tuple[Drift, ...] = ()  # TG002: --rendered against what generate writes
    rendered: str | None = None  # TG002: the --rendered directory
    skipped: tuple[tuple[Position, str], ...] = ()  # TG123 (where, why): files among PATHs not read
    other_files: tuple[tuple[Position, str], ...] = ()  # TG123 (PATH, which): files of other extensions
    # TG009 (root, where, why): kustomization roots among PATHs not built (remote, Helm): never fetched
    not_local: tuple[tuple[str, Position, str], ...] = ()
    # TG012-TG014: what rendering the Argo CD Applications and Flux Kustomizations among the
    # inputs said: what it could not read, unset variables, renders the engine itself fails
    gitops: tuple[Note, ...] = ()
    live: tuple[LiveFact, ...] = ()  # TG2xx: check --live and drift only
    weakened: tuple[Weakened, ...] = ()  # TG011, check --changed-since: settings weaker than the ref's


@dataclass(frozen=True)
class Context:
    """What every rule may read: the inventory, the objects and the jobs of the map, the day,
    what the run hands it (`given`), and the facts the rule families declared, computed with
    the map (`fact`)."""

    inventory: Inventory | None
    inventory_file: str
    objects: tuple[K8sObject, ...] = ()
    jobs: tuple[JobMap, ...] = ()
    today: dt.date = field(default_factory=lambda: dt.date(1970, 1, 1))
    given: Given = field(default_factory=Given)
    facts: Facts = field(default_factory=Facts)
    # The rules that exist (ID -> name), set by the engine before any rule runs: a suppression
    # annotation naming no rule is a finding (TG010).
    known_rules: tuple[tuple[str, str], ...] = ()

    def fact(self, fact: Fact[Any, V]) -> V:
        """A fact its rule family declared (policies/<family>/facts.py), as the map computed it."""
        return self.facts.get(fact)


def analysed(inv: Inventory, inventory_file: str, objects: tuple[K8sObject, ...],
             jobs: tuple[JobMap, ...], facts: Facts, *, today: dt.date,
             drift: tuple[Drift, ...] = (), rendered: str | None = None,
             skipped: tuple[tuple[Position, str], ...] = (),
             other_files: tuple[tuple[Position, str], ...] = (),
             not_local: tuple[tuple[str, Position, str], ...] = (),
             live: tuple[LiveFact, ...] = (), weakened: tuple[Weakened, ...] = (),
             gitops: tuple[Note, ...] = ()) -> Context:
    """The context of a run that built the map (analysis.map.build_map with policies.FACTS)
    over `objects`."""
    return Context(
        inv, inventory_file, objects, jobs, today=today, facts=facts,
        given=Given(drift=drift, rendered=rendered, skipped=skipped, other_files=other_files,
                    not_local=not_local, gitops=gitops, live=live, weakened=weakened))


__all__ = ["Context", "Drift", "Given", "LiveFact", "Weakened", "analysed"]
