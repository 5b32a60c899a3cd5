"""`topogate trace`: may SRC reach DST? The verdict and, per side, the rule that decides it."""

from __future__ import annotations

import click

from topogate.cli.common import fail, inventory_arg
from topogate.cli.options import TraceOptions, takes


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--from", "src", required=True, metavar="SRC",
              help="ns/Kind/name[/group], ns:key=value,..., an entity (world, host, kube-apiserver, "
                   "cluster, remote-node), a CIDR/IP, or fqdn:NAME.")
@click.option("--to", "dst", required=True, metavar="DST", help="Same forms as --from.")
@click.option("--port", metavar="P[/TCP|UDP|SCTP]",
              help="One port (or a container-port name of DST). Default: every TCP and UDP port class.")
@click.option("--inventory", type=click.Path(dir_okay=False), callback=inventory_arg,
              help="Inventory: cluster name and zones of known workloads, and their bases.")
@click.option("--cluster", help="Trace within this cluster: policies other clusters own do not apply "
                                "(default: the cluster the workloads belong to).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@takes(TraceOptions)
def trace(opts: TraceOptions) -> None:
    """May SRC reach DST? The verdict and, per side, the policy line that decides it.

    PATHs are YAML files, directories or kustomization directories holding the workloads,
    CiliumNetworkPolicies, CiliumClusterwideNetworkPolicies, NetworkPolicies and Namespaces.
    Exit codes: 0 allowed (every traced port class), 1 denied (any class), 2 bad input.
    """
    # lazy: start-up time (the evaluator loads only when a trace runs)
    from topogate.cli.output import show
    from topogate.trace import TraceError, run_trace
    from topogate.trace.text import REPORT

    try:
        result = run_trace(opts.paths, opts.src, opts.dst, opts.port, opts.inventory, opts.cluster)
    except TraceError as err:
        fail(f"topogate trace: {err}")
    show(REPORT, result, opts.fmt)
    raise click.exceptions.Exit(result.exit_code)


__all__ = ["trace"]
