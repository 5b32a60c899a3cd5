"""`topogate replay`: recorded Hubble flows decided against the tree."""

from __future__ import annotations

import click

from topogate.cli.common import done, fail


@click.command()
@click.argument("flows", type=click.Path(dir_okay=False))
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text", show_default=True)
@click.option("--cluster", metavar="NAME", help="The cluster the flows were recorded in (default: the only one).")
@click.option("--suggest", is_flag=True,
              help="Print the inventory egress:/doors: entries that would admit exactly the observed-but-denied flows.")
def replay(flows: str, inventory: str, paths: tuple[str, ...], fmt: str, cluster: str | None, suggest: bool) -> None:
    """Decide every flow of FLOWS (`hubble observe -o json`) with the tree's policies: which
    flows the cluster carried would the tree deny, which it dropped would the tree allow.

    Exit codes: 0 every carried flow allowed, 1 some would be denied, 2 bad input (every bad
    line of FLOWS at FILE:line).
    """
    # lazy: start-up time (the analysis loads only when a replay runs)
    from topogate.core.escape import for_log, one_line
    from topogate.replay import ReplayError, denied_observed, render, run_replay
    from topogate.replay import suggest as suggestion

    try:
        run = run_replay(flows, inventory, paths, cluster)
    except ReplayError as err:
        for p in err.problems[:-1]:
            click.echo(one_line(f"topogate replay: {p}"), err=True)
        fail(f"topogate replay: {err.problems[-1]}")
    text = suggestion(run.result, run.inventory) if suggest else render(run.result, fmt)
    click.echo(for_log("text" if suggest else fmt, text), nl=False)
    done(1 if denied_observed(run.result) else 0)


__all__ = ["replay"]
