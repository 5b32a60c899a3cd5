"""What the placement analysis answers: per group and per job, where pods can land, whether
the job stays in one zone, and its GPU capacity.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from topogate.analysis.scheduling import PoolFit

__all__ = ["Capacity", "GroupPlacement", "JobPlacement", "zone_list"]



@dataclass(frozen=True)
class Capacity:
    requested: int  # GPUs the job asks for (all groups)
    available: int  # GPUs of the pools where some group of the job can land
    fits: bool
    zone: str = ""  # for a co-located job: the zone with the most GPUs usable by the job
    zone_gpus: int = 0
    message: str = ""


@dataclass(frozen=True)
class GroupPlacement:
    name: str
    pods: int
    gpus_per_pod: int
    zones: tuple[str, ...]  # sorted: where this group's pods can land in a feasible placement
    node_zones: tuple[str, ...]  # sorted: zones passing the node filters alone
    pools: tuple[tuple[str, tuple[str, ...]], ...]  # (zone, pools) for the zones above
    fits: tuple[PoolFit, ...] = field(default=(), compare=False)  # every pool with its verdict
    unit: int = -1  # co-location unit id (groups with equal ids share one zone); -1: no pods
    single_zone: bool = True  # every feasible placement keeps all its pods in one zone
    splits: bool = False  # every feasible placement spreads its pods over several zones
    self_anti: bool = False  # its pods repel each other on the zone key
    reasons: tuple[str, ...] = ()  # why it cannot be scheduled ("" when it can)
    # Where its pods can be bound in some run, whether the rest of the job runs or not (wider than
    # `zones`: a first pod may go where the rest cannot follow); () when none ever starts. What the
    # podAffinity of another job's pods may find.
    reach: tuple[str, ...] = ()
    held: bool = False  # held in one zone with its unit by what its pods follow (not only by its zones)

    @property
    def schedulable(self) -> bool:
        return self.pods <= 0 or (bool(self.zones) and not self.reasons)

    @property
    def removed(self) -> dict[tuple[str, str], str]:
        """(zone, pool) -> why the pool was removed by the node filters."""
        return {(f.zone, f.pool): f.reason for f in self.fits if not f.fits}


@dataclass(frozen=True)
class JobPlacement:
    object_id: str
    cluster: str
    groups: tuple[GroupPlacement, ...]
    schedulable: bool
    colocated: bool
    may_split_reasons: tuple[str, ...] = ()
    unschedulable_reasons: tuple[str, ...] = ()
    pending_risks: tuple[str, ...] = ()  # scheduler choices that leave pods Pending
    capacity: Capacity = Capacity(0, 0, True)
    anti_pairs: frozenset[tuple[str, str]] = frozenset()  # groups that never share a zone
    # Groups another scheduler places: (group, schedulerName, what topogate read and assumed).
    scheduler_notes: tuple[tuple[str, str, str], ...] = ()
    # Groups placed into one zone as a whole, before any of their pods is bound (Kueue's pod-set
    # groups, a PodGroup's zone topology, another scheduler's): no first pod picks their zone.
    placed_whole: frozenset[str] = frozenset()

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({z for g in self.groups for z in g.zones}))

    def group(self, name: str) -> GroupPlacement | None:
        return next((g for g in self.groups if g.name == name), None)

    def zone_pairs(self, a: str, b: str) -> frozenset[tuple[str, str]]:
        """The (zone of an `a` pod, zone of a `b` pod) pairs some feasible placement realises.

        For a == b: pairs of two distinct pods of the group. Unknown names give the empty set.
        """
        ga, gb = self.group(a), self.group(b)
        if ga is None or gb is None or ga.pods <= 0 or gb.pods <= 0:
            return frozenset()
        if a == b:
            if ga.pods == 1:
                return frozenset()
            if ga.single_zone:
                return frozenset((z, z) for z in ga.zones)
            return frozenset(
                (x, y) for x in ga.zones for y in ga.zones if not (ga.self_anti and x == y)
            )
        if ga.unit == gb.unit and ga.single_zone and gb.single_zone:
            return frozenset((z, z) for z in ga.zones if z in gb.zones)
        repel = (a, b) in self.anti_pairs or (b, a) in self.anti_pairs
        return frozenset((x, y) for x in ga.zones for y in gb.zones if not (repel and x == y))


def zone_list(zones: Iterable[str]) -> str:
    """Zones for a message: sorted, comma-separated, or "no zone"."""
    zs = sorted(zones)
    return ", ".join(zs) if zs else "no zone"
