"""Step 3 of the package docstring: the groups that can never start, whatever the zones: no pool,
no pool with their podAffinity keys, no pod to follow, or an affinity deadlock."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.placement.affinity import Affinity
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.nodes import NodeFilters
from topogate.analysis.placement.terms import Term

__all__ = ["Unstartable", "find_unstartable"]


@dataclass(frozen=True)
class Unstartable:
    reasons: Mapping[str, tuple[str, ...]]  # per group with pods: why it never starts (() when it can)
    # Groups none of whose pods ever starts (a subset of those with reasons): no pool, nothing to
    # follow, affinity that can never hold, a deadlock.
    never: frozenset[str] = frozenset()


def find_unstartable(inputs: Inputs, nodes: NodeFilters, affinity: Affinity) -> Unstartable:
    reasons = {n: _node_and_affinity_reasons(n, nodes, affinity.required[n]) for n in inputs.names}
    never = set()
    for n, c in sorted(affinity.contradictions.items()):
        if c.never or c.at_most_one:
            reasons[n].append(c.message(inputs.groups[n].pods))
        if c.never:
            never.add(n)
    for a, b, key in sorted(affinity.never_together):
        if a == b and inputs.groups[a].pods > 1:
            reasons[a].append(f"{a}: podAntiAffinity on {key}, which every node shares, lets one of its "
                              f"{inputs.groups[a].pods} pods run at a time: the others stay Pending")
        elif a != b:
            reasons[b].append(f"{a} and {b} repel each other on {key} (podAntiAffinity), which every node "
                              "shares: whichever starts second stays Pending")
    startable = _startable(inputs.names, affinity.required, never)
    for n in inputs.names:
        # A deadlock is named only when nothing else already keeps the group from starting.
        if n not in startable and not reasons[n] and n not in never:
            e = affinity.required[n]
            waiting_for = sorted(e.targets) if e is not None else []
            reasons[n].append(f"{n} waits (podAffinity) for {', '.join(waiting_for)}, which "
                              "wait(s) for it in turn: none of them ever starts")
    dead = {n for n in inputs.names if n not in startable or not nodes.zones[n] or n in nodes.missing_topology_key}
    return Unstartable({n: tuple(r) for n, r in reasons.items()}, frozenset(dead | never))


def _node_and_affinity_reasons(n: str, nodes: NodeFilters, required: Term | None) -> list[str]:
    """A group that fits no pool, lacks a topology key, or requires pods that do not exist."""
    out: list[str] = []
    fits = nodes.pool_fits[n]
    if n in nodes.missing_topology_key:
        out.append(nodes.missing_topology_key[n])
    elif not nodes.zones[n]:
        out.append(f"{n} fits no pool: " + "; ".join(sorted({f"{f.zone}/{f.pool}: {f.reason}" for f in fits}))
                   if fits else f"{n}: the cluster has no pools")
    if required is not None and not required.targets and not required.peers:
        out.append(f"{n} requires podAffinity with pods that do not exist (no pod matches all its "
                   "required podAffinity terms): it stays Pending")
    return out


def _startable(names: tuple[str, ...], required: Mapping[str, Term | None], never: set[str]) -> set[str]:
    """The groups that can start: no podAffinity, a term the pod matches itself ("the first pod in
    a series that have affinity to themselves"), a peer to follow, or a target that can start
    (not those whose every match repels them, ``never``)."""
    startable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for n in names:
            if n in startable or n in never:
                continue
            e = required[n]
            if e is None or n in e.targets or e.peers or (e.targets & startable):
                startable.add(n)
                changed = True
    return startable
