"""What the command modules share: how a command ends (one line on stderr, an exit code), how an
unreadable inventory ends a command, the report formats and report options (-o, --select,
--ignore, -q, -v: cli.options.ReportOptions) a command offers, and whether this
process is the command line itself."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NoReturn

import click

from topogate.core import gctune
from topogate.core.escape import one_line
from topogate.inventory.loader import InventoryError


def fail(message: str, code: int = 2, more: Sequence[str] = ()) -> NoReturn:
    """End the command: `message`, then each of `more`, on stderr (a line each, each safe for a
    CI log), exit `code`."""
    for line in (message, *more):
        click.echo(one_line(line), err=True)
    raise click.exceptions.Exit(code)


def done(code: int) -> NoReturn:
    """End the command with `code`; as the command line itself (not a test, not an embedding
    program) without freeing the heap object by object (core.gctune.exit_now)."""
    if gctune.one_shot(click.get_current_context().find_root().command):
        gctune.exit_now(code)
    raise click.exceptions.Exit(code)


def fail_inventory(err: InventoryError, summary: str | None = None) -> NoReturn:
    """Every problem of the inventory, one per line, then `summary` (by default: how many, and
    that nothing was written); exit 2."""
    for p in err.problems:
        click.echo(one_line(str(p)), err=True)
    n = len(err.problems)
    click.echo(summary or f"topogate: {n} problem{'s' if n != 1 else ''} in the inventory; nothing was written.",
               err=True)
    raise click.exceptions.Exit(2)


def inventory_arg(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """A click callback for INVENTORY: `-` is refused by name (exit 2) rather than read as a file
    called `-` ("No such file or directory")."""
    if value == "-":
        raise click.BadParameter(
            "the inventory cannot come from standard input: its bases are found relative to its "
            "file, so give its path (a PATH of `-` reads manifests from standard input)")
    return value


def formats() -> list[str]:
    from topogate.report import FORMATS  # lazy: start-up time (the reporters are not imported)

    return ["auto", *FORMATS]


def report_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """The click options of ReportOptions (cli.options), the same on every command that reports findings."""
    for opt in reversed([
        click.option("-o", "--output", type=click.Path(dir_okay=False), multiple=True,
                     help="Also write the report to this file, in the format its extension names (.md "
                          "markdown, .sarif, .json, .xml junit, .txt text); repeatable."),
        click.option("--output-format", type=click.Choice(formats()[1:]), default=None,
                     help="Format of a single -o FILE. Default: by its extension, else the --format of "
                          "standard output."),
        click.option("--select", "select", multiple=True, metavar="RULES",
                     help="Report only these rules: IDs, ID prefixes (TG1) or names, comma-separated."),
        click.option("--ignore", "ignore", multiple=True, metavar="RULES",
                     help="Do not report these rules (same forms as --select; wins over it)."),
        click.option("-q", "--quiet", is_flag=True, help="Findings and the summary line only; no progress."),
        click.option("-v", "--verbose", is_flag=True,
                     help="List every workload (by default a run of more than 20 lists the failing ones)."),
    ]):
        f = opt(f)
    return f


__all__ = ["done", "fail", "fail_inventory", "formats", "inventory_arg", "report_options"]
