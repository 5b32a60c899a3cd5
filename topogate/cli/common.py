"""What the command modules share: how an unreadable inventory ends a command, and the
report formats a command offers."""

from __future__ import annotations

import sys

import click

from topogate.core.escape import one_line
from topogate.inventory.loader import InventoryError


def fail_inventory(err: InventoryError) -> None:
    for p in err.problems:
        click.echo(one_line(str(p)), err=True)
    n = len(err.problems)
    click.echo(f"topogate: {n} problem{'s' if n != 1 else ''} in the inventory; nothing was written.",
               err=True)
    sys.exit(2)


def formats() -> list[str]:
    from topogate.report import FORMATS

    return ["auto", *FORMATS]
