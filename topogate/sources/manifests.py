"""Find every Kubernetes object among PATHs, each with the place it was written.

Plain YAML files are parsed with libyaml (bulk manifests are large; ruamel would be ~20x slower)
keeping the composed node of each document so positions of nested fields can be looked up
lazily. A directory holding a kustomization is built once with the real `kubectl kustomize`
(never one process per overlay: only the top-most kustomization of each tree is built), and each
built object is traced back to the source file that declares it when one does.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Callable, Collection, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from topogate.core import progress, redact
from topogate.core.position import Position
from topogate.k8s import shapes
from topogate.k8s.objects import K8sObject
from topogate.safeio import subproc
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, Roots, WalkUnit, display, walk
from topogate.safeio.saferead import InputError, Loader, read_text
from topogate.safeio.stdin import DISPLAY, StdinError, read_stdin
from topogate.sources import kustomization, split_docs
from topogate.sources.deferred import DeferredChecks, Trusted
from topogate.sources.kustomization import NotLocal, Tree, check_tree, decide_split, kubectl
from topogate.sources.located import Built, Sources, TreePatches, parse_yaml
from topogate.sources.positions import (
    remember_text,
)
from topogate.sources.sourceindex import DeclarationRef, SourceIndex, SourcePosition

_Loader = Loader
ManifestError = InputError  # the name the rest of topogate catches



def kustomize_build(d: Path) -> str:
    return kustomization.build(d)


def _built_objects(d: Path, tree: Tree, output: _Built, sources: Sources) -> list[K8sObject]:
    shown = f"{display(d)} (kustomize build)"
    built = list(parse_yaml(output.text, shown, guard=False))  # no file to re-read
    if output.ids is not None and not split_docs.confirm(output.ids, [o.obj for o in built]):
        # the parts' documents were not read as YAML reads them: the whole build answers
        built = list(parse_yaml(kustomization.build(d), shown, guard=False))
    # Each built object is traced back to its source (the overlay dir and the bases it
    # references) only when someone asks where it is: a finding, or a report naming it.
    # Nested positions then come from the source document: a field a patch added resolves to
    # its nearest ancestor that the source has, such as the pod template.
    index = SourceIndex((d, *tree.dirs), sources)
    fallback = Position(display(_kfile(d)), 1, 1)
    patches = TreePatches([d, *tree.dirs])
    out: list[K8sObject] = []
    for o in built:
        ref = DeclarationRef(index, (o.kind, o.name, o.namespace), fallback)
        out.append(K8sObject(o.obj, SourcePosition(ref), str(d), locator=Built(ref, patches)))
        if tree.generates and o.kind in ("ConfigMap", "Secret"):
            redact.register(_data_values(o.obj))
    return out


def _data_values(obj: dict[str, Any]) -> list[str]:
    """The values of a ConfigMap's or Secret's data (a Secret's decoded too): what a generator
    read from files, never to be echoed (topogate.core.redact)."""
    values: list[str] = []
    for key in ("data", "stringData", "binaryData"):
        data = obj.get(key)
        for v in data.values() if isinstance(data, dict) else ():
            if not isinstance(v, str):
                continue
            values.append(v)
            if key != "stringData" and (obj.get("kind") == "Secret" or key == "binaryData"):
                try:
                    values.append(base64.b64decode(v, validate=False).decode("utf-8", "replace"))
                except (binascii.Error, ValueError):
                    pass
    return values


def _kfile(d: Path) -> Path:
    return next(d / n for n in KUSTOMIZATION_FILES if (d / n).is_file())


# A root is built in parts (topogate.sources.split_build) when fewer large roots than CPUs are
# built: one part per CPU left to it, and only when it lists at least SPLIT_FROM directories.
# Measured on two CPUs: at 1,000 directories one root builds in 8.1 s whole, 4.1 s in 2 parts,
# 3.7 s in 4; but the builds run beside Python's own work (the inventory, the drift of
# --rendered), and more parts than CPUs took that CPU from it (the Action's check of one
# changed cluster at 10,000 jobs: 13.2 s in 2 parts, 13.9-17.4 s in 4). Below about 200
# directories the build hides behind that work anyway: at 100, a check of the root took 1.2 s
# in parts and 1.0 s whole; at 300, --changed-since 2.5 s in parts, 3.0-3.3 s whole.
#
# Apart from the CPUs, a root listing many directories is built in parts of at most PART_DIRS
# each, for kustomize's own sake: its time grows faster than the directories past a few
# hundred. Measured (stop 43, GOGC=300, one CPU's worth, CPU seconds): 1,000 directories took
# 13.5-14.6 s whole, 7.6-11.0 s in 2 parts and 7.0-7.1 s in 3; 750 took 6.9-7.1 s whole and
# 5.0-6.5 s in 2; 500 took 3.6-4.4 s whole and 3.3-4.0 s in 2; 200, 1.7 s whole, 1.8 s in 2.
PARTS_PER_CPU = 1
SPLIT_FROM = 200
PART_DIRS = 500


def _is_large(tree: Tree) -> bool:
    """Whether a tree's build takes long enough to count against the CPUs (by the kustomizations
    it holds, which is what kustomize's time follows)."""
    return len(tree.dirs) >= SPLIT_FROM


@dataclass(frozen=True)
class _Built:
    """A root's output; `ids` when it was merged from parts, to confirm once parsed."""

    text: str
    ids: split_docs.Ids | None = None


class _Builds:
    """Kustomize builds started as soon as each tree is checked, at most one per CPU at a
    time; results taken in the order the trees were given.

    Checking the next tree and reading the output of a finished build (Python) then overlap
    the builds still running (kubectl), instead of each phase waiting for the one before."""

    def __init__(self) -> None:
        self.pool: ThreadPoolExecutor | None = None
        self.workers = self.cpus()
        self.pending: dict[Path, Future[_Built | InputError] | tuple[Path, Tree, int]] = {}

    @staticmethod
    def cpus() -> int:
        return os.cpu_count() or 1

    def __enter__(self) -> _Builds:
        return self

    def __exit__(self, *exc: object) -> None:
        # After a failed check or an error while reading: builds not started are dropped,
        # running ones are waited for (their children are ours to reap).
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    def start(self, d: Path, tree: Tree, parts: int = 1) -> None:
        """Build d (already checked) when a worker is free; with one CPU, at its `result`."""
        if self.workers == 1:
            self.pending[d] = (d, tree, parts)
            return
        if self.pool is None:
            subproc.install_handlers()  # from the main thread, before any worker starts a child
            self.pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="kustomize")
        self.pending[d] = self.pool.submit(_build_one, d, tree, parts)

    def drop(self, d: Path) -> None:
        """Forget d's build: cancelled if not begun; if running, its output is never read."""
        job = self.pending.pop(d, None)
        if isinstance(job, Future):
            job.cancel()

    def result(self, d: Path) -> _Built:
        job = self.pending.pop(d)
        out = _build_one(*job) if isinstance(job, tuple) else job.result()
        if isinstance(out, InputError):
            raise _again(out)  # the future keeps `out`: as Collecting.result
        return out


def _again(e: InputError) -> InputError:
    """A fresh exception saying what `e` says, of its class, for raising one that is kept."""
    return e.fresh()


def _build_one(d: Path, tree: Tree, parts: int = 1) -> _Built | InputError:
    try:
        merged = kustomization.build_in_parts(tree, parts) if parts > 1 else None
        return _Built(*merged) if merged is not None else _Built(kustomization.build(d))
    except InputError as e:
        # Kept as a value, so without its traceback: the frames it holds (up to the worker's,
        # which holds the future that holds it) would be a reference cycle, and check runs
        # with the cyclic collector paused.
        return e.with_traceback(None)


def collect(paths: Iterable[str], also_inside: Sequence[str] = (),
            skipped: list[InputError] | None = None,
            empty: list[str] | None = None,
            other: list[tuple[str, list[Path]]] | None = None,
            not_local: list[tuple[Path, InputError]] | None = None) -> list[K8sObject]:
    """Every object in PATHs: files, directories (walked), kustomization directories (built).

    Nothing outside the repositories of PATHs and of `also_inside` (the inventory, a rendered
    tree) is read, and every kustomization tree is checked before it is built (the content of
    its small plain YAML files may wait, sources.deferred), and all of them completely before
    any output is read, so a refusal comes before a build's failure.
    A Helm template met while walking a directory is not YAML until Helm renders it: with
    `skipped` given it is reported there instead of failing the whole directory (a file named
    explicitly is never skipped). `empty` receives the PATHs that held no object at all."""
    with Collecting(paths, also_inside) as pending:
        return pending.result(skipped, empty, other, not_local)


@dataclass
class Found:
    """PATHs walked, nothing parsed or built yet: what a caller decides the read from
    (check's read plan: --changed-since, --exclude) before handing it back to `prepare`."""

    roots: Roots | None = None
    per_path: list[tuple[str, list[WalkUnit]]] = field(default_factory=list)
    other: list[tuple[str, list[Path]]] = field(default_factory=list)  # per PATH: files of other extensions
    error: InputError | None = None  # raised by Collecting.result, where collect() raised it

    @property
    def units(self) -> list[WalkUnit]:
        """Every unit of every PATH, in order (one reached twice, twice)."""
        return [u for _, us in self.per_path for u in us]


def find(paths: Iterable[str], also_inside: Sequence[str] = ()) -> Found:
    """Walk PATHs (see `collect`): the units each holds, and the files of other extensions."""
    found = Found()
    paths = list(paths)
    try:
        if paths.count("-") > 1:
            raise InputError(Position("-", 1, 1), "`-` (standard input) given twice")
        found.roots = Roots.of([*(p for p in paths if p != "-"), *also_inside])
        for raw in paths:
            other: list[Path] = []
            found.per_path.append((raw, [] if raw == "-" else list(walk(raw, found.roots, other))))
            if other:
                found.other.append((raw, other))
    except InputError as e:
        found.error = e.with_traceback(None)  # kept: its frames would hold the caller (a cycle)
    return found


@dataclass
class Reading:
    """What one collect reads, decided before any build: per PATH the units to read, every
    kustomization tree checked, and how each root is built (`builds`: root -> parts, 1 whole)."""

    roots: Roots | None
    per_path: list[tuple[str, list[WalkUnit]]]
    other: list[tuple[str, list[Path]]]
    error: InputError | None = None
    trees: dict[Path, Tree] = field(default_factory=dict)  # split decided (decide_split)
    covered: set[str] = field(default_factory=set)  # PATHs whose units are all read through other PATHs
    # kustomization roots among the PATHs that cannot be built offline, and why
    not_local: list[tuple[Path, InputError]] = field(default_factory=list)
    builds: dict[Path, int] = field(default_factory=dict)  # in the order they start
    # The builds started while the read was prepared (`prepare(..., early=True)`): Collecting
    # goes on with them.
    started: _Builds | None = None
    # The content checks of the trees' plain YAML files, run by Collecting.result before any
    # output is read (sources.deferred).
    deferred: DeferredChecks = field(default_factory=DeferredChecks)


def prepare(found: Found, kept: Collection[Path] | None = None, early: bool = False) -> Reading:
    """The read of `found`, keeping only the units at `kept` (None: all; a PATH none of whose
    units is kept is left out, not reported empty): every kustomization tree checked, and each
    root's build decided, whole or in parts. Nothing is built, unless `early`: then a root
    whose build is decided for good (`_Early`) starts building while the trees after it are
    checked (each tree is still checked before its own build, but for the content checks that
    wait in `Reading.deferred`, and every check done before any output is read). A problem is
    kept for `result`."""
    reading = Reading(found.roots, [(raw, list(us)) for raw, us in found.per_path], found.other, found.error)
    if reading.error is not None:
        return reading
    starts = _Early(_Builds(), reading.deferred) if early and _Builds.cpus() > 1 else None
    try:
        _prepare(reading, kept, starts)
    except InputError as e:
        reading.error = e.with_traceback(None)
        reading.builds.clear()
    except BaseException:
        if starts is not None:
            starts.builds.__exit__()
        raise
    if starts is not None:
        if reading.error is not None:
            starts.builds.__exit__()  # nothing is read: the refusal is the answer
        else:
            reading.started = starts.builds
    return reading


class _Early:
    """Builds started while the read is prepared, each as soon as how `_prepare` builds it is
    known: its tree is checked, no tree checked so far includes it, and its parts no longer
    depend on the trees still to come (it is too small to split for a CPU's sake, or as many
    large trees as CPUs are already known: `_parts`). A tree found later to include one begun
    early has it dropped (read through the tree that includes it, as `_prepare` decides), and
    no longer counted among the large trees. Only a tree so dropped after a large one was
    begun can make the parts of that one differ from `_prepare`'s: its output is the same."""

    def __init__(self, builds: _Builds, deferred: DeferredChecks):
        self.builds, self.deferred = builds, deferred
        self.included: set[str] = set()  # the directories the trees checked so far include
        self.large: dict[str, Path] = {}  # real root -> unit path, for the large trees so far
        self.waiting: list[tuple[Path, str, Tree]] = []  # checked, not decided yet
        self.started: dict[str, Path] = {}  # real root -> unit path
        self.parts: dict[Path, int] = {}  # unit path -> the parts it was begun in

    def checked(self, path: Path, real: str, tree: Tree) -> None:
        """`tree`, the tree of the root at `path` (`real`, its real path), is checked."""
        dirs = {str(d) for d in tree.dirs}
        for r in {r for r in (*self.large, *self.started) if r in dirs}:
            self.large.pop(r, None)
            if r in self.started:
                self.builds.drop(self.started.pop(r))
        self.waiting = [w for w in self.waiting if w[1] not in dirs]
        self.included |= dirs
        if real in self.included:
            return
        if _is_large(tree):
            self.large[real] = path
        self.waiting.append((path, real, tree))
        settled = len(self.large) >= self.builds.workers
        keep = []
        for p, r, t in self.waiting:
            decided = decide_split(t)
            if settled or len(decided.parts) < SPLIT_FROM:
                decided, parts = _decided(t, decided, len(self.large), self.builds.workers, self.deferred)
                self.parts[p] = parts
                self.builds.start(p, decided, parts)
                self.started[r] = p
            else:
                keep.append((p, r, t))
        self.waiting = keep


def _prepare(reading: Reading, kept: Collection[Path] | None, early: _Early | None = None) -> None:
    assert reading.roots is not None
    if kept is not None:
        reading.per_path = [(raw, [u for u in us if u.path in kept]) for raw, us in reading.per_path
                            if not us or any(u.path in kept for u in us)]
    # One input read once: a unit two PATHs both reach (a directory and a file in it, one root
    # named twice) is read where it is first met; a PATH whose every unit is read elsewhere is
    # not empty for that.
    seen: set[Path] = set()
    trees, covered = reading.trees, reading.covered
    for raw, us in reading.per_path:
        fresh = [u for u in us if u.real not in seen]
        seen.update(u.real for u in us)
        if us and not fresh:
            covered.add(raw)
        us[:] = fresh
    checked: dict[str, bool] = {}
    roots_total = sum(1 for _, us in reading.per_path for u in us if u.kustomization)
    seen_roots = 0
    for raw, us in reading.per_path:  # every tree checked before any output is read or built
        refused: list[WalkUnit] = []
        for u in us:
            if u.kustomization and u.path not in trees:
                seen_roots += 1
                if seen_roots % 20 == 1 or seen_roots == roots_total:
                    progress.note(f"checking kustomization trees before building ({seen_roots:,}/{roots_total:,})")
                try:
                    trees[u.path] = check_tree(u.path, reading.roots, checked, reading.deferred)
                    if early is not None:
                        early.checked(u.path, str(u.real), trees[u.path])
                except NotLocal as err:
                    # Refused, never fetched; the other roots are still checked, and this
                    # one is reported where the caller asks (check: one finding).
                    reading.not_local.append((u.path, err.with_traceback(None)))  # as Found.error
                    refused.append(u)
        if refused:
            us[:] = [u for u in us if u not in refused]
            if not us:
                covered.add(raw)
    # A root another root among the PATHs includes (the generated argocd/clusters/<c> wraps
    # clusters/<c> to add sync waves) is read through the one that includes it: building it
    # on its own would yield every object twice.
    included = {str(d) for t in trees.values() for d in t.dirs}
    for raw, us in reading.per_path:
        inner = [u for u in us if u.kustomization and str(u.real) in included]
        if inner:
            us[:] = [u for u in us if u not in inner]
            if not us:
                covered.add(raw)
            for u in inner:
                del trees[u.path]
    large = sum(1 for _, us in reading.per_path for u in us if u.kustomization and _is_large(trees[u.path]))
    workers = _Builds.cpus()
    begun = {p: early.parts[p] for p in early.started.values()} if early is not None else {}
    for _, us in reading.per_path:
        for u in us:
            if u.kustomization:
                tree = trees[u.path]
                trees[u.path], parts = _decided(tree, decide_split(tree), large, workers, reading.deferred)
                reading.builds[u.path] = begun.get(u.path, parts)


def _decided(tree: Tree, decided: Tree, large: int, workers: int, deferred: DeferredChecks) -> tuple[Tree, int]:
    """The tree as it is built and its parts (`_parts`), from `decided`, what decide_split made
    of `tree`. A tree built in parts has the patches whose check waits (Facts.unsure) composed
    first, as the walk would have: one that reaches an object's id makes it a whole build
    (InputError if one is refused)."""
    parts = _parts(decided, large, workers)
    facts = tree.split_facts
    if parts > 1 and facts is not None and facts.unsure and not deferred.keeps(facts.unsure):
        return tree, 1
    return decided, parts


def _parts(tree: Tree, large: int, workers: int) -> int:
    """How many parts to build `tree` in, with `large` large trees (`_is_large`) to build in
    all: small ones take a CPU only briefly; a part lists at most PART_DIRS directories."""
    listed = len(tree.parts)
    if listed < SPLIT_FROM:
        return 1
    by_size = -(-listed // PART_DIRS)
    if workers == 1 or large >= workers:
        return by_size
    return max(by_size, PARTS_PER_CPU * workers // max(1, large))


class Collecting:
    """collect() in two halves, so a caller can do other work while kustomize builds.

    Creating it starts the builds of a `Reading` (`prepare`; without one, PATHs are walked,
    every kustomization tree checked and its build decided here), in the background, one per
    CPU; `result` reads the plain files and the builds' output and raises the first problem,
    exactly as collect() would have. Use it as a context manager: leaving it without `result`
    (the inventory was invalid, say) waits for the running builds and drops the rest. For
    `topogate check PATH...`: start it before loading the inventory and rendering the drift
    comparison, take the result after."""

    def __init__(self, paths: Iterable[str], also_inside: Sequence[str] = (), reading: Reading | None = None):
        self.reading = reading if reading is not None else prepare(find(paths, also_inside))
        self.builds = self.reading.started or _Builds()
        self.reading.started = None  # the builds are this one's to finish
        for d, parts in self.reading.builds.items():
            if d not in self.builds.pending:
                self.builds.start(d, self.reading.trees[d], parts)

    def __enter__(self) -> Collecting:
        return self

    def __exit__(self, *exc: object) -> None:
        self.builds.__exit__()

    def result(self, skipped: list[InputError] | None = None,
               empty: list[str] | None = None,
               other: list[tuple[str, list[Path]]] | None = None,
               not_local: list[tuple[Path, InputError]] | None = None,
               on_unit: Callable[[WalkUnit, list[K8sObject]], None] | None = None,
               trusted: Trusted | None = None) -> list[K8sObject]:
        """The objects; `skipped` receives files not read (Helm templates, untracked files),
        `empty` the PATHs that held no object, `other` per PATH the files of other extensions
        its walk met, `not_local` the kustomization roots left unbuilt because they are remote
        or need Helm (without it, the first of those is raised, as any unreadable input).
        `on_unit` is handed each unit's objects as soon as they are read, while the builds of
        the units after it may still be running (check's pipeline), once their shapes are
        checked (shapes.check); after a unit whose shapes are not, no more: the read then raises
        the first such problem, in the order of the objects, once every build is read.
        Before any output is read, the content of every YAML file the builds read is checked
        (sources.deferred), but those whose text `trusted` says is the generator's own."""
        # What is kept is raised as a copy: raised itself, it would get a traceback whose
        # frames hold the reading, which holds it (a reference cycle, with the collector paused).
        r = self.reading
        if r.error is not None:
            raise _again(r.error)
        assert r.roots is not None
        if r.not_local:
            if not_local is None:
                raise _again(r.not_local[0][1])
            not_local.extend(r.not_local)
        if other is not None:
            other.extend(r.other)
        r.deferred.settle(trusted)
        outputs: dict[Path, list[K8sObject]] = {}
        sources = Sources(r.roots, {})
        objs: list[K8sObject] = []
        n_roots = sum(1 for _, us in r.per_path for u in us if u.kustomization)
        n_files = sum(1 for _, us in r.per_path for u in us if not u.kustomization)
        built = read = 0
        misshapen: list[InputError] = []  # the first object whose type the analysis cannot read
        for raw, us in r.per_path:
            before = len(objs)
            if raw == "-":
                objs.extend(_read_stdin())
                _check_shapes(objs[before:], misshapen)
            for u in us:
                if u.kustomization:
                    built += 1
                    progress.note(f"kubectl kustomize: {built:,} of {n_roots:,} roots built and read")
                else:
                    read += 1
                    if read % 50 == 1 or read == n_files:
                        progress.note(f"reading manifests ({read:,}/{n_files:,} files)")
                start = len(objs)
                if u.kustomization:
                    if u.path not in outputs:
                        # the objects, not the build's text: the analysis of the clusters
                        # read so far runs inside this loop (on_unit)
                        outputs[u.path] = _built_objects(u.path, r.trees[u.path], self.builds.result(u.path), sources)
                    objs.extend(outputs[u.path])
                else:
                    objs.extend(_read_or_skip(u.path, named=u.path == Path(raw), skipped=skipped,
                                              roots=r.roots, real=u.real))
                mine = objs[start:]
                _check_shapes(mine, misshapen)
                if on_unit is not None and not misshapen:
                    on_unit(u, mine)
            if empty is not None and len(objs) == before and raw not in r.covered:
                empty.append(raw)
        if misshapen:
            raise _again(misshapen[0])  # a copy, as every kept error here
        return objs


def _check_shapes(objs: Iterable[K8sObject], misshapen: list[InputError]) -> None:
    """Each object's field types checked (shapes.check), before any analysis reads one, until a
    first problem, kept in `misshapen` (without its traceback: the frames would hold the list
    that holds it, a reference cycle with the collector paused)."""
    if misshapen:
        return
    for o in objs:
        try:
            shapes.check(o)
        except InputError as e:
            misshapen.append(e.with_traceback(None))
            return


def _read_or_skip(f: Path, named: bool, skipped: list[InputError] | None,
                  roots: Roots | None = None, real: Path | None = None) -> list[K8sObject]:
    if roots is not None and real is not None:
        why = roots.untracked(str(real))
        if why is not None:
            err = InputError(Position(display(f), 1, 1), f"{display(f)} {why}")
            if named or skipped is None:
                raise err
            skipped.append(InputError(err.pos, f"not read: it {why}"))
            return []
    try:
        return _read_file(f)
    except InputError as err:
        if named or skipped is None or not _is_helm_template(f):
            raise
        skipped.append(InputError(err.pos, (
            "a Helm template (it holds {{ ... }}), not YAML until `helm template` renders "
            "it: skipped, so nothing in it was checked; pass the rendered output instead")))
        return []


def _is_helm_template(f: Path) -> bool:
    try:
        return "{{" in read_text(f, display(f))
    except InputError:
        return False


def _read_stdin() -> list[K8sObject]:
    try:
        text = read_stdin()
    except StdinError as e:
        raise InputError(e.pos, str(e)) from None
    remember_text(DISPLAY, text)
    return list(parse_yaml(text, DISPLAY, DISPLAY))


def _read_file(f: Path) -> list[K8sObject]:
    shown = display(f)
    return list(parse_yaml(read_text(f, shown), shown, str(f)))


__all__ = ["Collecting", "Found", "ManifestError", "Reading", "collect", "find", "kubectl", "kustomize_build",
           "prepare"]
