"""What the command modules share: how a command ends (one line on stderr, an exit code), how an
unreadable inventory ends a command, the report formats a command offers, and whether this
process is the command line itself."""

from __future__ import annotations

from typing import NoReturn

import click

from topogate.core import gctune
from topogate.core.escape import one_line
from topogate.inventory.loader import InventoryError


def fail(message: str, code: int = 2) -> NoReturn:
    """End the command: `message` on stderr (one line, safe for a CI log), exit `code`."""
    click.echo(one_line(message), err=True)
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


__all__ = ["done", "fail", "fail_inventory", "formats", "inventory_arg"]
