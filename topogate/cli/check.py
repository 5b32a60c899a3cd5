"""`topogate check`: placement and network policies agree, for every training job found; with
`--live`, what runs in the cluster now (topogate.cli.check_live)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

import click

from topogate.cli.common import done, fail, formats, inventory_arg, report_options
from topogate.cli.config import config_options, load_settings, settings_scope, settings_text
from topogate.cli.options import CheckOptions, LiveOptions, takes
from topogate.core import progress
from topogate.core.escape import one_line
from topogate.core.exitcodes import report_only

if TYPE_CHECKING:
    from collections.abc import Collection

    from topogate.check.baseline import Baseline, Entry
    from topogate.check.config import Globs, Settings
    from topogate.check.run import Observed
    from topogate.check.settings_guard import Guarded
    from topogate.inventory.model import Inventory
    from topogate.k8s.objects import K8sObject
    from topogate.policies.context import LiveFact, Weakened


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg, required=False)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rendered", type=click.Path(file_okay=False),
              help="Also check that this generated tree is exactly what `generate` writes.")
@click.option("--cluster", help="Analyse PATHs as manifests of this inventory cluster.")
@click.option("--format", "fmt", type=click.Choice(formats()), default=None,
              help="auto (the default, unless the configuration sets one): github under GitHub "
                   "Actions, else text.")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@report_options
@click.option("--live", is_flag=True, help="Check what runs in the cluster now (docs/live.md).")
@click.option("--context", help="With --live: kubeconfig context.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="With --live: kubeconfig file.")
@click.option("--from-file", type=click.Path(dir_okay=False),
              help="With --live: a `kubectl get nodes,pods,... -o json` file instead of the cluster.")
@click.option("--changed-since", metavar="GITREF",
              help="Check only the clusters whose manifests changed since the merge base with "
                   "GITREF (docs/cli.md); anything unclear checks everything.")
@click.option("--flows", type=click.Path(dir_okay=False), metavar="FILE",
              help="Recorded Hubble flows (`hubble observe -o json`): a carried flow the tree denies is TG210.")
@click.option("--baseline", type=click.Path(dir_okay=False), metavar="FILE",
              help="Report the findings FILE lists (`topogate baseline` writes it) as baselined, failing "
                   "nothing; default: the settings file's `baseline`.")
@click.option("--exit-zero", is_flag=True,
              help="Report only: exit 0 even when findings fail the check (2 still means bad input).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Do not read PATH entries matching GLOB (relative to here; ** spans directories), "
                   "besides the configuration's exclude.")
@config_options
@click.option("--show-settings", is_flag=True,
              help="Print the settings this run would use (configuration and options merged); check nothing.")
@takes(CheckOptions, LiveOptions)
def check(opts: CheckOptions, live: LiveOptions) -> None:
    """Check that placement and network policies agree, for every training job found.

    PATHs are YAML files, directories, or kustomization directories (built with kubectl
    kustomize). Without PATHs the inventory's own generated tree is checked. Settings also come
    from .topogate.yaml or pyproject.toml's [tool.topogate] (`topogate config`); with no argument
    at all, INVENTORY and PATHs are its `inventory` and `paths`.

    Exit codes: 0 clean, 1 findings (errors; warnings too with --strict; 0 with --exit-zero),
    2 bad invocation or unreadable input; with --live also 75 temporary, 77 access denied,
    78 configuration (as `audit egress`).
    """
    run(opts, live)


def _flow_facts(opts: CheckOptions, exclude: tuple[Globs, ...]) -> Observed | None:
    """TG210's facts: the recorded flows of --flows the tree denies (topogate.replay), replayed
    against the objects the check read. Its own read of the tree where the check's is not the
    whole tree (a narrowed run that does not analyse the replayed cluster, --exclude)."""
    if opts.flows is None:
        return None
    flows = opts.flows

    def facts(inv: Inventory, objects: tuple[K8sObject, ...], only: Collection[str] | None) -> tuple[LiveFact, ...]:
        from topogate.replay import (  # lazy: only with --flows
            ReplayError,
            carried_denied,
            replay_objects,
            run_replay,
        )

        shared = (only is None or (opts.cluster is not None and opts.cluster in only)) and not any(
            g.patterns for g in exclude)
        try:
            run = (replay_objects(flows, inv, objects, opts.cluster) if shared
                   else run_replay(flows, opts.inventory, opts.paths, opts.cluster))
        except ReplayError as err:
            for p in err.problems[:-1]:
                click.echo(one_line(f"topogate check: --flows: {p}"), err=True)
            fail(f"topogate check: --flows: {err.problems[-1]}")
        return carried_denied(run, flows)

    return facts


def with_settings(opts: CheckOptions, guarded: bool = False
                  ) -> tuple[CheckOptions, Settings, tuple[Globs, ...], Guarded | None]:
    """The options with the configuration merged in, and the exclude globs (topogate.check.config
    Globs) of both: the command line's --select replaces the file's, --ignore and --exclude add
    to it, --strict turns it on, --cluster and --format win. `guarded` (a check of files with
    --changed-since): the settings that narrow the gate are the ref's where the working tree's
    narrow more (topogate.check.settings_guard)."""
    from topogate.check.config import Globs  # lazy: start-up time (a command's modules load when it runs)

    settings = load_settings(opts.config_file, opts.no_config)
    guard = None
    if guarded and opts.changed_since is not None and not opts.no_config:
        guard = _guard(opts, settings)
        settings = guard.settings
    report = dataclasses.replace(opts.report, select=opts.report.select or settings.select,
                                 ignore=(*settings.ignore, *opts.report.ignore))
    merged = dataclasses.replace(
        opts, report=report, strict=opts.strict or settings.strict, cluster=opts.cluster or settings.cluster,
        fmt=opts.fmt or settings.format or "auto")
    if not opts.inventory:  # no argument at all: both from the settings
        inventory, paths = settings_scope(settings, "check")
        merged = dataclasses.replace(merged, inventory=inventory, paths=paths)
    return merged, settings, (settings.exclude, Globs(opts.exclude, ".")), guard


def _guard(opts: CheckOptions, settings: Settings) -> Guarded:
    """The settings of a --changed-since run; REF's invalid settings are exit 2, every problem named."""
    import os  # lazy: as below

    from topogate.check.settings_guard import BaseSettingsError, guard  # lazy: only with --changed-since
    from topogate.policies.engine import all_rules  # lazy: as settings_guard

    assert opts.changed_since is not None
    infos = all_rules()
    try:
        where = opts.inventory or settings.inventory or settings.path or "."
        guarded = guard(opts.changed_since, settings, repo_dir=os.path.dirname(os.path.abspath(where)),
                        start=os.getcwd(), config_file=opts.config_file, formats=formats(),
                        rule_names=[r.id for r in infos] + [r.name for r in infos], rules=infos)
    except BaseSettingsError as err:
        for p in err.problems:
            click.echo(one_line(str(p)), err=True)
        n = len(err.problems)
        click.echo(one_line(
            f"topogate: {n} problem{'s' if n != 1 else ''} in the configuration {err.file}: under "
            f"--changed-since the settings that narrow the check are read from {opts.changed_since}; fix them "
            "there, or run with --no-config; nothing was checked."), err=True)
        raise click.exceptions.Exit(2) from None
    if guarded.note:
        click.echo(one_line(f"topogate: {guarded.note}"), err=True)
    return guarded


def run(opts: CheckOptions, live: LiveOptions) -> None:
    # lazy: start-up time (the analysis and the reporters load only when a check runs)
    from topogate.check.errors import CheckInputError
    from topogate.cli import output
    from topogate.core import gctune

    raw = opts
    opts, settings, exclude, guarded = with_settings(opts, guarded=not live.wanted)
    if opts.show_settings:
        _show_settings(opts, settings, exclude, guarded)
    if gctune.one_shot(click.get_current_context().find_root().command):
        gctune.hold()
    assert opts.fmt is not None
    name = output.stdout_format(opts.fmt)
    outputs = output.output_files(opts.report.output, opts.report.output_format, name)
    if live.wanted:
        from topogate.cli.check_live import check_live  # lazy: the kubernetes client, on demand

        if opts.changed_since is not None:
            fail("topogate: --changed-since narrows a check of files; --live reads the cluster")
        check_live(opts, live, outputs, settings, raw)
    output.require_writable(outputs)  # before the analysis, not after it has printed the report
    try:
        with progress.shown("topogate check", progress.wanted(name, opts.report.quiet)):
            progress.note("loading")
            from topogate.check.run import run_check  # lazy: under the progress line, it takes a while
            from topogate.check.select import baselined_outcome, select_outcome  # lazy: as run_check
            from topogate.check.settings_guard import never_hidden  # lazy: as run_check
            from topogate.check.settings_report import settings_use  # lazy: as run_check

            base, refused, base_ref = _baseline(opts, settings)
            outcome = run_check(opts.inventory, opts.paths, opts.rendered, opts.cluster,
                                strict=opts.strict, changed_since=opts.changed_since, exclude=exclude,
                                observed=_flow_facts(opts, exclude),
                                weakened=(*(guarded.weakened if guarded is not None else ()),
                                          *_refused_facts(refused, opts.changed_since or "")))
        always = (never_hidden(raw.report.select, raw.report.ignore, outcome.result.rules) if guarded is not None
                  else frozenset())
        outcome = select_outcome(outcome, opts.report.select, opts.report.ignore, opts.strict, settings.per_path_ignores, always)
        if base is not None:
            outcome = baselined_outcome(outcome, base, opts.strict, tuple(e.pos for e in refused), base_ref)
        use = settings_use(settings, outcome, select=raw.report.select, ignore=raw.report.ignore, cluster=raw.cluster,
                           guarded=guarded)
        if use is not None:
            outcome = dataclasses.replace(outcome, result=dataclasses.replace(outcome.result, settings=use))
        if outcome.result.scope is not None and outcome.result.scope.note:
            click.echo(one_line(f"topogate: {outcome.result.scope.note}"), err=True)
    except CheckInputError as err:
        fail(f"topogate: {err.lines[0]}", more=err.lines[1:])
    appendix = _connectivity(opts, name) if "markdown" in (name, *(f for _, f in outputs)) else ""
    output.emit(outcome.result, name, strict=opts.strict, verbosity=opts.report.verbosity,
                outputs=outputs, markdown_appendix=appendix, inventory=outcome.inventory)
    done(report_only(outcome.exit_code, opts.exit_zero))


def _baseline(opts: CheckOptions, settings: Settings) -> tuple[Baseline | None, tuple[Entry, ...], str]:
    """The baseline to honour (--baseline, else the settings' `baseline`), the entries a pull
    request added that are not honoured, and the ref whose file decided; exit 2 when unreadable.
    Under --changed-since the settings' baseline is the repository's, which the pull request
    edits: only what REF's file also lists is honoured (the workflow's own --baseline is used as
    it is)."""
    from topogate.check.baseline import BaselineError, load, load_guarded  # lazy: only with a baseline

    path = opts.baseline or settings.baseline
    if path is None:
        return None, (), ""
    try:
        if opts.changed_since is not None and not opts.baseline:
            honoured, refused, note = load_guarded(path, opts.changed_since)
            if note:
                click.echo(one_line(f"topogate: --changed-since {opts.changed_since}: {note}"), err=True)
            return honoured, refused, opts.changed_since
        return load(path), (), ""
    except BaselineError as err:
        fail(f"topogate: {err}")


def _refused_facts(refused: tuple[Entry, ...], ref: str) -> tuple[Weakened, ...]:
    """TG011's facts: each baseline entry a pull request adds, at its line."""
    from topogate.policies.context import Weakened  # lazy: as the baseline

    return tuple(Weakened("baseline", f"Settings/{e.pos.file}", (
        f"baseline: {e.key[0]} on {e.key[1]} ({e.key[2]}) is newly baselined, which {ref}'s baseline does "
        f"not list; under --changed-since this check does not honour it, but once merged every check "
        "reading this file would hide that finding"), e.pos) for e in refused)


def _show_settings(opts: CheckOptions, settings: Settings, exclude: tuple[Globs, ...],
                   guarded: Guarded | None) -> None:
    merged = dataclasses.replace(settings, select=opts.report.select, ignore=opts.report.ignore, strict=opts.strict,
                                 cluster=opts.cluster, format=opts.fmt,
                                 exclude=dataclasses.replace(settings.exclude, patterns=(
                                     *settings.exclude.patterns, *exclude[1].patterns)))
    note = "# merged with this command line's options"
    if guarded is not None and guarded.base:
        note += (f"\n# --changed-since {opts.changed_since}: {', '.join(guarded.taken)} as {guarded.base} "
                 "(what narrows the gate is the ref's where this file narrows more)")
    click.echo(settings_text(merged, note), nl=False)
    raise click.exceptions.Exit(0)


def _connectivity(opts: CheckOptions, name: str) -> str:
    """check --changed-since's markdown report ends with what the change opens or closes
    (topogate.diff, against the same merge base); it never changes the exit code."""
    if opts.changed_since is None:
        return ""
    from topogate.diff import DiffError, run_diff  # lazy: only a markdown --changed-since run needs it
    from topogate.diff.render import render_markdown

    title = f"Connectivity changes since {opts.changed_since}"
    try:
        with progress.shown("topogate check: connectivity diff", progress.wanted(name, opts.report.quiet)):
            d = run_diff(opts.inventory, opts.paths, opts.changed_since)
    except DiffError as err:
        return f"### {title}\n\nNot computed: {err}\n"
    return render_markdown(d, level=3, title=title)


__all__ = ["check", "run", "with_settings"]
