"""`topogate check`: placement and network policies agree, for every training job found; with
`--live`, what runs in the cluster now (topogate.cli.check_live)."""

from __future__ import annotations

from dataclasses import dataclass

import click

from topogate.cli.common import done, fail, formats
from topogate.core import progress
from topogate.core.escape import one_line


@dataclass(frozen=True)
class CheckOptions:
    inventory: str
    paths: tuple[str, ...] = ()
    rendered: str | None = None
    cluster: str | None = None
    fmt: str = "auto"
    strict: bool = False
    output: str | None = None
    output_format: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    quiet: bool = False
    verbose: bool = False
    changed_since: str | None = None

    @property
    def verbosity(self) -> int:
        return -1 if self.quiet else 1 if self.verbose else 0


@dataclass(frozen=True)
class LiveOptions:
    live: bool = False
    context: str | None = None
    kubeconfig: str | None = None
    from_file: str | None = None

    @property
    def wanted(self) -> bool:
        return bool(self.live or self.context or self.kubeconfig or self.from_file)


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rendered", type=click.Path(file_okay=False),
              help="Also check that this generated tree is exactly what `generate` writes.")
@click.option("--cluster", help="Analyse PATHs as manifests of this inventory cluster.")
@click.option("--format", "fmt", type=click.Choice(formats()), default="auto", show_default=True,
              help="auto: github under GitHub Actions, else text.")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Also write the report in this format to a file (e.g. markdown for a PR comment).")
@click.option("--output-format", type=click.Choice(formats()[1:]), default=None,
              help="Format of -o FILE. Default: by its extension (.md markdown, .sarif, .json, .txt "
                   "text), else the --format of standard output.")
@click.option("--select", "select", multiple=True, metavar="RULES",
              help="Report only these rules: IDs, ID prefixes (TG1) or names, comma-separated.")
@click.option("--ignore", "ignore", multiple=True, metavar="RULES",
              help="Do not report these rules (same forms as --select; wins over it).")
@click.option("--live", is_flag=True, help="Check what runs in the cluster now (docs/live.md).")
@click.option("--context", help="With --live: kubeconfig context.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False), help="With --live: kubeconfig file.")
@click.option("--from-file", type=click.Path(dir_okay=False),
              help="With --live: a `kubectl get nodes,pods,... -o json` file instead of the cluster.")
@click.option("-q", "--quiet", is_flag=True, help="Findings and the summary line only; no progress.")
@click.option("-v", "--verbose", is_flag=True,
              help="List every workload (by default a run of more than 20 lists the failing ones).")
@click.option("--changed-since", metavar="GITREF",
              help="Check only the clusters whose manifests changed since the merge base with "
                   "GITREF (docs/cli.md); anything unclear checks everything.")
def check(inventory: str, paths: tuple[str, ...], rendered: str | None, cluster: str | None,
          fmt: str, strict: bool, output: str | None, output_format: str | None,
          select: tuple[str, ...], ignore: tuple[str, ...], live: bool,
          context: str | None, kubeconfig: str | None, from_file: str | None, quiet: bool,
          verbose: bool, changed_since: str | None) -> None:
    """Check that placement and network policies agree, for every training job found.

    PATHs are YAML files, directories, or kustomization directories (built with kubectl
    kustomize). Without PATHs the inventory's own generated tree is checked.
    """
    opts = CheckOptions(inventory, paths, rendered, cluster, fmt, strict, output, output_format,
                        select, ignore, quiet, verbose, changed_since)
    run(opts, LiveOptions(live, context, kubeconfig, from_file))


def run(opts: CheckOptions, live: LiveOptions) -> None:
    # lazy: start-up time (the analysis and the reporters load only when a check runs)
    from topogate.check.errors import CheckInputError
    from topogate.check.run import run_check
    from topogate.check.select import select_outcome
    from topogate.cli import output
    from topogate.core import gctune

    if gctune.one_shot(click.get_current_context().find_root().command):
        gctune.hold()
    name = output.stdout_format(opts.fmt)
    out_format = output.output_format(opts.output_format, opts.output or "", name)
    if live.wanted:
        from topogate.cli.check_live import check_live  # lazy: the kubernetes client, on demand

        if opts.changed_since is not None:
            fail("topogate: --changed-since narrows a check of files; --live reads the cluster")
        check_live(opts, live, out_format)
    output.require_writable(opts.output)  # before the analysis, not after it has printed the report
    try:
        with progress.shown("topogate check", progress.wanted(name, opts.quiet)):
            outcome = run_check(opts.inventory, opts.paths, opts.rendered, opts.cluster,
                                strict=opts.strict, changed_since=opts.changed_since)
        outcome = select_outcome(outcome, opts.select, opts.ignore, opts.strict)
        if outcome.result.scope is not None and outcome.result.scope.note:
            click.echo(one_line(f"topogate: {outcome.result.scope.note}"), err=True)
    except CheckInputError as err:
        fail(f"topogate: {err}")
    appendix = _connectivity(opts, name) if "markdown" in (name, out_format if opts.output else None) else ""
    output.emit(outcome.result, name, strict=opts.strict, verbosity=opts.verbosity,
                output=opts.output, output_format=out_format, markdown_appendix=appendix)
    done(outcome.exit_code)


def _connectivity(opts: CheckOptions, name: str) -> str:
    """check --changed-since's markdown report ends with what the change opens or closes
    (topogate.diff, against the same merge base); it never changes the exit code."""
    if opts.changed_since is None:
        return ""
    from topogate.diff import DiffError, run_diff  # lazy: only a markdown --changed-since run needs it
    from topogate.diff.render import render_markdown

    title = f"Connectivity changes since {opts.changed_since}"
    try:
        with progress.shown("topogate check: connectivity diff", progress.wanted(name, opts.quiet)):
            d = run_diff(opts.inventory, opts.paths, opts.changed_since)
    except DiffError as err:
        return f"### {title}\n\nNot computed: {err}\n"
    return render_markdown(d, level=3, title=title)


__all__ = ["CheckOptions", "LiveOptions", "check", "run"]
