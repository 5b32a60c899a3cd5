"""`topogate baseline`: today's findings written to a file, for `check` to report as baselined
(topogate.check.baseline)."""

from __future__ import annotations

import dataclasses

import click

from topogate.cli.common import done, fail, inventory_arg
from topogate.cli.config import config_options
from topogate.cli.options import BaselineOptions, takes
from topogate.core.escape import one_line


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg, required=False)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rendered", type=click.Path(file_okay=False),
              help="As check's: also compare this generated tree with what `generate` writes.")
@click.option("--cluster", help="As check's: analyse PATHs as manifests of this inventory cluster.")
@click.option("-o", "--out", "out", type=click.Path(dir_okay=False),
              help="The baseline file (default: the settings file's `baseline`, else .topogate-baseline.json).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="As check's.")
@config_options
@takes(BaselineOptions)
def baseline(given: BaselineOptions) -> None:
    """Write the findings `check` reports today to a baseline file.

    Run it once when adopting topogate on a repository that already has findings, and commit the
    file: `check --baseline FILE` (or `baseline:` in .topogate.yaml) then reports each finding
    it lists as baselined, counted and failing nothing, and every new finding fails as before.
    Arguments, settings and selection are check's, so the file lists what check reports.

    Exit codes: 0 written, 2 bad invocation or unreadable input (nothing written).
    """
    # lazy: start-up time (the analysis loads only when it runs)
    from topogate.check.baseline import DEFAULT_FILE, render
    from topogate.check.config import shown
    from topogate.check.errors import CheckInputError
    from topogate.check.run import run_check
    from topogate.check.select import select_outcome
    from topogate.cli.check import with_settings
    from topogate.tree.writer import write_file

    opts, settings, globs, _ = with_settings(given.check)
    target = given.out or (shown(settings.baseline) if settings.baseline else DEFAULT_FILE)
    try:
        outcome = run_check(opts.inventory, opts.paths, opts.rendered, opts.cluster, strict=opts.strict,
                            exclude=globs)
        outcome = select_outcome(outcome, opts.report.select, opts.report.ignore, opts.strict,
                                 settings.per_path_ignores)
    except CheckInputError as err:
        fail(f"topogate: {err.lines[0]}", more=err.lines[1:])
    if outcome.inventory is None:
        fail(f"topogate: {opts.inventory} cannot be read; fix it before writing a baseline (`topogate check` "
             "says what is wrong)")
    findings = [f for f in outcome.result.findings if f.severity in ("error", "warning")]
    why = write_file(target, render(findings))
    if why:
        fail(f"topogate: cannot write {target}: {why}")
    kept = dataclasses.replace(outcome.result, findings=tuple(findings))
    click.echo(one_line(f"wrote {target}: {len(findings)} finding(s) ({kept.errors} error(s), {kept.warnings} "
                        "warning(s)); commit it, and `check` reports them as baselined"))
    done(0)


__all__ = ["baseline"]
