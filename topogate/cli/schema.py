"""`topogate schema`: the inventory JSON schema, for an editor inside the user's repository.

`topogate schema -o .topogate/inventory.schema.json` writes it beside the inventories, and
`# yaml-language-server: $schema=.topogate/inventory.schema.json` at the top of an inventory
points an editor at it (the shipped copy lives inside the installed package, out of reach).
"""

from __future__ import annotations

import os
from importlib.resources import files

import click

from topogate.core.exitcodes import ExitCode


def schema_text() -> str:
    """The shipped inventory schema, as text (one home: topogate/schemas)."""
    return (files("topogate") / "schemas" / "inventory.schema.json").read_text(encoding="utf-8")


@click.command()
@click.option("-o", "--output", "output", default=None, metavar="FILE",
              help="Write the schema to FILE (whole or not at all) instead of printing it.")
def schema(output: str | None) -> None:
    """Print the inventory JSON schema (or write it to FILE with -o) for an editor.

    Exit codes: 0 written, 2 FILE cannot be written.
    """
    text = schema_text()
    if output is None:
        click.echo(text, nl=not text.endswith("\n"))
        return
    # lazy: start-up time (the writer pulls in the redaction machinery)
    from topogate.cli.output import write_output

    parent = os.path.dirname(os.path.abspath(output))
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as e:
        problem = f"cannot create {parent}: {e.strerror or e}"
    else:
        problem = write_output(output, text, "json")
    if problem:
        click.echo(f"topogate schema: {problem}", err=True)
        raise click.exceptions.Exit(int(ExitCode.BAD_INVOCATION))
    click.echo(f"wrote {output}", err=True)


__all__ = ["schema", "schema_text"]
