"""`check --changed-since REF`: which build roots and plain manifests a change can affect.

Pure: given the changed files and what each unit reads, return the selection. Git is
topogate.check.gitdiff; reading the units' file sets and hooking into `check` is topogate.check.narrow.

What is sound to narrow, and why by cluster: a job's verdict depends on its own manifests and
on every policy of its cluster (boundary proofs, who-gets-in, dangling policies are facts about
the whole cluster). So the unit of narrowing is the cluster, not the job:

- a unit (a kustomization root, built whole, or a plain YAML file) belongs to the cluster its
  path names (`clusters/<name>/`, the generated layout), to `--cluster`, or, with one cluster in
  the inventory, to that one; otherwise to no known cluster;
- a changed file a unit reads (its kustomization tree at any depth, bases elsewhere in the
  repository included; a plain file reads itself) touches that unit's cluster, and every unit of
  a touched cluster is checked;
- units of no known cluster are always checked (they may hold policies of any cluster), and a
  change to one cannot be placed: everything is checked;
- a change to the inventory file: everything is checked;
- a changed file no unit reads does not change what the manifests say (the inventory's own
  checks and `--rendered` drift run in full on every run): ignored.

What did not change since REF is taken to have passed the gate at REF.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from topogate.core.layout import CLUSTER_DIRS
from topogate.core.words import plural

_SHOWN = 3  # cluster names listed in the summary before "..."
INVENTORY_CHANGED = "the inventory changed, and it describes every cluster"


@dataclass(frozen=True)
class UnitReads:
    """One thing `check` reads: a kustomization root (built) or a plain manifest."""

    key: str  # the path as reached (what collect calls it)
    shown: str  # for messages
    cluster: str | None  # see the module doc
    files: frozenset[str]  # real paths the unit reads; a plain file: itself
    built: bool  # a kustomization root


@dataclass(frozen=True)
class ChangeSelection:
    """What a --changed-since run checks, and the words that say so."""

    since: str
    everything: bool = False  # fell back: `why` says why
    why: str = ""
    changed: int = 0  # files changed since REF
    relevant: int = 0  # of those, files a unit reads
    clusters: tuple[str, ...] = ()  # touched, sorted
    all_clusters: int = 0
    keep: frozenset[str] = field(default_factory=frozenset)  # unit keys to read
    built: int = 0  # kustomization roots kept
    roots: int = 0  # kustomization roots in all

    @property
    def nothing(self) -> bool:
        return not self.everything and not self.clusters

    def note(self) -> str:
        """The one stderr line of a fallback; "" when narrowed."""
        return f"--changed-since {self.since}: {self.why}: checking everything" if self.everything else ""

    def summary(self) -> str:
        """The words after the counts of the summary line."""
        if self.everything:
            return f"everything checked: {self.why}"
        if self.nothing:
            files = plural(self.changed, "changed file")
            return f"{files}, none read by this check" if self.changed else "no file changed"
        names = ", ".join(self.clusters[:_SHOWN]) + (", ..." if len(self.clusters) > _SHOWN else "")
        text = f"{len(self.clusters)} of {plural(self.all_clusters, 'cluster')} changed ({names})"
        return text + (f", {self.built} of {plural(self.roots, 'kustomize root')} built" if self.roots else "")


def unit_cluster(path: str, names: Sequence[str], override: str | None) -> str | None:
    """The cluster a unit belongs to, from its path alone (module doc); the same path rule as
    topogate.analysis.map.clusters uses for objects."""
    if override:
        return override
    parts = path.replace("\\", "/").split("/")
    for i, p in enumerate(parts[:-1]):
        if p in CLUSTER_DIRS and parts[i + 1] in names:
            return parts[i + 1]
    return names[0] if len(names) == 1 else None


def select(since: str, changed: Sequence[str], units: Sequence[UnitReads], inventory: str,
           all_clusters: int) -> ChangeSelection:
    """The units to check given the changed files (real paths) and the inventory's real path."""
    roots = sum(1 for u in units if u.built)

    def everything(why: str) -> ChangeSelection:
        return ChangeSelection(since, True, why, len(changed), all_clusters=all_clusters,
                         keep=frozenset(u.key for u in units), built=roots, roots=roots)

    if inventory in changed:
        return everything(INVENTORY_CHANGED)
    readers: dict[str, list[UnitReads]] = {}
    for u in units:
        for f in u.files:
            readers.setdefault(f, []).append(u)
    touched: set[str] = set()
    relevant = 0
    for path in changed:
        users = readers.get(path, [])
        relevant += bool(users)
        for u in users:
            if u.cluster is None:
                return everything(f"{u.shown} changed ({_short(path, u)}) and is under no "
                                  "clusters/<name>/ directory, so its cluster is unknown")
            touched.add(u.cluster)
    keep = frozenset(u.key for u in units if touched and (u.cluster is None or u.cluster in touched))
    return ChangeSelection(since, changed=len(changed), relevant=relevant, clusters=tuple(sorted(touched)),
                     all_clusters=all_clusters, keep=keep,
                     built=sum(1 for u in units if u.built and u.key in keep), roots=roots)


def _short(path: str, u: UnitReads) -> str:
    return "itself" if not u.built and len(u.files) == 1 and path in u.files else path.rsplit("/", 1)[-1]


def escaped(selection: ChangeSelection, read: Iterable[tuple[str, str | None, str | None]],
            expected: Iterable[str], found: Iterable[str]) -> str:
    """Why the narrowed read cannot stand ("" when it can). `read` holds (object, cluster of the
    unit it was read from, cluster that owns it): an object in a changed cluster's manifests that
    the inventory places in a cluster that did not change would be judged without that cluster's
    policies; a workload the inventory puts in a changed cluster but not found among the units
    read may sit in a unit that was not read. Objects of unchanged clusters read from units of
    no known cluster are fine: they are not analysed (`only`)."""
    if selection.everything:
        return ""
    touched = set(selection.clusters)
    for obj, unit, owner in read:
        if unit in touched and owner is not None and owner not in touched:
            return (f"{obj} is among cluster {unit}'s manifests but the inventory places it in "
                    f"cluster {owner}, which did not change")
    missing = sorted(set(expected) - set(found))
    if missing:
        return f"{missing[0]}, a workload of a changed cluster, is not among that cluster's manifests"
    return ""


__all__ = ["ChangeSelection", "UnitReads", "escaped", "select", "unit_cluster"]
