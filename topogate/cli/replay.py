"""`topogate replay`: recorded Hubble flows decided against the tree."""

from __future__ import annotations

import click

from topogate.cli.common import done, fail, inventory_arg
from topogate.cli.config import config_options, scope_or_settings
from topogate.cli.options import ReplayOptions, takes


@click.command()
@click.argument("flows", type=click.Path(dir_okay=False))
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg, required=False)
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--cluster", metavar="NAME", help="The cluster the flows were recorded in (default: the only one).")
@click.option("--suggest", is_flag=True,
              help="Print the inventory egress:/doors: entries that would admit exactly the observed-but-denied flows.")
@config_options
@takes(ReplayOptions)
def replay(opts: ReplayOptions) -> None:
    """Decide every flow of FLOWS (`hubble observe -o json`) with the tree's policies: which
    flows the cluster carried would the tree deny, which it dropped would the tree allow.

    Without INVENTORY, the inventory and PATHs the configuration names (`inventory:`, `paths:`),
    as `check` reads them.

    Exit codes: 0 every carried flow allowed, 1 some would be denied, 2 bad input (every bad
    line of FLOWS at FILE:line).
    """
    # lazy: start-up time (the analysis loads only when a replay runs)
    from topogate.cli.output import show
    from topogate.core.escape import one_line
    from topogate.core.exitcodes import exit_when
    from topogate.replay import REPORT, ReplayError, denied_observed, run_replay

    inventory, paths = scope_or_settings(opts.inventory, opts.paths, "replay FLOWS", opts.config_file, opts.no_config)
    try:
        run = run_replay(opts.flows, inventory, paths, opts.cluster)
    except ReplayError as err:
        for p in err.problems[:-1]:
            click.echo(one_line(f"topogate replay: {p}"), err=True)
        fail(f"topogate replay: {err.problems[-1]}")
    show(REPORT, run, "suggest" if opts.suggest else opts.fmt)
    done(exit_when(bool(denied_observed(run.result))))


__all__ = ["replay"]
