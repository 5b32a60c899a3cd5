"""One `check`'s read, decided before any build: the read plan.

The options (PATHs, --cluster, --changed-since, --exclude), git and one walk of the PATHs give
a `ReadPlan`: the units (kustomization roots and plain manifests) to read, every tree checked
and each root's build decided, whole or in parts; and for a --changed-since run what it leaves
out: the units of clusters that did not change, the inventory's bases that cannot have
changed, the clusters not analysed. `run_check` (topogate.check.run) executes it. The reader
below (topogate.sources.manifests) is handed the decision as data (`prepare`, `Collecting`)
and never asks back.

The cluster of each unit, where its path tells it (topogate.check.changed.unit_cluster), is in
the plan too (`by_cluster`): which builds and files belong to one cluster is known before any
of them is read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from topogate.analysis.result import Scope
from topogate.check import changed
from topogate.check.config import Globs
from topogate.check.narrow import Narrowing, cluster_names
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import WalkUnit, display
from topogate.sources.manifests import Collecting, Found, Reading, find, prepare

# What the exclude globs left unread, gathered across the reads of one run (a narrowed read
# that escapes is read again): (glob base, pattern) -> the entries, as shown.
Excluded = dict[tuple[str, str], set[str]]


@dataclass
class ReadPlan:
    """What one `check` reads (see the module doc). `narrowing`: the --changed-since selection
    (None without the flag, or before the inventory's cluster names are known)."""

    targets: tuple[str, ...]
    also_inside: tuple[str, ...]
    found: Found  # the PATHs walked
    reading: Reading  # the units kept, the trees checked, each root whole or in parts
    narrowing: Narrowing | None = None
    exclude: tuple[Globs, ...] = ()
    excluded: Excluded = field(default_factory=dict)
    names: tuple[str, ...] = ()  # the inventory's clusters, once known (ahead, or `bind`)
    cluster: str | None = None  # --cluster
    left_unread: int = 0  # inventory bases `bases_to_read` said no to

    def start(self) -> Collecting:
        """The builds started, in the background; the objects are its `result`."""
        return Collecting(list(self.targets), self.also_inside, self.reading)

    def bind(self, inv: Inventory) -> bool:
        """Attach the loaded inventory; False when the cluster names the plan was made with are
        not its own (then the plan, and any build it started, must be dropped)."""
        self.names = tuple(c.name for c in inv.clusters)
        return self.narrowing.bind(inv) if self.narrowing is not None else True

    def escaped(self, objects: Sequence[K8sObject]) -> bool:
        """After a narrowed read: whether it does not hold together (Narrowing.escaped); the
        run then reads `widened()`."""
        return self.narrowing is not None and self.narrowing.escaped(objects)

    def widened(self) -> ReadPlan:
        """Everything the PATHs hold (less what --exclude leaves out), from the same walk."""
        kept = _kept(self.found, None, self.exclude, self.excluded)
        return dataclasses.replace(self, reading=prepare(self.found, kept))

    def bases_to_read(self) -> Callable[[str, str], bool] | None:
        """For the inventory's loader: which workloads' bases to read (None: all); counts
        those left unread (`left_unread`: with none, the load is the whole inventory)."""
        wanted = self.narrowing.bases_to_read() if self.narrowing is not None else None
        if wanted is None:
            return None

        def read(cluster: str, base: str) -> bool:
            if wanted(cluster, base):
                return True
            self.left_unread += 1
            return False

        return read

    def wants_whole_inventory(self, executed: ReadPlan) -> bool:
        """Whether the bases this plan left unread are wanted after all: the plan `executed`
        is not the narrowing they were chosen by (other cluster names), or reads everything
        (its narrowed read escaped). With none left unread, the load was whole already."""
        return bool(self.left_unread) and (executed.narrowing is not self.narrowing or executed.only is None)

    @property
    def only(self) -> Collection[str] | None:
        """The clusters to analyse (None: all)."""
        return self.narrowing.only if self.narrowing is not None else None

    def scope(self) -> Scope | None:
        """What a --changed-since run covered, for the summary line (None without the flag)."""
        return self.narrowing.scope() if self.narrowing is not None else None

    def by_cluster(self) -> dict[str | None, tuple[WalkUnit, ...]]:
        """The units to read, per cluster their path places them in (None: no known cluster;
        such a unit may hold objects of any cluster). Known once the names are: ahead of the
        load for a --changed-since run, else after `bind`."""
        out: dict[str | None, list[WalkUnit]] = {}
        for _, us in self.reading.per_path:
            for u in us:
                c = changed.unit_cluster(str(u.path), self.names, self.cluster) if self.names else None
                out.setdefault(c, []).append(u)
        return {c: tuple(us) for c, us in out.items()}


def plan_read(targets: Sequence[str], inventory_path: str, *, since: str | None = None,
              names: Sequence[str] | None = None, cluster: str | None = None,
              exclude: Sequence[Globs] | None = None, excluded: Excluded | None = None,
              paths: Sequence[str] = (), generated: str | None = None, early: bool = False) -> ReadPlan:
    """The plan for reading `targets` (the PATHs, or check's scratch tree: `generated`).

    `since` with `names` (the inventory's clusters, in its order) narrows to what a change
    since that ref can affect (topogate.check.narrow asks git and walks what each unit reads);
    `exclude` leaves out what its globs match, each noted in `excluded`. Nothing is built,
    unless `early`: then each root whose build is decided for good starts building while the
    trees after it are checked (sources.manifests.prepare), and `ReadPlan.start` goes on with
    those builds (a plan so made must be started, or its builds are left running)."""
    also_inside = (inventory_path,)
    found = find(targets, also_inside)
    narrowing = None
    if since is not None and names is not None:
        narrowing = Narrowing(since, inventory_path, names, cluster, paths, generated)
    globs = tuple(g for g in exclude or () if g.patterns)
    excluded = {} if excluded is None else excluded
    # A walk that failed is reported by the read (Collecting.result): nothing is narrowed.
    kept = _kept(found, narrowing, globs, excluded) if found.error is None else None
    return ReadPlan(tuple(targets), also_inside, found, prepare(found, kept, early), narrowing, globs, excluded,
                    tuple(names or ()), cluster)


def plan_ahead(inventory_path: str, paths: Sequence[str], cluster: str | None, since: str | None,
               exclude: Sequence[Globs] | None, excluded: Excluded) -> ReadPlan | None:
    """The read planned before the inventory is loaded, so that kubectl builds while it is
    read and the rendered tree compared (each waits on neither); None when it cannot be.

    Without PATHs the manifests are rendered from the inventory: nothing to plan yet. A plan
    for --changed-since needs only the inventory's cluster names: read ahead (cluster_names),
    they let the one build a change needs start first too."""
    if not paths:
        return None
    if since is None:
        return plan_read(paths, inventory_path, exclude=exclude, excluded=excluded, early=True)
    names = cluster_names(inventory_path) if "-" not in paths else None
    if names is None:
        return None
    return plan_read(paths, inventory_path, since=since, names=names, cluster=cluster, exclude=exclude,
                     excluded=excluded, paths=paths, early=True)


def _kept(found: Found, narrowing: Narrowing | None, globs: Sequence[Globs],
          excluded: Excluded) -> Collection[Path] | None:
    """The units to read (None: all): those --changed-since keeps, less those the
    configuration or --exclude leaves out (a vendored chart, a remote base kept out on
    purpose), each noted in `excluded` under the patterns that matched it."""
    units, roots = found.units, found.roots
    assert roots is not None, "a walk that failed is not narrowed"
    if not globs:
        return narrowing.keep(units, roots) if narrowing is not None else None
    kept = set(narrowing.keep(units, roots)) if narrowing is not None else {u.path for u in units}
    out = set()
    for u in units:
        if u.path not in kept:
            continue
        hits = [(g.base, p) for g in globs for p in g.matching(u.path)]
        if not hits:
            out.add(u.path)
        else:
            for hit in hits:
                excluded.setdefault(hit, set()).add(display(u.path))
    return out


__all__ = ["Excluded", "ReadPlan", "plan_ahead", "plan_read"]
