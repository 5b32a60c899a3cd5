"""Command line: parse, call, exit. No logic lives here.

Exit codes (check/generate/explain/trace/rules): 0 clean, 1 findings or differences,
2 bad invocation or unreadable input. `audit egress` has its own table (see topogate.audit).
"""

from __future__ import annotations

import sys

import click

from topogate.inventory.loader import InventoryError, load_inventory


def _fail_inventory(err: InventoryError) -> None:
    for p in err.problems:
        click.echo(str(p), err=True)
    n = len(err.problems)
    click.echo(f"topogate: {n} problem{'s' if n != 1 else ''} in the inventory; nothing was written.",
               err=True)
    sys.exit(2)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="topogate")
def main() -> None:
    """topogate: one map of zones, pools and network doors for distributed training jobs."""


@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.option("-o", "--out", "out", required=True, type=click.Path(file_okay=False),
              help="Directory of the generated GitOps tree.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 and list the files that differ from OUT.")
def generate(inventory: str, out: str, check_only: bool) -> None:
    """Generate CiliumNetworkPolicies and Kustomize overlays from INVENTORY into OUT."""
    from topogate import writer
    from topogate.generators import render_tree

    try:
        inv = load_inventory(inventory)
    except InventoryError as err:
        _fail_inventory(err)
        return
    files = render_tree(inv, out)
    if check_only:
        diffs = writer.diff_tree(out, files)
        if diffs:
            click.echo(f"{out} is not what `topogate generate` would write:")
            for status, path in diffs:
                click.echo(f"  {status:8} {path}")
            click.echo(f"Run: topogate generate {inventory} -o {out}")
            sys.exit(1)
        click.echo(f"{out} is up to date ({len(files)} files).")
        return
    try:
        writer.write_tree(out, files)
    except writer.WriteError as err:
        click.echo(f"topogate: {err}", err=True)
        sys.exit(2)
    from topogate.summary import summarise

    click.echo(summarise(inv, files, out))


# --- check / explain / rules commands (analysis) ---


# --- trace command ---


# --- audit commands ---


if __name__ == "__main__":  # pragma: no cover
    main()
