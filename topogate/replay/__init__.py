"""``topogate replay``: recorded Hubble flows decided against the tree, offline.

Reads FLOWS (`hubble observe -o json`) as a stream and asks the one evaluator (the one `check`,
`trace` and `diff` use) for each flow's verdict in the tree of INVENTORY and PATHs, read the
way `diff` reads a tree. Reports the flows the cluster carried that the tree would deny, the
flows the cluster dropped that the tree allows, and per training job whether its NCCL,
rendezvous and DNS flows were seen crossing network zones.

  flows.py   the stream: bounded lines, every bad line at FILE:line
  decide.py  endpoints -> pod classes or outside peers; the verdict of each distinct flow
  render.py  text, JSON, markdown; --suggest (inventory entries admitting the denied flows)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from topogate.analysis.netpolicy import PolicyError
from topogate.core.position import Position
from topogate.diff import DiffError, read_tree
from topogate.diff.members import sides_of
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.policies.context import LiveFact
from topogate.policies.live.facts import CARRIED_DENIED
from topogate.replay.decide import Replay, Seen, denied_observed, dropped_allowed, per_job, replay
from topogate.replay.flows import MAX_LINE, BadLine, Flow, read_flows
from topogate.replay.render import DECIDED, as_json, suggest
from topogate.report.formats import Formats
from topogate.safeio.oserror import reason


class ReplayError(Exception):
    """Bad input: each problem one line, FILE:line where there is one (exit 2)."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


@dataclass(frozen=True)
class ReplayRun:
    result: Replay
    inventory: Inventory


def run_replay(flows: str, inventory: str, paths: Sequence[str], cluster: str | None = None) -> ReplayRun:
    """Read the tree, then stream FLOWS through the evaluator (module doc)."""
    with tempfile.TemporaryDirectory(prefix="topogate-replay-") as scratch:
        try:
            tree = read_tree("head", inventory, paths, scratch)
        except DiffError as err:
            raise ReplayError([str(err)]) from None
        return replay_objects(flows, tree.inventory, tree.objects, cluster)


def replay_objects(flows: str, inventory: Inventory, objects: Sequence[K8sObject],
                   cluster: str | None = None) -> ReplayRun:
    """Stream FLOWS through the evaluator, against objects already read (`check --flows`
    replays against the objects the check read, not a second build of the same tree)."""
    try:
        sides = sides_of(inventory, objects)
    except PolicyError as err:
        raise ReplayError([str(err)]) from None
    names = sorted(sides)
    if cluster is None and len(names) == 1:
        cluster = names[0]
    if cluster not in sides:
        raise ReplayError([f"--cluster: name one of {', '.join(names) or 'none (no manifests)'}"])
    bad: list[BadLine] = []
    try:
        with open(flows, "rb") as stream:
            result = replay(read_flows(stream, flows, bad), sides[cluster])
    except OSError as err:
        raise ReplayError([f"{flows}: cannot read: {reason(err)}"]) from None
    if bad:
        raise ReplayError([str(b) for b in bad])
    return ReplayRun(result, inventory)


def _decided(fmt: str) -> Callable[[ReplayRun], str]:
    return lambda run: DECIDED.render(run.result, fmt)


# replay's table in the report registry: the decisions in each format, and --suggest's inventory
# entries (they need the inventory the flows were decided against).
REPORT: Formats[ReplayRun] = Formats({
    **{name: _decided(name) for name in DECIDED.names},
    "suggest": lambda run: suggest(run.result, run.inventory),
}, fallback="text")


def carried_denied(run: ReplayRun, flows: str) -> tuple[LiveFact, ...]:
    """The flows the cluster carried that the tree denies, as TG210's facts (`check --flows`)."""
    return tuple(
        LiveFact(CARRIED_DENIED, f"{s.src.shown} -> {s.dst.shown}",
                 f"{s.src.shown} -> {s.dst.shown} {s.port}/{s.protocol} was carried {s.count}x in the "
                 f"recording; the tree denies it: {s.decision.words}"
                 + (f" ({s.decision.where})" if s.decision.where else ""),
                 Position(flows, s.first_line, 1))
        for s in denied_observed(run.result))


__all__ = ["REPORT", "carried_denied", "replay_objects", "MAX_LINE", "BadLine", "Flow", "Replay",
           "ReplayError", "Seen", "as_json", "denied_observed", "dropped_allowed", "per_job", "read_flows",
           "replay", "run_replay", "suggest"]
