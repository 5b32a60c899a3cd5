"""`topogate check --live`: the branch the `check` command hands over to."""

from __future__ import annotations

from typing import TYPE_CHECKING, NoReturn

import click

from topogate.cli.common import done, fail, fail_inventory
from topogate.cli.output import emit, require_writable, stdout_format
from topogate.core.exitcodes import report_only
from topogate.inventory.loader import InventoryError
from topogate.live.client import Target
from topogate.live.commands import LiveOutcome, Source, run_live_check
from topogate.live.errors import LiveError

if TYPE_CHECKING:
    from topogate.check.config import Settings
    from topogate.cli.options import CheckOptions, LiveOptions


def print_report(live: LiveOutcome, fmt: str, strict: bool,
                 outputs: tuple[tuple[str, str], ...] = (), verbosity: int = 0) -> None:
    """The report of a live command (check --live, drift) through the one output path; the
    header says what was compared."""
    emit(live.outcome.result, stdout_format(fmt), strict=strict, outputs=outputs, header=live.header,
         verbosity=verbosity, inventory=live.outcome.inventory)


def check_live(opts: CheckOptions, live: LiveOptions, outputs: tuple[tuple[str, str], ...],
               settings: Settings | None = None, raw: CheckOptions | None = None) -> NoReturn:
    """Never returns. Exits: 0 clean, 1 findings, 2 bad invocation, 75/77/78 as `audit egress`.
    `settings` (the settings file's) and `raw` (the options before it was merged in): the
    report names the file and what its settings left out."""
    if not live.live:
        raise click.UsageError("--context, --kubeconfig and --from-file belong to --live")
    if opts.paths or opts.rendered:
        raise click.UsageError("--live checks the cluster: drop the PATHs and --rendered")
    if live.from_file and (live.context or live.kubeconfig):
        raise click.UsageError("--from-file reads no cluster: drop --context/--kubeconfig")
    require_writable(outputs)  # before the cluster is read
    try:
        outcome = run_live_check(opts.inventory, Source(live.from_file, Target(live.kubeconfig, live.context)),
                                 cluster=opts.cluster, strict=opts.strict)
    except InventoryError as err:
        fail_inventory(err, f"topogate: {len(err.problems)} problem(s) in the inventory.")
    except LiveError as err:
        click.echo(err.line("check --live"), err=True)
        raise click.exceptions.Exit(int(err.code)) from None
    outcome = selected(outcome, opts.report.select, opts.report.ignore, opts.strict)
    if settings is not None and raw is not None:
        outcome = _with_settings(outcome, settings, raw)
    print_report(outcome, opts.fmt or "auto", opts.strict, outputs, opts.report.verbosity)
    done(report_only(outcome.outcome.exit_code, opts.exit_zero))


def _with_settings(live: LiveOutcome, settings: Settings, raw: CheckOptions) -> LiveOutcome:
    import dataclasses  # lazy: as in selected

    from topogate.check.config import Globs  # lazy: as dataclasses
    from topogate.check.settings_report import settings_use  # lazy: as dataclasses

    # A live check reads no PATH and honours no per-path ignore: those settings leave nothing out.
    live_settings = dataclasses.replace(settings, exclude=Globs(), per_path_ignores=())
    use = settings_use(live_settings, live.outcome, select=raw.report.select, ignore=raw.report.ignore,
                       cluster=raw.cluster)
    if use is None:
        return live
    result = dataclasses.replace(live.outcome.result, settings=use)
    return dataclasses.replace(live, outcome=dataclasses.replace(live.outcome, result=result))


def selected(live: LiveOutcome, select: tuple[str, ...], ignore: tuple[str, ...], strict: bool) -> LiveOutcome:
    """--select/--ignore on a live command's findings, as on check's (counted when they hide any)."""
    if not select and not ignore:
        return live
    import dataclasses  # lazy: only when a selection is asked for

    from topogate.check.errors import CheckInputError  # lazy: as dataclasses
    from topogate.check.select import select_outcome  # lazy: as dataclasses

    try:
        return dataclasses.replace(live, outcome=select_outcome(live.outcome, select, ignore, strict))
    except CheckInputError as err:
        fail(f"topogate: {err.lines[0]}", more=err.lines[1:])


__all__ = ["check_live", "print_report", "selected"]
