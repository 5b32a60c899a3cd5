"""`check --changed-since REF` in practice: ask git, learn what each unit reads, keep the units
topogate.check.changed selects, and afterwards confirm the narrowed read holds together.

What a kustomization root reads is found by following its kustomization files only (the same
fields topogate.sources.kustomization checks before a build: resources, bases, components, patches,
generators' files, ...), without reading the files they name: for 2,000 job overlays that is
a fraction of one build. Reading stays inside the repository, like every read of `check`;
anything that cannot be followed (a file that does not parse, a remote base) makes the answer
unknown, and everything is checked, where the same problem is reported as it is without the
flag.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from topogate.analysis.map.clusters import ClusterOf
from topogate.analysis.result import Scope
from topogate.check import changed, gitdiff
from topogate.core import progress
from topogate.core.forked import Child
from topogate.inventory.model import Inventory
from topogate.k8s import kustomization as kmodel
from topogate.k8s.objects import K8sObject
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, Roots, WalkUnit, display
from topogate.safeio.saferead import InputError, read_text
from topogate.sources.kustomization import CONFIG_LISTS, REMOTE, config_references, references


class _Unknown(Exception):
    """What a unit reads cannot be told; str() says why."""


DirReads = dict[str, tuple[frozenset[str], tuple[str, ...]]]


def files_read(root: Path, roots: Roots, dirs: DirReads | None = None) -> frozenset[str]:
    """Real paths of every file building `root` reads: its kustomization files and the files
    they name, at every depth. Raises _Unknown.

    Paths resolve as check_tree's do (Roots.realpath: each component in order, so `..` in a
    symlinked base is next to the link's target, where kustomize reads it). `dirs`, when
    given, gets each kustomization directory met: (the files it reads itself, the directories
    it names), by real path."""
    real = roots.realpath
    inside = tuple(str(d).rstrip(os.sep) + os.sep for d in roots.dirs)  # string tests: 10,000 paths
    files: set[str] = set()
    seen: set[str] = set()
    stack = [str(root)]
    while stack:
        cur = stack.pop()
        here = real(cur)
        if here in seen:
            continue
        seen.add(here)
        kfile = next((os.path.join(cur, n) for n in KUSTOMIZATION_FILES
                      if os.path.lexists(os.path.join(cur, n))), None)
        if kfile is None:
            raise _Unknown(f"{display(cur)} is named as a base but holds no kustomization")
        kreal = real(kfile)
        if not kreal.startswith(inside):
            raise _Unknown(f"{display(kfile)} is outside the repository")
        files.add(kreal)
        own, below = {kreal}, []
        shown = display(kfile)
        try:
            refs = list(references(kmodel.read(read_text(kfile, shown), shown)))
        except InputError as e:
            raise _Unknown(str(e)) from None
        refs.reverse()  # a stack, popped in order
        while refs:
            field, ref, where = refs.pop()
            if REMOTE.search(ref):
                raise _Unknown(f"{where}: '{ref}' is remote")
            target = os.path.join(cur, ref)
            target_real, mode = roots.real_mode(target)
            if not target_real.startswith(inside):
                raise _Unknown(f"{where}: '{ref}' is outside the repository")
            if stat.S_ISDIR(mode) if mode is not None else os.path.isdir(target_real):
                stack.append(target)
                below.append(target_real)
                continue
            files.add(target_real)
            own.add(target_real)
            if field in CONFIG_LISTS:
                # a generator or transformer config names files the same build reads
                ref_shown = os.path.normpath(os.path.join(os.path.dirname(shown), ref))
                try:
                    inner = list(config_references(read_text(target, ref_shown), ref_shown))
                except InputError as e:
                    raise _Unknown(str(e)) from None
                refs.extend(reversed(inner))
        if dirs is not None:
            dirs[here] = (frozenset(own), tuple(below))
    return frozenset(files)


def cluster_names(path: str) -> tuple[str, ...] | None:
    """The names of the inventory's clusters, read ahead of the full load (which validates and
    reads every base) so that the one build a change needs can start first; None when they
    cannot be told this cheaply, and the caller narrows after the load instead.

    Read under the same limits as every input (read_text), parsed as YAML events only, and
    left at the end of the `clusters` list: the loader is still the judge of the file, and
    Narrowing.bind compares the names it gives with these."""
    try:
        text = read_text(path, path)
    except (InputError, OSError):
        return None
    events = yaml.parse(text, Loader=_EventLoader)
    try:
        while not isinstance(ev := next(events), yaml.MappingStartEvent):
            if not isinstance(ev, (yaml.StreamStartEvent, yaml.DocumentStartEvent)):
                return None  # not a mapping
        # the top mapping: key, value, key, value, ... up to `clusters`
        while isinstance(key := next(events), yaml.ScalarEvent):
            if key.value == "clusters":
                return _names(events)
            _skip(next(events), events)
        return None  # no clusters (or a key that is not a plain scalar)
    except (yaml.YAMLError, StopIteration):
        return None


class _EventLoader(yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader):  # type: ignore[misc]
    """The parser only: no tag is resolved, nothing is constructed."""


def _skip(ev: yaml.Event, events: Iterator[yaml.Event]) -> None:
    """Consume the rest of the node `ev` starts."""
    level = 1 if isinstance(ev, (yaml.MappingStartEvent, yaml.SequenceStartEvent)) else 0
    while level:
        e = next(events)
        if isinstance(e, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            level += 1
        elif isinstance(e, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            level -= 1


def _names(events: Iterator[yaml.Event]) -> tuple[str, ...] | None:
    """`clusters: [{name: ...}, ...]`: the names, or None when the list is not that shape."""
    if not isinstance(next(events), yaml.SequenceStartEvent):
        return None
    names: list[str] = []
    for ev in events:
        if isinstance(ev, yaml.SequenceEndEvent):
            return tuple(names)
        if not isinstance(ev, yaml.MappingStartEvent):
            return None
        name: str | None = None
        while True:
            k = next(events)
            if isinstance(k, yaml.MappingEndEvent):
                break
            if not isinstance(k, yaml.ScalarEvent):
                return None
            v = next(events)
            if k.value == "name" and isinstance(v, yaml.ScalarEvent):
                name = v.value
            else:
                _skip(v, events)
        if name is None:
            return None
        names.append(name)
    return None


Walked = tuple[list[frozenset[str]], str]  # what each unit reads, in order; why not, if one failed
_Share = dict[int, "frozenset[str] | str"]  # unit index -> its reads, or why they cannot be told

# Below this many kustomization roots the walk is too short for a second process to pay.
PARALLEL_FROM = 4
# The child's answer is awaited this long at least (or four times the parent's own share).
CHILD_WAIT = 30.0


def walk_units(units: Sequence[WalkUnit], roots: Roots, dirs: DirReads,
               stop: Callable[[], bool] = lambda: False, share: bool = True) -> Walked:
    """What each unit reads, in order, up to the first that cannot be told (with its reason)
    or until `stop()`; `dirs` gets every directory met (files_read).

    The walk is Python reading thousands of small kustomization files, one CPU's work, and it
    runs before the build a change needs can start. With `share`, four roots or more and two
    CPUs, a forked child (core.forked) walks every other unit meanwhile; should it fail, this
    process walks its units too. The answer is the same either way."""
    everyone = range(len(units))
    if not share or sum(1 for u in units if u.kustomization) < PARALLEL_FROM or (os.cpu_count() or 1) < 2:
        got, met = _walk_share(units, everyone, roots, stop)
        dirs.update(met)
        return _in_order(units, got)
    theirs, ours = everyone[1::2], everyone[0::2]
    child = Child.start(lambda: _walk_share(units, theirs, roots))
    started = time.monotonic()
    try:
        got, met = _walk_share(units, ours, roots, stop)
    except BaseException:
        if child is not None:
            child.result(timeout=0)  # killed and reaped: no process or descriptor outlives us
        raise
    answer = child.result(timeout=max(CHILD_WAIT, 4 * (time.monotonic() - started))) if child else None
    their_got, their_met = answer if answer is not None else _walk_share(units, theirs, roots, stop)
    dirs.update(met)
    dirs.update(their_met)
    return _in_order(units, {**got, **their_got})


def _walk_share(units: Sequence[WalkUnit], which: Sequence[int], roots: Roots,
                stop: Callable[[], bool] = lambda: False) -> tuple[_Share, DirReads]:
    """The units at `which`, in order, up to the first that cannot be told or `stop()`."""
    out: _Share = {}
    dirs: DirReads = {}
    for i in which:
        if stop():
            break  # the walk's answer would not be used
        u = units[i]
        try:
            out[i] = files_read(u.path, roots, dirs) if u.kustomization else frozenset({str(u.real)})
        except _Unknown as e:
            out[i] = str(e)
            break
    return out, dirs


def _in_order(units: Sequence[WalkUnit], got: _Share) -> Walked:
    """The reads up to the first unit that failed (its reason) or was not walked (stopped)."""
    reads: list[frozenset[str]] = []
    for i, u in enumerate(units):
        r = got.get(i)
        if isinstance(r, str):
            return reads, f"cannot tell what {display(u.path)} reads ({r})"
        if r is None:
            break
        reads.append(r)
    return reads, ""


class Narrowing:
    """One --changed-since run: `keep` picks the units the read plan (topogate.check.plan) reads,
    `escaped` checks the read after it."""

    def __init__(self, since: str, inventory_path: str, names: Sequence[str], override: str | None,
                 paths: Sequence[str] = (), generated: str | None = None):
        """`names`: the inventory's clusters, in its order. `keep` needs only these, so a run can
        start its builds before the inventory is loaded (cluster_names); `escaped` needs the
        loaded inventory (`bind`)."""
        self.since = since
        self.inventory_path = inventory_path
        self.names = tuple(names)
        self.inv: Inventory | None = None
        self.override = override
        self.stdin = "-" in paths
        self.generated = os.path.realpath(generated) if generated else None  # check's scratch tree
        self.selection = changed.ChangeSelection(since, True, "not started")
        self.unit_cluster: dict[str, str | None] = {}
        self.units = 0  # walked, read or not
        self.changed: frozenset[str] = frozenset()  # real paths git reports changed
        self.dirs: DirReads = {}  # every kustomization directory the walk met (files_read)

    def _everything(self, why: str, units: Sequence[WalkUnit] = ()) -> Collection[Path]:
        roots = sum(1 for u in units if u.kustomization) or self.selection.roots
        self.selection = changed.ChangeSelection(self.since, True, why, self.selection.changed,
                                           all_clusters=len(self.names), built=roots, roots=roots)
        return {u.path for u in units}

    def keep(self, units: Sequence[WalkUnit], roots: Roots) -> Collection[Path]:
        """The units to read, among every unit the walk of the PATHs found."""
        self.units = len(units)
        if self.stdin:
            return self._everything("standard input cannot be compared with a git ref", units)
        # git runs while the units are walked (its processes wait, the walk reads): its answer
        # decides first, as if it had been asked first, and once it says "everything" the
        # walk stops.
        with ThreadPoolExecutor(1, thread_name_prefix="topogate-git") as pool:
            asked = pool.submit(gitdiff.changed_files, self.since,
                                os.path.dirname(os.path.abspath(self.inventory_path)))
            progress.note(f"--changed-since {self.since}: what each of {len(units):,} roots and files reads")
            inventory = os.path.realpath(self.inventory_path)

            said: list[bool] = []  # git's answer, once it has one: makes it check everything

            def everything() -> bool:
                if not said and asked.done():
                    said.append(asked.exception() is not None or inventory in asked.result()[2])
                return bool(said) and said[0]

            reads, unknown = walk_units(units, roots, self.dirs, everything)
            try:
                top, _base, files = asked.result()
            except gitdiff.GitUnknown as e:
                return self._everything(str(e), units)
        if inventory in files:
            self.selection = changed.ChangeSelection(self.since, changed=len(files))
            return self._everything(changed.INVENTORY_CHANGED, units)
        if unknown:
            return self._everything(unknown, units)
        names = self.names
        mine: list[changed.UnitReads] = []
        self.changed = frozenset(files)
        for u, read in zip(units, reads, strict=True):
            outside = next((f for f in sorted(read) if not self._seen_by_git(f, top)), None)
            if outside is not None:
                return self._everything(f"{display(outside)} is outside the git repository {top}", units)
            cluster = changed.unit_cluster(str(u.path), names, self.override)
            self.unit_cluster[str(u.path)] = cluster
            mine.append(changed.UnitReads(str(u.path), display(u.path), cluster, read, u.kustomization))
        self.selection = changed.select(self.since, files, mine, inventory, len(names))
        return {u.path for u in units if str(u.path) in self.selection.keep}

    def bases_to_read(self) -> Callable[[str, str], bool] | None:
        """For the inventory's loader: which workloads' bases a narrowed run reads (None: all).

        A base is read again when its workload's cluster is checked, and otherwise whenever
        it may have changed: unless the walk met its directory and no file that directory's
        tree reads is among the changed ones. What is left unread is what the run on REF
        already read, byte for byte; at 10,000 jobs it is most of the inventory's load."""
        sel = self.selection
        if sel.everything:
            return None
        checked = set(sel.clusters)
        inv_dir = os.path.dirname(os.path.abspath(self.inventory_path))
        settled: dict[str, bool] = {}  # directory -> its tree reads no changed file

        def unchanged(d: str) -> bool:
            todo, met = [d], set()
            while todo:
                cur = todo.pop()
                if cur in met:
                    continue
                met.add(cur)
                if cur not in self.dirs:
                    return False  # a directory the walk never met: cannot tell, read it
                own, below = self.dirs[cur]
                if own & self.changed:
                    return False
                todo.extend(below)
            return True

        def wanted(cluster: str, base: str) -> bool:
            if cluster in checked or os.path.isabs(base):
                return True
            real = os.path.realpath(os.path.join(inv_dir, base))
            if real not in settled:
                settled[real] = unchanged(real)
            return not settled[real]

        return wanted

    def _seen_by_git(self, f: str, top: str) -> bool:
        return (f.startswith(top + os.sep) or (self.generated is not None
                                               and f.startswith(self.generated + os.sep)))

    def bind(self, inv: Inventory) -> bool:
        """Attach the loaded inventory; False when its clusters are not the names `keep` used
        (then this narrowing, and any build it started, must be dropped)."""
        self.inv = inv
        return tuple(c.name for c in inv.clusters) == self.names

    def escaped(self, objects: Sequence[K8sObject]) -> bool:
        """After a narrowed read: when it does not hold together (topogate.check.changed.escaped),
        the selection becomes "everything" and the caller reads everything again."""
        sel = self.selection
        if sel.everything:
            return False
        inv = self.inv
        assert inv is not None, "bind() the inventory before escaped()"
        of = ClusterOf(inv)
        read: list[tuple[str, str | None, str | None]] = []
        found: list[str] = []
        for o in objects:
            # The inventory's word only (the path's is the unit's): asking ClusterOf for the
            # path would resolve every object's position, reading its source files again.
            w = of.by_id.get((o.kind, o.namespace or "default", o.name))
            if w is None and not o.namespace and len(of.by_name.get((o.kind, o.name), [])) == 1:
                w = of.by_name[(o.kind, o.name)][0]
            ref = f"{w.kind}/{w.namespace}/{w.name}" if w is not None else o.ref
            owner = w.cluster if w is not None else None
            if self.override is not None and owner != self.override:
                owner = None  # not analysed under --cluster (topogate.analysis.map.clusters)
            read.append((ref, self.unit_cluster.get(o.built_from or o.src_file), owner))
            found.append(ref)
        touched = set(sel.clusters)
        # A workload missing from what was read can only hide in a unit that was not read.
        expected = [f"{w.kind}/{w.namespace}/{w.name}" for w in inv.workloads
                    if w.cluster in touched and (self.override is None or w.cluster == self.override)
                    ] if len(sel.keep) < self.units else []
        why = changed.escaped(sel, read, expected, found)
        if why:
            self._everything(why)
        return bool(why)

    @property
    def only(self) -> Collection[str] | None:
        """The clusters to analyse (None: all)."""
        return None if self.selection.everything else self.selection.clusters

    def scope(self) -> Scope:
        sel = self.selection
        checked = "everything" if sel.everything else "nothing" if sel.nothing else "changed"
        return Scope(self.since, sel.summary(), checked, sel.note())


__all__ = ["Narrowing", "cluster_names", "files_read"]
