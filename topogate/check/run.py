"""`topogate check` as a function: load, collect, analyse once, run the rules, return a result.

Separate from the CLI so tests and other commands (explain, audit) reuse exactly this path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import tempfile
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from topogate.analysis.map.build import Ahead, build_map
from topogate.analysis.netpolicy import PolicyError
from topogate.analysis.result import CheckResult
from topogate.check.config import Globs
from topogate.check.drift import drift, rendered_drift
from topogate.check.errors import CheckInputError
from topogate.check.pipeline import Pipeline
from topogate.check.plan import Excluded, ReadPlan, plan_ahead, plan_read
from topogate.core import gctune, progress
from topogate.core.exitcodes import exit_for
from topogate.core.findings import Finding
from topogate.core.forked import Child
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
from topogate.safeio.repopaths import display
from topogate.safeio.saferead import InputError
from topogate.sources.deferred import Trusted, tree_digests, vouched_by
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import Collecting, ManifestError
from topogate.tree import writer


@dataclass(frozen=True)
class CheckOutcome:
    result: CheckResult
    exit_code: int
    inventory: Inventory | None
    objects: tuple[K8sObject, ...] = ()
    # (glob base, pattern, PATH entry as shown): the entries each exclude pattern left unread
    # that the run would otherwise have read; the report counts them per setting.
    excluded: tuple[tuple[str, str, str], ...] = ()


def _render_to_temp(inv: Inventory, tmp: str) -> tuple[str, dict[str, Position], Trusted]:
    """Render the inventory into a scratch tree so `check INVENTORY` alone has manifests to read,
    and say which inventory entry each file comes from; the files read from it as written are
    the renderer's own (sources.deferred: their content checks are spared).

    Rendered for its own location, so the overlays' relative paths reach the bases from there."""
    out = str(Path(tmp) / "rendered")
    tree, sources = render_tree_sources(inv, os.path.realpath(out))
    writer.write_tree(out, tree)
    return out, sources, vouched_by(tree_digests(out, tree))


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


def _read(plan: ReadPlan, started: Collecting | None, skipped: list[ManifestError],
          other: list[tuple[str, list[Path]]], not_local: list[tuple[Path, InputError]],
          pipeline: Pipeline | None = None, trusted: Trusted | None = None) -> tuple[K8sObject, ...]:
    """Every object the plan reads, built together (concurrently); a PATH that holds no
    Kubernetes object at all (an empty directory, a values file) is a usage error, like a
    linter given nothing to lint. Helm templates met in directories land in ``skipped``.
    `started`: the plan's builds begun earlier, running meanwhile; `pipeline`: handed each
    unit's objects as they are read (topogate.check.pipeline); `trusted`: see sources.deferred."""
    empty: list[str] = []
    try:
        if started is not None:
            objects = started.result(skipped, empty, other, not_local, pipeline, trusted)
        else:
            with plan.start() as pending:
                objects = pending.result(skipped, empty, other, not_local, pipeline, trusted)
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
    excluded: Excluded = {}
    ahead = plan_ahead(inventory_path, paths, cluster, changed_since, exclude, excluded)
    # No cyclic collection from the first read to the result: the inventory, the rendered tree
    # and the parsed builds stay alive to the end, and a collection in between would rescan them.
    with contextlib.ExitStack() as stack:
        started = stack.enter_context(ahead.start()) if ahead is not None else None
        stack.enter_context(gctune.paused())
        outcome = _run_check(inventory_path, paths, rendered, cluster, today, strict, changed_since, ahead,
                             started, exclude, live, observed, weakened, excluded, stack)
    if not excluded:
        return outcome
    return dataclasses.replace(outcome, excluded=tuple(sorted(
        (base, pattern, p) for (base, pattern), shown in excluded.items() for p in shown)))


class _DriftBeside:
    """The drift of --rendered, worked out in a forked child while this process reads the
    builds (only the report wants it, and at 10,000 jobs it is 3 s of the one thread the whole
    check waits on); here, when the child cannot help (no second CPU, no fork, it failed or
    was late), so its errors are raised here too. The answer is the child's or this process's,
    never a mix. Called for the drift; closed (the child reaped) however the run ends.

    The child also gives the digest of every file it rendered (check.drift.rendered_drift):
    `trusted`, asked before the first build's output is read, vouches with them for the files
    of OUT that are the generator's own, whose content check the read then spares
    (sources.deferred). Without the child's answer nothing is vouched for."""

    def __init__(self, inv: Inventory, rendered: str):
        self.inv, self.rendered = inv, rendered
        self.started = time.monotonic()
        self.child = Child.start(lambda: rendered_drift(inv, rendered)) if (os.cpu_count() or 1) > 1 else None
        self.got: tuple[tuple[Drift, ...], dict[str, str]] | None = None

    def _answer(self) -> tuple[tuple[Drift, ...], dict[str, str]] | None:
        child, self.child = self.child, None
        if child is not None:
            got = child.result(timeout=max(DRIFT_WAIT, time.monotonic() - self.started))
            self.got = got if isinstance(got, tuple) and len(got) == 2 else None
        return self.got

    def trusted(self) -> Trusted | None:
        got = self._answer()
        if got is None:
            return None
        return vouched_by(got[1])

    def __call__(self) -> tuple[Drift, ...]:
        got = self._answer()
        return got[0] if got is not None else drift(self.inv, self.rendered)

    def close(self) -> None:
        if self.child is not None:
            self.child.discard()
            self.child = None


# The drift worked out beside the read is awaited at least this long once the read is done.
DRIFT_WAIT = 10.0


def _load(inventory_path: str, cluster: str | None, rendered: str | None,
          today: dt.date, read_bases: ReadBases = True
          ) -> tuple[Inventory, Callable[[], tuple[Drift, ...]]] | CheckOutcome:
    """The inventory and the drift of --rendered (asked when wanted), or the outcome of an
    unreadable inventory."""
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
    drifted: Callable[[], tuple[Drift, ...]] = tuple
    if rendered is not None:
        if not Path(rendered).is_dir():
            # Comparing with nothing would report every file as missing: thousands of findings
            # that all mean "wrong path".
            raise CheckInputError(
                f"--rendered {rendered}: no such directory; give the directory `topogate generate "
                f"{inventory_path} -o DIR` wrote, or leave --rendered out")
        drifted = _DriftBeside(inv, rendered)
    return inv, drifted


def _run_check(inventory_path: str, paths: Sequence[str], rendered: str | None, cluster: str | None,
               today: dt.date, strict: bool, changed_since: str | None, plan: ReadPlan | None,
               started: Collecting | None, exclude: Sequence[Globs] | None, live: tuple[LiveFact, ...],
               observed: Observed | None, weakened: tuple[Weakened, ...], excluded: Excluded,
               stack: contextlib.ExitStack) -> CheckOutcome:
    """Execute the read plan (planned ahead, or here once the inventory is loaded), then
    analyse what it read."""
    # A plan made before the load reads only the bases that may have changed or that a checked
    # cluster's workloads need (ReadPlan.bases_to_read); the comparison with --rendered renders
    # every workload, so it reads them all.
    some = plan.bases_to_read() if plan is not None and rendered is None else None
    loaded = _load(inventory_path, cluster, rendered, today, some if some is not None else True)
    if isinstance(loaded, CheckOutcome):
        return loaded
    inv, drifted = loaded
    if isinstance(drifted, _DriftBeside):
        stack.callback(drifted.close)  # a child not asked for its drift is reaped all the same
    chosen_by = plan  # the plan the unread bases were chosen by
    if plan is not None and not plan.bind(inv):
        # The names read ahead are not the loaded inventory's: the plan made with them cannot
        # stand, so its builds are dropped and the read is planned again.
        assert started is not None
        started.__exit__(None, None, None)
        plan = started = None
    with tempfile.TemporaryDirectory(prefix="topogate-check-") as tmp:
        targets = list(paths)
        sources: dict[str, Position] = {}
        scratch_trusted: Trusted | None = None
        if not targets:
            scratch, sources, scratch_trusted = _render_to_temp(inv, tmp)
            targets = [scratch]
        if plan is None:
            plan = plan_read(targets, inventory_path, since=changed_since, names=[c.name for c in inv.clusters],
                             cluster=cluster, exclude=exclude if paths else None, excluded=excluded,
                             paths=paths, generated=None if paths else targets[0])
            plan.bind(inv)
        skipped: list[ManifestError] = []
        other: list[tuple[str, list[Path]]] = []
        not_local: list[tuple[Path, InputError]] = []
        # With PATHs, each cluster is analysed as soon as its own builds are read (the objects
        # are then those build_map is given; a scratch tree's are renamed after the read).
        ahead = Ahead(inv, cluster, plan.only, FACTS) if paths else None
        # The files read are the scratch tree's, or OUT's beside the drift child (not awaited
        # before this: the builds are under way meanwhile).
        trusted = scratch_trusted if scratch_trusted is not None else (
            drifted.trusted() if isinstance(drifted, _DriftBeside) else None)
        objects = _read(plan, started, skipped, other, not_local,
                        Pipeline(plan, ahead) if ahead is not None else None, trusted)
        if plan.escaped(objects):  # read everything after all
            ahead = None
            skipped.clear()
            other.clear()
            not_local.clear()
            plan = plan.widened()
            objects = _read(plan, None, skipped, other, not_local, trusted=trusted)
        if chosen_by is not None and chosen_by.wants_whole_inventory(plan):
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
            live = (*live, *observed(inv, objects, plan.only))
        progress.note(f"analysing placement and network paths of {plural(len(objects), 'object')}")
        try:
            jobs, facts = build_map(inv, objects, cluster, plan.only, FACTS, ahead)
        except PolicyError as err:
            raise CheckInputError(str(err)) from None
        # Rules run while the scratch tree exists: positions are resolved lazily from it.
        ctx = analysed(inv, inventory_path, objects, tuple(jobs), facts, today=today, drift=drifted(),
                       rendered=rendered, skipped=tuple((e.pos, e.message) for e in skipped),
                       other_files=_other_files(other) if paths else (),
                       not_local=tuple((display(root), err.pos, err.message) for root, err in not_local),
                       live=live, weakened=weakened, gitops=applied.notes)
        progress.note(f"running the rules over {plural(len(jobs), 'job')}")
        ran = evaluate(ctx)
        findings = _placed(ran.findings, targets[0], sources) if not paths else ran.findings
    result = CheckResult(findings, tuple(jobs), all_rules(), inventory_path, waived=ran.waived,
                         scope=plan.scope())
    return CheckOutcome(result, exit_for(result.errors, result.warnings, strict), inv, objects)

__all__ = ["CheckInputError", "CheckOutcome", "Observed", "drift", "run_check"]
