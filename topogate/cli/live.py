"""`topogate import` and `topogate drift`: the live-cluster commands (click only here; the
kubernetes client is imported only when a command runs)."""

from __future__ import annotations

from collections.abc import Callable

import click

from topogate.cli.common import fail_inventory, formats, inventory_arg, report_options
from topogate.cli.options import DriftOptions, ImportOptions, SourceOptions, takes
from topogate.core.labels import DEFAULT_ZONE_LABEL
from topogate.inventory.loader import InventoryError


def _live_source(f: Callable[..., None]) -> Callable[..., None]:
    """The options every live command shares: which cluster, or a file instead."""
    for opt in reversed([
        click.option("--context", help="kubeconfig context (default: the current context)."),
        click.option("--kubeconfig", type=click.Path(dir_okay=False),
                     help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, else in-cluster)."),
        click.option("--from-file", "from_file", type=click.Path(dir_okay=False),
                     help="Read a `kubectl get ... -o json` file instead of the cluster."),
        click.option("--chunk-size", type=click.IntRange(1, 10000), default=500, show_default=True,
                     help="Objects per list request (limit/continue paging)."),
        click.option("--request-timeout", type=click.FloatRange(0.1, 600), default=30.0,
                     show_default=True, help="Seconds to connect and to wait for each response."),
    ]):
        f = opt(f)
    return f


def _source(o: SourceOptions) -> object:
    # lazy: the kubernetes client loads only when a live command runs
    from topogate.live.client import Target
    from topogate.live.commands import Source

    if o.from_file and (o.context or o.kubeconfig):
        raise click.UsageError("--from-file reads no cluster: drop --context/--kubeconfig")
    return Source(o.from_file, Target(o.kubeconfig, o.context, o.request_timeout, o.chunk_size))


@click.command("import")
@_live_source
@click.option("-o", "--out", required=True, type=click.Path(dir_okay=False),
              help="The inventory file to write.")
@click.option("--cluster-name", help="Name of the cluster in the inventory (default: --context, "
                                     "else the file's name, else 'imported').")
@click.option("--pool-label", metavar="KEY", help="The node label that names pools (default: EKS, "
                                                  "Karpenter, GKE and AKS node-group labels).")
@click.option("--zone-label", default=DEFAULT_ZONE_LABEL, show_default=True)
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
@takes(ImportOptions)
def import_(opts: ImportOptions) -> None:
    """Write an inventory skeleton (zones, pools, taints, labels, GPUs) from a cluster's nodes.

    Exit codes: 0 written, 2 bad invocation or input (OUT exists without --force), 75 temporary
    (API unreachable, 5xx, timeouts), 77 access denied (RBAC), 78 configuration (kubeconfig,
    rejected credentials). Read-only: see examples/rbac-topogate-live.yaml.
    """
    # lazy: the kubernetes client loads only when a live command runs
    from topogate.live.commands import Source, run_import
    from topogate.live.errors import LiveError

    source = _source(opts.source)
    assert isinstance(source, Source)
    try:
        outcome = run_import(source, opts.out, cluster=opts.cluster_name, pool_label=opts.pool_label,
                             zone_label=opts.zone_label, force=opts.force)
    except LiveError as err:
        click.echo(err.line("import"), err=True)
        raise click.exceptions.Exit(int(err.code)) from None
    click.echo("\n".join(outcome.lines))
    raise click.exceptions.Exit(outcome.exit_code)


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg)
@_live_source
@click.option("--cluster", help="The inventory cluster this context or file shows (default: the only one).")
@click.option("--pool-label", metavar="KEY", help="The node label that names pools (default: EKS, "
                                                  "Karpenter, GKE and AKS node-group labels).")
@click.option("--format", "fmt", type=click.Choice(formats()), default="auto", show_default=True,
              help="auto: github under GitHub Actions, else text.")
@click.option("--strict", is_flag=True, help="Warnings fail too.")
@report_options
@takes(DriftOptions)
def drift(opts: DriftOptions) -> None:
    """Compare INVENTORY's zones and pools with the cluster's nodes (rules TG201-TG205).

    Exit codes: 0 no drift, 1 drift, 2 bad invocation or input, 75 temporary, 77 access
    denied, 78 configuration: the table of `audit egress`.
    """
    # lazy: the kubernetes client loads only when a live command runs
    from topogate.cli.output import output_files, require_writable, stdout_format  # lazy: start-up time
    from topogate.live.commands import Source, run_drift
    from topogate.live.errors import LiveError

    outputs = output_files(opts.report.output, opts.report.output_format, stdout_format(opts.fmt))
    require_writable(outputs)  # before the cluster is read
    source = _source(opts.source)
    assert isinstance(source, Source)
    try:
        live = run_drift(opts.inventory, source, cluster=opts.cluster, pool_label=opts.pool_label, strict=opts.strict)
    except InventoryError as err:
        fail_inventory(err)
    except LiveError as err:
        click.echo(err.line("drift"), err=True)
        raise click.exceptions.Exit(int(err.code)) from None
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.cli.check_live import print_report, selected

    live = selected(live, opts.report.select, opts.report.ignore, opts.strict)
    print_report(live, opts.fmt, opts.strict, outputs, opts.report.verbosity)
    raise click.exceptions.Exit(live.outcome.exit_code)
