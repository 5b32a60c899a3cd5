"""`topogate generate`: render the GitOps tree from the inventory, or compare it (`--check`)."""

from __future__ import annotations

import dataclasses
import os

import click

from topogate.cli.common import done, fail, fail_inventory, inventory_arg
from topogate.cli.config import config_options, load_settings, settings_inventory
from topogate.cli.options import GenerateOptions, takes
from topogate.core import gctune, progress
from topogate.core.escape import lines, one_line
from topogate.core.exitcodes import exit_when
from topogate.inventory.loader import InventoryError


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg, required=False)
@click.option("-o", "--out", "out", required=True, type=click.Path(file_okay=False),
              help="Directory of the generated GitOps tree.")
@click.option("--check", "check_only", is_flag=True,
              help="Write nothing; exit 1 and list the files that differ from OUT.")
@click.option("--diff", "show_diff", is_flag=True,
              help="Also print a unified diff of each file (committed -> generated); implies --check.")
@click.option("-q", "--quiet", is_flag=True,
              help="No progress and no summary; --check prints only what differs.")
@config_options
@takes(GenerateOptions)
def generate(opts: GenerateOptions) -> None:
    """Generate CiliumNetworkPolicies and Kustomize overlays from INVENTORY into OUT.

    Without INVENTORY, the one the configuration names (`inventory:` in .topogate.yaml or
    pyproject.toml's [tool.topogate]).

    Exit codes: 0 written (--check: up to date), 1 (--check) OUT differs from what would be
    written, 2 bad invocation or invalid inventory (every problem listed; nothing written).
    """
    # --diff shows what --check found: asking for the diff is asking for the comparison (the
    # tree is never written with it).
    inventory = opts.inventory or settings_inventory(load_settings(opts.config_file, opts.no_config), "generate")
    run(dataclasses.replace(opts, inventory=inventory, check_only=opts.check_only or opts.show_diff))


def run(opts: GenerateOptions) -> None:
    # The model is built and written in one go and freed at exit: a collection in between would
    # walk all of it (core.gctune).
    with gctune.paused():
        _run(opts)


def _run(opts: GenerateOptions) -> None:
    # lazy: start-up time (generators, the writer and the kustomize builder load on first use)
    from topogate.generators import render_tree
    from topogate.sources.inventory import load_inventory
    from topogate.tree import writer

    try:
        with progress.shown("topogate generate", progress.wanted(quiet=opts.quiet)):
            inv = load_inventory(opts.inventory)
            progress.note("rendering")
            files = render_tree(inv, os.path.realpath(opts.out))
    except InventoryError as err:
        fail_inventory(err)
    if opts.check_only:
        _compare(opts, files)
    try:
        with progress.shown(f"topogate generate: writing {len(files):,} files", progress.wanted(quiet=opts.quiet)):
            writer.write_tree(opts.out, files)
    except writer.WriteError as err:
        fail(f"topogate: {err}")
    from topogate.tree.summary import summarise  # lazy: start-up time

    if not opts.quiet:
        click.echo(summarise(inv, files, opts.out))
    done(0)  # the written tree's bytes and the model need not be freed one by one


def _compare(opts: GenerateOptions, files: dict[str, bytes]) -> None:
    """`--check`: exit 1 listing what differs from OUT, else exit 0 saying it is up to date."""
    from topogate.tree import writer  # lazy: start-up time
    from topogate.tree.treediff import file_diffs

    diffs = writer.diff_tree(opts.out, files)
    if not diffs:
        if not opts.quiet:
            click.echo(f"{one_line(opts.out)} is up to date ({len(files)} file{'s' if len(files) != 1 else ''}).")
        raise click.exceptions.Exit(0)
    # File names and paths come from the pull request: one_line keeps them from emitting
    # workflow commands into the CI log.
    click.echo(f"{one_line(opts.out)} is not what `topogate generate` would write:")
    for status, path in diffs:
        click.echo(f"  {status:8} {one_line(path)}")
    if opts.show_diff:
        click.echo("")
        click.echo(lines("".join(d.diff for d in file_diffs(opts.out, files, limit=None))), nl=False)
    foreign = writer.foreign_files(opts.out)
    if foreign:
        # generate refuses to replace a tree holding files it did not write
        click.echo("First move or delete what topogate did not generate: "
                   + ", ".join(one_line(f) for f in foreign))
    click.echo(f"Run: topogate generate {one_line(opts.inventory)} -o {one_line(opts.out)}")
    raise click.exceptions.Exit(exit_when(bool(diffs)))


__all__ = ["generate", "run"]
