"""Facts besides the jobs: each is declared by the rule family that reads it (a name, the type of
its items, and how it is worked out from one cluster's share of the map or from the whole map),
and `build_map` computes every fact it is handed once, while each cluster's compiled policies are
alive, so no fact needs a field of its own in the map or in the rule context.

A fact's cluster shares are joined in inventory order, whichever process worked a cluster out
(build._map_clusters), then finished over the whole map. What several facts of one cluster share
(the boundary proof of TG107, TG112 and TG113) they ask `OneCluster.once` for: it is worked out
for the first that asks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NamedTuple, TypeVar, cast

from topogate.analysis.map.cluster import ClusterMap
from topogate.analysis.map.duplicates import Duplicate
from topogate.analysis.netpolicy import PodClass
from topogate.analysis.result import JobMap
from topogate.core.position import Position
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.objects import K8sObject

P = TypeVar("P")  # what one cluster adds to a fact
V = TypeVar("V")  # the fact's value
T = TypeVar("T")
R = TypeVar("R")


class MappedJob(NamedTuple):
    """One job of a cluster: as found, as mapped, and each group's pod class."""

    job: TrainingJob
    map: JobMap
    classes: dict[str, PodClass]


@dataclass(eq=False)
class OneCluster:
    """One cluster's share of the map, as a fact sees it while its policies are compiled."""

    map: ClusterMap
    objects: list[K8sObject]  # the cluster's own objects (not the shared ones)
    shared: list[K8sObject]  # objects of no cluster that every cluster reads (shared policies)
    jobs: list[MappedJob]  # in the order the cluster's jobs were found
    _memo: dict[Callable[..., Any], Any] = field(default_factory=dict, init=False, repr=False)

    @property
    def inventory(self) -> Inventory:
        return self.map.inv

    @property
    def cluster(self) -> Cluster:
        return self.map.cluster

    def once(self, work: Callable[[OneCluster], R]) -> R:
        """`work(self)`, worked out for the first fact that asks and shared with the others."""
        if work not in self._memo:
            self._memo[work] = work(self)
        return cast(R, self._memo[work])


@dataclass(frozen=True)
class WholeMap:
    """The whole map, as a fact sees it once every cluster is done."""

    inventory: Inventory
    objects: Sequence[K8sObject]  # every object the map was built from
    unassigned: tuple[tuple[str, Position], ...]  # (object, where): jobs of no known cluster
    duplicates: tuple[Duplicate, ...]  # later copies of an object, not analysed (map.duplicates)
    checked: tuple[str, ...]  # the clusters the run checked
    narrowed: bool  # only some clusters were analysed (check --changed-since)


@dataclass(frozen=True, eq=False)
class Fact(Generic[P, V]):
    """A fact the rules read (`Context.fact`). Computed by the map when it has `whole`; else it
    is given by the run or has its `empty` value."""

    name: str
    empty: V
    cluster: Callable[[OneCluster], Iterable[P]] | None = None  # one cluster's share
    whole: Callable[[WholeMap, tuple[P, ...]], V] | None = None  # from every cluster's shares


def per_cluster(name: str, share: Callable[[OneCluster], Iterable[T]], *,
                distinct: bool = False) -> Fact[T, tuple[T, ...]]:
    """A fact that is every cluster's items in inventory order (`distinct`: each item once, where
    it was first found: a shared policy is compiled in every cluster)."""
    return Fact(name, (), share, _first_seen if distinct else _joined)


def of_map(name: str, work: Callable[[WholeMap], tuple[T, ...]]) -> Fact[object, tuple[T, ...]]:
    """A fact worked out from the whole map."""
    return Fact(name, (), None, lambda whole, _shares: work(whole))


def _joined(_whole: WholeMap, shares: tuple[T, ...]) -> tuple[T, ...]:
    return shares


def _first_seen(_whole: WholeMap, shares: tuple[T, ...]) -> tuple[T, ...]:
    return tuple(dict.fromkeys(shares))


class Facts:
    """The facts of one run, by name. `built`: the map was built, so a fact it computes that is
    missing was never handed to it (a family that does not list it in its FACTS): an error, not
    an empty answer that would silence a rule."""

    def __init__(self, values: Mapping[str, object] | None = None, built: bool = False):
        self._values = dict(values or {})
        self.built = built

    def get(self, fact: Fact[Any, V]) -> V:
        if fact.name in self._values:
            return cast(V, self._values[fact.name])
        if self.built and fact.whole is not None:
            raise LookupError(f"fact {fact.name} was not computed: list it in its family's FACTS")
        return fact.empty


def cluster_shares(facts: Sequence[Fact[Any, Any]], one: OneCluster) -> dict[str, tuple[Any, ...]]:
    """Every fact's share of one cluster, in the order the facts are handed."""
    return {f.name: tuple(f.cluster(one)) for f in facts if f.cluster is not None}


def finished(facts: Sequence[Fact[Any, Any]], whole: WholeMap,
             shares: Sequence[Mapping[str, tuple[Any, ...]]]) -> Facts:
    """Every fact over the whole map, from the clusters' shares in inventory order."""
    names = [f.name for f in facts]
    if len(set(names)) != len(names):
        raise ValueError(f"two facts of one name: {sorted(n for n in names if names.count(n) > 1)}")
    values: dict[str, object] = {}
    for f in facts:
        if f.whole is None:
            continue  # given by the run, not computed
        joined = tuple(item for share in shares for item in share.get(f.name, ()))
        values[f.name] = f.whole(whole, joined)
    return Facts(values, built=True)


__all__ = ["Fact", "Facts", "MappedJob", "OneCluster", "WholeMap", "cluster_shares", "finished", "of_map",
           "per_cluster"]
