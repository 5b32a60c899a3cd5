"""`topogate check` as a function: load, collect, analyse once, run the rules, return a result.

Separate from the CLI so tests and other commands (explain, audit) reuse exactly this path.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import os
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from topogate.analysis.map.coverage import ungrouped_templates
from topogate.analysis.netpolicy import PolicyError
from topogate.analysis.result import CheckResult
from topogate.check.narrow import Narrowing
from topogate.core import gctune
from topogate.core.position import Position
from topogate.inventory.loader import InventoryError, load_inventory
from topogate.inventory.model import Inventory
from topogate.policies.context import Context, Drift
from topogate.policies.engine import all_rules, evaluate, run_rules
from topogate.sources.manifests import Collecting, K8sObject, ManifestError, collect


class CheckInputError(Exception):
    """Input that cannot be read at all (exit 2), with a position to print."""


@dataclass(frozen=True)
class CheckOutcome:
    result: CheckResult
    exit_code: int
    inventory: Inventory | None
    objects: tuple[K8sObject, ...] = ()


def drift(inv: Inventory, out: str) -> tuple[Drift, ...]:
    from topogate.generators import render_tree
    from topogate.tree import writer
    from topogate.tree.treediff import file_diffs

    files = render_tree(inv, os.path.realpath(out))
    # One walk of OUT: its entries' lstat serves the refusal below and the comparison.
    entries = writer.tree_entries(out)
    _refuse_special_files(out, files, entries)
    return tuple(
        Drift(d.status, d.path, str(Path(out) / d.path), d.line, d.diff)
        for d in file_diffs(out, files, entries=entries))


def _refuse_special_files(out: str, files: Iterable[str],
                          entries: Mapping[str, os.DirEntry[str]] | None = None) -> None:
    """The comparison reads OUT's copy of every file generate writes: a FIFO there would block
    it forever, a symlink to /dev/zero never end it. Refused before anything is read.
    `entries` (writer.tree_entries of OUT) saves an lstat per file; a path not among them (below
    a symlinked or unlistable directory) is looked up itself."""
    from topogate.safeio import limits
    from topogate.safeio.saferead import one_line

    try:
        cap = limits.current().max_file_bytes
    except limits.LimitError as e:
        raise CheckInputError(str(e)) from None
    known = entries if entries is not None else {}
    for rel in files:
        entry = known.get(rel)
        try:
            st = entry.stat(follow_symlinks=False) if entry is not None else os.lstat(os.path.join(out, rel))
        except OSError:
            continue  # missing (added) or unreadable: the comparison reports it
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode) or st.st_size > cap:
            p = Path(out) / rel
            what = ("a symlink" if stat.S_ISLNK(st.st_mode) else "not a regular file"
                    if not stat.S_ISREG(st.st_mode) else f"larger than {cap // limits.MiB} MB")
            raise CheckInputError(one_line(
                f"{p}: is {what}, where generate writes a regular file; --rendered OUT must be a "
                "tree topogate generated: remove it and run topogate generate"))


def _render_to_temp(inv: Inventory, tmp: str) -> str:
    """Render the inventory into a scratch tree so `check INVENTORY` alone has manifests to read.

    Rendered for its own location, so the overlays' relative paths reach the bases from there."""
    from topogate.generators import render_tree
    from topogate.tree import writer

    out = str(Path(tmp) / "rendered")
    writer.write_tree(out, render_tree(inv, os.path.realpath(out)))
    return out


def _as_generated(o: K8sObject, tree: str) -> K8sObject:
    """Objects of the scratch tree are named by their place in the generated layout, since the
    scratch directory is gone by the time anyone reads the finding."""
    for prefix in (os.path.relpath(tree), os.path.abspath(tree)):
        if o.pos.file.startswith(prefix):
            rel = o.pos.file[len(prefix):].lstrip("/")
            return dataclasses.replace(o, pos=Position(f"(generated)/{rel}", o.pos.line, o.pos.column))
    return o


def _collect_each(targets: Sequence[str], skipped: list[ManifestError],
                  inventory_path: str, narrowing: Narrowing | None = None,
                  started: Collecting | None = None) -> tuple[K8sObject, ...]:
    """Every object of every PATH, built together (concurrently); a PATH that holds no
    Kubernetes object at all (an empty directory, a values file) is a usage error, like a
    linter given nothing to lint. Helm templates met in directories land in ``skipped``.
    `started`: the same collection begun earlier, whose builds have been running meanwhile."""
    empty: list[str] = []
    try:
        if started is not None:
            objects = started.result(skipped, empty)
        else:
            objects = collect(targets, also_inside=[inventory_path], skipped=skipped, empty=empty,
                              keep=narrowing.keep if narrowing is not None else None)
    except ManifestError as err:
        raise CheckInputError(str(err)) from None
    if empty:
        raise CheckInputError("\n".join(
            f"{t}:1:1: no Kubernetes object found (no YAML document with a `kind`): nothing to "
            "check here; pass the directory or files that hold the training job's manifests"
            for t in empty))
    return tuple(objects)


def run_check(
    inventory_path: str,
    paths: Sequence[str] = (),
    rendered: str | None = None,
    cluster: str | None = None,
    today: dt.date | None = None,
    strict: bool = False,
    changed_since: str | None = None,
) -> CheckOutcome:
    today = today or dt.date.today()
    # With PATHs, the kustomize trees are checked and their builds started first, so kubectl
    # runs while the inventory is read and the rendered tree compared (each waits on neither).
    # A narrowed run must read the inventory before it knows which roots to build.
    early = Collecting(paths, [inventory_path]) if paths and changed_since is None else None
    # No cyclic collection from the first read to the result: the inventory, the rendered tree
    # and the parsed builds stay alive to the end, and a collection in between would rescan them.
    with early if early is not None else contextlib.nullcontext(), gctune.paused():
        return _run_check(inventory_path, paths, rendered, cluster, today, strict, changed_since, early)


def _load(inventory_path: str, cluster: str | None, rendered: str | None,
          today: dt.date) -> tuple[Inventory, tuple[Drift, ...]] | CheckOutcome:
    """The inventory and the drift of --rendered, or the outcome of an unreadable inventory."""
    try:
        inv = load_inventory(inventory_path)
    except InventoryError as err:
        ctx = Context(None, inventory_path, inventory_problems=tuple(err.problems), today=today)
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
               early: Collecting | None) -> CheckOutcome:
    from topogate.analysis.map.build import build_map

    loaded = _load(inventory_path, cluster, rendered, today)
    if isinstance(loaded, CheckOutcome):
        return loaded
    inv, drifted = loaded
    with tempfile.TemporaryDirectory(prefix="topogate-check-") as tmp:
        targets = list(paths)
        if not targets:
            targets = [_render_to_temp(inv, tmp)]
        skipped: list[ManifestError] = []
        narrowing = (Narrowing(changed_since, inventory_path, inv, cluster, paths, None if paths else targets[0])
                     if changed_since is not None else None)
        objects = _collect_each(targets, skipped, inventory_path, narrowing, early)
        if narrowing is not None and narrowing.escaped(objects):  # read everything after all
            skipped.clear()
            objects = _collect_each(targets, skipped, inventory_path)
        if not paths:
            objects = tuple(_as_generated(o, targets[0]) for o in objects)
        try:
            jobs, facts = build_map(inv, objects, cluster, narrowing.only if narrowing is not None else None)
        except PolicyError as err:
            raise CheckInputError(str(err)) from None
        # Rules run while the scratch tree exists: positions are resolved lazily from it.
        ctx = Context(
            inv, inventory_path, objects, tuple(jobs), facts.policies, drift=drifted,
            rendered=rendered, today=today, policy_selects=facts.policy_selects,
            boundary_openings=facts.boundary_openings, zone_label_lies=facts.zone_label_lies,
            spread_splits=facts.spread_splits, unprotected=facts.unprotected,
            unassigned=facts.unassigned, open_ingress=facts.open_ingress,
            closed_doors=facts.closed_doors, ungrouped=ungrouped_templates(objects),
            not_modelled=facts.not_modelled, skipped=tuple((e.pos, e.message) for e in skipped),
            kueue_concerns=facts.kueue_concerns,
        )
        ran = evaluate(ctx)
    result = CheckResult(ran.findings, tuple(jobs), all_rules(), inventory_path, waived=ran.waived,
                         scope=narrowing.scope() if narrowing is not None else None)
    failing = result.errors + (result.warnings if strict else 0)
    return CheckOutcome(result, 1 if failing else 0, inv, objects)
