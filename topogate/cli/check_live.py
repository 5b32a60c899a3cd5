"""`topogate check --live`: the branch the `check` command hands over to (click only here)."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

from topogate.inventory.loader import InventoryError
from topogate.live.client import Target
from topogate.live.commands import LiveOutcome, Source, run_live_check
from topogate.live.errors import LiveError


def print_report(live: LiveOutcome, fmt: str, strict: bool, output: str | None = None,
                 output_format: str = "markdown") -> None:
    """The report; the header says what was compared (stdout for text, else stderr). With
    `output`, the report in `output_format` is also written there (a PR comment, an artifact)."""
    from topogate.core.escape import for_log, lines
    from topogate.report import get_reporter, resolve_format
    from topogate.report.output import write_report

    name = resolve_format(fmt, os.environ, sys.stdout.isatty())
    click.echo(lines(live.header), err=name != "text")
    if name == "text":
        click.echo()
    click.echo(for_log(name, get_reporter(name, strict=strict).render(live.outcome.result)), nl=False)
    if output:
        problem = write_report(output, get_reporter(output_format, strict=strict).render(live.outcome.result))
        if problem:
            click.echo(lines(f"topogate: -o {output}: {problem}"), err=True)
            sys.exit(2)


def check_live(inventory: str, paths: tuple[str, ...], rendered: str | None, cluster: str | None,
               fmt: str, strict: bool, live: bool, context: str | None, kubeconfig: str | None,
               from_file: str | None, output: str | None = None,
               output_format: str = "markdown") -> NoReturn:
    """Never returns. Exits: 0 clean, 1 findings, 2 bad invocation, 75/77/78 as `audit egress`."""
    if not live:
        raise click.UsageError("--context, --kubeconfig and --from-file belong to --live")
    if paths or rendered:
        raise click.UsageError("--live checks the cluster: drop the PATHs and --rendered")
    if from_file and (context or kubeconfig):
        raise click.UsageError("--from-file reads no cluster: drop --context/--kubeconfig")
    try:
        outcome = run_live_check(inventory, Source(from_file, Target(kubeconfig, context)),
                                 cluster=cluster, strict=strict)
    except InventoryError as err:
        for p in err.problems:
            click.echo(str(p), err=True)
        click.echo(f"topogate: {len(err.problems)} problem(s) in the inventory.", err=True)
        sys.exit(2)
    except LiveError as err:
        click.echo(err.line("check --live"), err=True)
        sys.exit(int(err.code))
    print_report(outcome, fmt, strict, output, output_format)
    sys.exit(outcome.outcome.exit_code)
