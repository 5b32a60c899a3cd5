"""`topogate check` as a function: load, collect, analyse once, run the rules, return a result.

Separate from the CLI so tests and other commands (explain, audit) reuse exactly this path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import tempfile
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from topogate.analysis.map.build import build_map
from topogate.analysis.netpolicy import PolicyError
from topogate.analysis.result import CheckResult
from topogate.check.config import Globs
from topogate.check.drift import drift
from topogate.check.errors import CheckInputError
from topogate.check.narrow import Narrowing, cluster_names
from topogate.core import gctune, progress
from topogate.core.exitcodes import exit_for
from topogate.core.findings import Finding
from topogate.core.position import NOWHERE, Position
from topogate.core.words import plural
from topogate.generators import render_tree_sources
from topogate.gitops import render as gitops_render
from topogate.inventory.checker import ReadBases
from topogate.inventory.loader import InventoryError
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.policies import FACTS
from topogate.policies.context import Context, Drift, Given, LiveFact, Weakened, analysed
from topogate.policies.engine import all_rules, evaluate, run_rules
from topogate.safeio.repopaths import Roots, WalkUnit, display
from topogate.safeio.saferead import InputError
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import Collecting, ManifestError, collect
from topogate.tree import writer

Keep = Callable[[Sequence[WalkUnit], Roots], Collection[Path]]


@dataclass(frozen=True)
class CheckOutcome:
    result: CheckResult
    exit_code: int
    inventory: Inventory | None
    objects: tuple[K8sObject, ...] = ()
    # (glob base, pattern, PATH entry as shown): the entries each exclude pattern left unread
    # that the run would otherwise have read; the report counts them per setting.
    excluded: tuple[tuple[str, str, str], ...] = ()


def _render_to_temp(inv: Inventory, tmp: str) -> tuple[str, dict[str, Position]]:
    """Render the inventory into a scratch tree so `check INVENTORY` alone has manifests to read,
    and say which inventory entry each file comes from.

    Rendered for its own location, so the overlays' relative paths reach the bases from there."""
    out = str(Path(tmp) / "rendered")
    tree, sources = render_tree_sources(inv, os.path.realpath(out))
    writer.write_tree(out, tree)
    return out, sources


GENERATED = "(generated)"  # how a file of the scratch tree is named until its finding is placed


def _placed(findings: Sequence[Finding], tree: str, sources: Mapping[str, Position]) -> tuple[Finding, ...]:
    """Findings the rules placed in the scratch tree, moved to the inventory entry the file is
    generated from (the scratch directory is gone by the time anyone reads them, and the next
    `generate` rewrites the file anyway); the generated file and line are said as context."""
    prefixes = (f"{GENERATED}/", os.path.relpath(tree).rstrip("/") + "/", os.path.abspath(tree).rstrip("/") + "/",
                os.path.realpath(tree).rstrip("/") + "/")
    out = []
    for f in findings:
        rel = next((f.file[len(p):] for p in prefixes if f.file.startswith(p)), None)
        src = sources.get(rel) if rel is not None else None
        if rel is None or src is None or src == NOWHERE:
            out.append(f)
            continue
        out.append(dataclasses.replace(f, file=src.file, line=src.line, column=src.column,
                                       message=f"{f.message} (in the generated {rel}:{f.line}:{f.column})"))
    return tuple(out)


def _as_generated(o: K8sObject, tree: str) -> K8sObject:
    """Objects of the scratch tree are named by their place in the generated layout, since the
    scratch directory is gone by the time anyone reads the finding."""
    for prefix in (os.path.relpath(tree), os.path.abspath(tree)):
        if o.pos.file.startswith(prefix):
            rel = o.pos.file[len(prefix):].lstrip("/")
            return dataclasses.replace(o, pos=Position(f"{GENERATED}/{rel}", o.pos.line, o.pos.column))
    return o


def _other_files(other: Sequence[tuple[str, Sequence[Path]]]) -> tuple[tuple[Position, str], ...]:
    """Per PATH, the files its walk met that are no manifest: named, never dropped silently."""
    out = []
    for raw, files in other:
        shown = [display(f) for f in files]
        listed = ", ".join(shown[:5]) + (f" and {len(shown) - 5} more" if len(shown) > 5 else "")
        out.append((Position(raw, 1, 1), (
            f"{plural(len(shown), 'file')} of other extensions not read (only .yaml, .yml and .json "
            f"hold manifests, as for kubectl apply -f): {listed}")))
    return tuple(out)


# What the exclude globs left unread, gathered across the collections of one run (a narrowed
# read that escapes is read again): (glob base, pattern) -> the entries, as shown.
Excluded = dict[tuple[str, str], set[str]]


def _keep(narrowing: Narrowing | None, exclude: Sequence[Globs] | None,
          excluded: Excluded | None = None) -> Keep | None:
    """collect's filter: the units --changed-since keeps, less those the configuration or
    --exclude leaves out (a vendored chart, a remote base kept out on purpose), each noted in
    `excluded` under the patterns that matched it."""
    globs = [g for g in exclude or () if g.patterns]
    if not globs:
        return narrowing.keep if narrowing is not None else None

    def keep(units: Sequence[WalkUnit], roots: Roots) -> Collection[Path]:
        kept = set(narrowing.keep(units, roots)) if narrowing is not None else {u.path for u in units}
        out = set()
        for u in units:
            if u.path not in kept:
                continue
            hits = [(g.base, p) for g in globs for p in g.matching(u.path)]
            if not hits:
                out.add(u.path)
            elif excluded is not None:
                for hit in hits:
                    excluded.setdefault(hit, set()).add(display(u.path))
        return out

    return keep


def _collect_each(targets: Sequence[str], skipped: list[ManifestError],
                  inventory_path: str, narrowing: Narrowing | None = None,
                  started: Collecting | None = None,
                  other: list[tuple[str, list[Path]]] | None = None,
                  exclude: Sequence[Globs] | None = None,
                  not_local: list[tuple[Path, InputError]] | None = None,
                  excluded: Excluded | None = None) -> tuple[K8sObject, ...]:
    """Every object of every PATH, built together (concurrently); a PATH that holds no
    Kubernetes object at all (an empty directory, a values file) is a usage error, like a
    linter given nothing to lint. Helm templates met in directories land in ``skipped``.
    `started`: the same collection begun earlier, whose builds have been running meanwhile."""
    empty: list[str] = []
    try:
        if started is not None:
            objects = started.result(skipped, empty, other, not_local)
        else:
            objects = collect(targets, also_inside=[inventory_path], skipped=skipped, empty=empty, other=other,
                              keep=_keep(narrowing, exclude, excluded), not_local=not_local)
    except ManifestError as err:
        raise CheckInputError.of(err) from None
    if empty:
        raise CheckInputError(*(
            f"{t}:1:1: no Kubernetes object found (no YAML document with a `kind`): nothing to "
            "check here; pass the directory or files that hold the training job's manifests"
            for t in empty))
    return tuple(objects)


# Facts from the inventory and the objects a check read, given the clusters it analyses (None:
# all; a narrowed run reads only the changed clusters' manifests).
Observed = Callable[[Inventory, tuple[K8sObject, ...], Collection[str] | None], tuple[LiveFact, ...]]


def run_check(
    inventory_path: str,
    paths: Sequence[str] = (),
    rendered: str | None = None,
    cluster: str | None = None,
    today: dt.date | None = None,
    strict: bool = False,
    changed_since: str | None = None,
    exclude: Sequence[Globs] | None = None,
    live: tuple[LiveFact, ...] = (),
    observed: Observed | None = None,
    weakened: tuple[Weakened, ...] = (),
) -> CheckOutcome:
    """`live`: facts of the cluster, for the TG2xx rules; `observed`: more such facts, worked out
    from the inventory and the objects this check read (check --flows replays recorded flows
    against them, rather than building the same tree a second time); `weakened`: the settings
    a pull request narrowed against the --changed-since ref (topogate.check.settings_guard, TG011)."""
    today = today or dt.date.today()
    # With PATHs, the kustomize trees are checked and their builds started first, so kubectl
    # runs while the inventory is read and the rendered tree compared (each waits on neither).
    # A narrowed run needs only the inventory's cluster names to know which roots to build:
    # read ahead (cluster_names), they let the one build a change needs start first too.
    early: Collecting | None = None
    narrowing: Narrowing | None = None
    excluded: Excluded = {}
    if paths and changed_since is not None and "-" not in paths:
        names = cluster_names(inventory_path)
        if names is not None:
            narrowing = Narrowing(changed_since, inventory_path, names, cluster, paths)
            early = Collecting(paths, [inventory_path], _keep(narrowing, exclude, excluded))
    elif paths and changed_since is None:
        early = Collecting(paths, [inventory_path], _keep(None, exclude, excluded))
    # No cyclic collection from the first read to the result: the inventory, the rendered tree
    # and the parsed builds stay alive to the end, and a collection in between would rescan them.
    with contextlib.ExitStack() as stack:
        if early is not None:
            stack.enter_context(early)
        stack.enter_context(gctune.paused())
        outcome = _run_check(inventory_path, paths, rendered, cluster, today, strict, changed_since, early,
                             exclude, live, narrowing, observed, weakened, excluded)
    if not excluded:
        return outcome
    return dataclasses.replace(outcome, excluded=tuple(sorted(
        (base, pattern, p) for (base, pattern), shown in excluded.items() for p in shown)))


def _load(inventory_path: str, cluster: str | None, rendered: str | None,
          today: dt.date, read_bases: ReadBases = True) -> tuple[Inventory, tuple[Drift, ...]] | CheckOutcome:
    """The inventory and the drift of --rendered, or the outcome of an unreadable inventory."""
    try:
        inv = load_inventory(inventory_path, read_bases)
    except InventoryError as err:
        ctx = Context(None, inventory_path, today=today, given=Given(inventory_problems=tuple(err.problems)))
        findings = run_rules(ctx, only={"TG001"})
        return CheckOutcome(CheckResult(findings, (), all_rules(), inventory_path), 2, None)
    if cluster is not None and inv.cluster(cluster) is None:
        raise CheckInputError(
            f"{inventory_path}: --cluster {cluster}: no such cluster in the inventory "
            f"(known: {', '.join(c.name for c in inv.clusters)})")
    drifted: tuple[Drift, ...] = ()
    if rendered is not None:
        if not Path(rendered).is_dir():
            # Comparing with nothing would report every file as missing: thousands of findings
            # that all mean "wrong path".
            raise CheckInputError(
                f"--rendered {rendered}: no such directory; give the directory `topogate generate "
                f"{inventory_path} -o DIR` wrote, or leave --rendered out")
        drifted = drift(inv, rendered)
    return inv, drifted


def _run_check(inventory_path: str, paths: Sequence[str], rendered: str | None, cluster: str | None,
               today: dt.date, strict: bool, changed_since: str | None,
               early: Collecting | None, exclude: Sequence[Globs] | None = None,
               live: tuple[LiveFact, ...] = (), narrowing: Narrowing | None = None,
               observed: Observed | None = None, weakened: tuple[Weakened, ...] = (),
               excluded: Excluded | None = None) -> CheckOutcome:
    # A narrowed run whose builds were chosen before the load reads only the bases that may
    # have changed or that a checked cluster's workloads need (Narrowing.bases_to_read); the
    # comparison with --rendered renders every workload, so it reads them all.
    some = narrowing.bases_to_read() if narrowing is not None and rendered is None else None
    loaded = _load(inventory_path, cluster, rendered, today, some if some is not None else True)
    if isinstance(loaded, CheckOutcome):
        return loaded
    inv, drifted = loaded
    chosen_by = narrowing  # what the bases left unread were chosen by
    if narrowing is not None and not narrowing.bind(inv):
        # The names read ahead are not the loaded inventory's: what the early builds were
        # chosen by cannot stand, so they are dropped and the narrowing starts again.
        assert early is not None
        early.__exit__(None, None, None)
        early = narrowing = None
    with tempfile.TemporaryDirectory(prefix="topogate-check-") as tmp:
        targets = list(paths)
        sources: dict[str, Position] = {}
        if not targets:
            scratch, sources = _render_to_temp(inv, tmp)
            targets = [scratch]
        skipped: list[ManifestError] = []
        other: list[tuple[str, list[Path]]] = []
        not_local: list[tuple[Path, InputError]] = []
        if narrowing is None and changed_since is not None:
            narrowing = Narrowing(changed_since, inventory_path, [c.name for c in inv.clusters], cluster,
                                  paths, None if paths else targets[0])
            narrowing.bind(inv)
        objects = _collect_each(targets, skipped, inventory_path, narrowing, early, other,
                                exclude if paths else None, not_local, excluded)
        if narrowing is not None and narrowing.escaped(objects):  # read everything after all
            skipped.clear()
            other.clear()
            not_local.clear()
            objects = _collect_each(targets, skipped, inventory_path, other=other,
                                    exclude=exclude if paths else None, not_local=not_local,
                                    excluded=excluded)
        if some is not None and (narrowing is None or narrowing is not chosen_by or narrowing.only is None):
            # The narrowing the unread bases were chosen by did not stand (other names, or
            # everything read after all): the analysis needs the inventory whole.
            if isinstance(whole := _load(inventory_path, cluster, rendered, today), CheckOutcome):
                return whole
            inv = whole[0]
        if not paths:
            objects = tuple(_as_generated(o, targets[0]) for o in objects)
            applied = gitops_render.Rendered(objects)
        else:
            # What Argo CD and Flux apply, in place of what was read from the directories they
            # render (topogate.gitops): the objects checked from here on.
            progress.note("rendering the Argo CD Applications and Flux Kustomizations")
            try:
                applied = gitops_render.render(objects, inv, also_inside=[*paths, inventory_path])
            except InputError as err:
                raise CheckInputError.of(err) from None
            objects = applied.objects
        if observed is not None:
            live = (*live, *observed(inv, objects, narrowing.only if narrowing is not None else None))
        progress.note(f"analysing placement and network paths of {plural(len(objects), 'object')}")
        try:
            jobs, facts = build_map(inv, objects, cluster, narrowing.only if narrowing is not None else None, FACTS)
        except PolicyError as err:
            raise CheckInputError(str(err)) from None
        # Rules run while the scratch tree exists: positions are resolved lazily from it.
        ctx = analysed(inv, inventory_path, objects, tuple(jobs), facts, today=today, drift=drifted,
                       rendered=rendered, skipped=tuple((e.pos, e.message) for e in skipped),
                       other_files=_other_files(other) if paths else (),
                       not_local=tuple((display(root), err.pos, err.message) for root, err in not_local),
                       live=live, weakened=weakened, gitops=applied.notes)
        progress.note(f"running the rules over {plural(len(jobs), 'job')}")
        ran = evaluate(ctx)
        findings = _placed(ran.findings, targets[0], sources) if not paths else ran.findings
    result = CheckResult(findings, tuple(jobs), all_rules(), inventory_path, waived=ran.waived,
                         scope=narrowing.scope() if narrowing is not None else None)
    return CheckOutcome(result, exit_for(result.errors, result.warnings, strict), inv, objects)

__all__ = ["CheckInputError", "CheckOutcome", "Observed", "drift", "run_check"]
