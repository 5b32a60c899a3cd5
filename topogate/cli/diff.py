"""`topogate diff`: which flows a change opens or closes, and the rule that decides each."""

from __future__ import annotations

import click

from topogate.cli.common import done, fail, inventory_arg
from topogate.cli.config import config_options, scope_or_settings
from topogate.cli.options import DiffOptions, takes


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg, required=False)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--base", "base", required=True, metavar="GITREF",
              help="Compare with the same INVENTORY and PATHs at this git ref (read from a worktree of it).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown", "sarif"]), default="text",
              show_default=True)
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Also write the report to a file, in the format its extension names (.md, .json, .sarif, .txt).")
@click.option("--fail-on", type=click.Choice(["opened-boundary", "opened-from-world", "opened", "any"]), default=None,
              help="Exit 1 when a row of this kind is found: a flow newly opened across a network-zone "
                   "boundary (opened-boundary), from outside the cluster to a job (opened-from-world), any "
                   "opened flow, any change. Default: exit 0.")
@config_options
@takes(DiffOptions)
def diff(opts: DiffOptions) -> None:
    """List every flow whose verdict changed since GITREF: sender, receiver, port range,
    protocol, and the deciding rule on each side.

    PATHs are read as `check` reads them (kustomization directories built with kubectl
    kustomize); without PATHs the inventory's own generated tree is compared. Without INVENTORY,
    the inventory and PATHs the configuration names (`inventory:`, `paths:`), both sides.
    Exit codes: 0 (also with changes, unless --fail-on), 1 --fail-on matched, 2 bad input.
    """
    # lazy: start-up time (the analysis loads only when a diff runs)
    from topogate.cli.output import output_format, require_writable, show
    from topogate.core.exitcodes import exit_when
    from topogate.diff import DiffError, failed, run_diff
    from topogate.diff.render import REPORT

    inventory, paths = scope_or_settings(opts.inventory, opts.paths, "diff", opts.config_file, opts.no_config)
    if opts.output:
        require_writable(((opts.output, opts.fmt),))
    try:
        result = run_diff(inventory, paths, opts.base)
    except DiffError as err:
        fail(f"topogate diff: {err}")
    outputs = ((opts.output, output_format(None, opts.output, opts.fmt)),) if opts.output else ()
    show(REPORT, result, opts.fmt, outputs=outputs, command="topogate diff")
    done(exit_when(failed(result, opts.fail_on)))


__all__ = ["diff"]
