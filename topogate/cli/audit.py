"""`topogate audit egress`: the nightly cost audit's command (click only here)."""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import re
import signal
import threading
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

import click

from topogate.cli.common import fail_inventory
from topogate.cli.options import AuditOptions, takes
from topogate.inventory.loader import InventoryError
from topogate.inventory.model import Inventory
from topogate.sources.inventory import load_inventory

PLACEMENT_RULES = ("TG102", "TG111")


def _may_split(inventory: str, paths: tuple[str, ...],
               causes: dict[str, str] | None = None) -> dict[str, list[str]]:
    """Cluster name -> jobs the analysis says may split across zones (the expected cause).

    With PATHs the deployed manifests are analysed; without, the tree `generate` would write,
    which is what a GitOps repo built from this inventory deploys. Raises when the analysis
    cannot run (a base missing or not building, kubectl missing, no temp dir); the caller turns
    that into "cause not analysed", never into a failed audit.
    """
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.check.run import run_check

    outcome = run_check(inventory, paths)
    inv = outcome.inventory
    if inv is None:
        # run_check reports an unloadable inventory as findings, not as an exception: an empty
        # map here would wrongly say "no job can split".
        problems = [f"{f.file}:{f.line}: {f.message}" for f in outcome.result.findings]
        raise RuntimeError("; ".join(problems[:3]) + (f" (+{len(problems) - 3} more)"
                                                       if len(problems) > 3 else "")
                           or "the inventory could not be analysed")
    if causes is not None:
        # the placement findings that explain a job's inter-AZ bytes (--flow-logs)
        for f in sorted(outcome.result.findings):
            if f.rule in PLACEMENT_RULES:
                first = f.message.split("). ", 1)[0] + (")" if "). " in f.message else "")
                line = f"{f.rule} {f.name}: {first}"
                causes[f.object] = (causes[f.object] + "; " + line) if f.object in causes else line
    out: dict[str, list[str]] = {c.name: [] for c in inv.clusters}
    for job in outcome.result.jobs:
        if not job.colocated:
            out.setdefault(job.cluster, []).append(job.object)
    return out


def _audit_preflight(inv: Inventory, factory: Callable[[], Any]) -> Callable[[], Any]:
    """Configuration before the analysis, which takes minutes on a large repository: cost tags,
    then the client (region, endpoint, profile), then whether any credentials resolve. Returns
    a factory handing out the client made here. Raises AuditError."""
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit.egress import plan_queries
    from topogate.audit.errors import classify

    if not plan_queries(inv):
        return factory
    try:
        client = factory()
        # lazy: boto3 is slow to import; only the audit needs it
        import boto3
        from botocore.exceptions import NoCredentialsError

        if boto3.session.Session().get_credentials() is None:
            raise NoCredentialsError()
    except Exception as exc:  # noqa: BLE001 - mapped to the audit's exit codes
        raise classify(exc, requests=0) from None
    return lambda: client


def _read_flows(inv: Inventory, opts: AuditOptions, window: tuple[dt.date, dt.date]) -> Any:
    """The snapshot's addresses and every flow-log record summed, before any paid request."""
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit.egress import aws_clusters
    from topogate.audit.errors import InvocationError, TemporaryError
    from topogate.audit.flows import read_records
    from topogate.live.addresses import address_book
    from topogate.live.client import Target
    from topogate.live.commands import Source, pick_cluster
    from topogate.live.errors import LiveError

    aws = aws_clusters(inv)
    cluster_name = opts.cluster_name
    try:
        if cluster_name is None and len(aws) == 1:
            cluster_name = aws[0].name
        cluster = pick_cluster(inv, cluster_name)
        snapshot = Source(opts.from_file, Target(opts.kubeconfig, opts.context, 30.0, 500)).read(workloads=True)
    except LiveError as err:
        cls = TemporaryError if int(err.code) == 75 else InvocationError
        failure = cls(str(err.args[0]))
        failure.code = err.code
        raise failure from None
    if cluster.provider != "aws":
        raise InvocationError(f"--cluster {cluster.name} is on {cluster.provider}: VPC Flow Logs "
                              "are AWS's")
    book = address_book(snapshot, inv, cluster)
    tally = read_records(book, opts.flow_logs, window[0], window[1], opts.flow_log_format,
                         max_attempts=opts.max_attempts)
    return cluster.name, tally


def _attach_flows(result: Any, flows: Any, causes: dict[str, str], job_budget: float | None) -> Any:
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit.flows import flow_audit

    name, tally = flows
    cluster = next(c for c in result.clusters if c.name == name)
    fa = flow_audit(tally, cluster, causes, None if job_budget is None else Decimal(str(job_budget)))
    return dataclasses.replace(result, flows=fa)


def _audit_date(ctx: click.Context, param: click.Parameter, value: str | None) -> object:

    if value is None:
        return None
    # date.fromisoformat (3.11+) also takes 20261124 and week dates (2026-W48-2): only the
    # form the API and the docs use is accepted, so a typo cannot select an unexpected day.
    if not re.fullmatch(r"[0-9]{4}-[0-9]{2}-[0-9]{2}", value):
        raise click.BadParameter(f"{value!r} is not a date in the form YYYY-MM-DD")
    try:
        return dt.date.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a date (YYYY-MM-DD)") from None


@click.group()
def audit() -> None:
    """Audits against the bill: what the zones actually cost.

    Exit codes (`audit egress`): 0 within budget, 1 over budget, 2 bad invocation, 75
    temporary, 77 access denied, 78 configuration.
    """


@audit.command("egress")
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option("--start", callback=_audit_date, metavar="YYYY-MM-DD",
              help="First day (inclusive). Default: five days ago.")
@click.option("--end", callback=_audit_date, metavar="YYYY-MM-DD",
              help="Last day, exclusive as in the Cost Explorer API; not after today. Default: "
                   "two days ago (Cost Explorer data lags up to 48 h).")
@click.option("--format", "fmt", type=click.Choice(["text", "json", "markdown"]), default="text",
              show_default=True)
@click.option("--verify-usage-types", is_flag=True,
              help="Confirm the usage type names with GetDimensionValues first (2 extra requests).")
@click.option("--max-attempts", type=click.IntRange(1, 10), default=4, show_default=True,
              help="Attempts per request (botocore standard retry mode).")
@click.option("--flow-logs", "flow_logs", multiple=True, metavar="SOURCE",
              help="VPC Flow Logs to attribute the inter-AZ bytes to training jobs: "
                   "s3://BUCKET/PREFIX, logs:LOG_GROUP (CloudWatch Logs) or a local file or "
                   "directory; repeatable. Needs the pods and nodes: live, or --from-file.")
@click.option("--flow-log-format", metavar="LOGFORMAT",
              help="The flow log's LogFormat, for CloudWatch Logs (S3 objects name their fields "
                   "in their header line). Default: the format docs/audit.md gives.")
@click.option("--from-file", "from_file", type=click.Path(dir_okay=False),
              help="With --flow-logs: a `kubectl get nodes,pods,... -A -o json` file instead of "
                   "the cluster.")
@click.option("--context", help="With --flow-logs: kubeconfig context of the cluster.")
@click.option("--kubeconfig", type=click.Path(dir_okay=False),
              help="With --flow-logs: kubeconfig file.")
@click.option("--cluster", "cluster_name", help="With --flow-logs: the inventory cluster the "
                                                "snapshot shows (default: the only AWS one).")
@click.option("--deadline", type=click.FloatRange(0.1, 86400), default=600, show_default=True,
              metavar="SECONDS",
              help="Total time for the whole audit; past it, exit 75 (botocore's timeout is per "
                   "read: a body that trickles in never trips it). Keep it under the scheduler's "
                   "own deadline.")
@click.option("--job-budget-usd-per-day", type=click.FloatRange(0), metavar="USD",
              help="With --flow-logs: exit 1 when a job's measured inter-AZ cost of a day is over it.")
@takes(AuditOptions)
def audit_egress(opts: AuditOptions) -> None:
    """Inter-AZ data transfer cost per cluster from AWS Cost Explorer, against the budget.

    PATHs are manifests to analyse for jobs that may split across zones (the expected cause).
    If that analysis cannot run, one warning goes to stderr and the cost is still audited.
    Exit codes: 0 within budget, 1 over budget, 2 bad invocation, 75 temporary (run again),
    77 access denied, 78 configuration (credentials, region, endpoint, cost tag, usage types).
    """

    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit.errors import DeadlineExceeded, deadline_error, register_environment_secrets

    register_environment_secrets()
    try:
        with _deadline(opts.deadline) as disarm:
            _audit_egress(opts, disarm)
    except DeadlineExceeded:  # while the inventory was read: no request made yet
        click.echo(deadline_error(opts.deadline, 0).line(), err=True)
        raise click.exceptions.Exit(75) from None


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[Callable[[], None]]:
    """Raise DeadlineExceeded in the main thread after `seconds`, wherever it is blocked.

    A timer signal interrupts a socket read (Python retries the read after running the
    handler, and the handler raises); off the main thread signals cannot be set and the
    per-read timeouts are all there is."""
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit.errors import DeadlineExceeded

    def disarm() -> None:
        signal.setitimer(signal.ITIMER_REAL, 0)

    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return

    def expire(signum: int, frame: object) -> None:
        raise DeadlineExceeded(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield disarm
    finally:
        disarm()
        signal.signal(signal.SIGALRM, previous)


def _audit_egress(opts: AuditOptions, disarm: Callable[[], None]) -> None:
    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit import AuditError, default_client_factory, resolve_window, run_audit
    from topogate.audit.errors import DeadlineExceeded, deadline_error, scrub
    from topogate.audit.report import REPORT
    from topogate.cli.output import show
    from topogate.core.escape import line as safe_line

    flow_opts = (opts.from_file, opts.context, opts.kubeconfig, opts.cluster_name, opts.flow_log_format,
                 opts.job_budget_usd_per_day)
    if not opts.flow_logs and any(o is not None for o in flow_opts):
        raise click.UsageError("--from-file, --context, --kubeconfig, --cluster, "
                               "--flow-log-format and --job-budget-usd-per-day belong to --flow-logs")
    if opts.from_file and (opts.context or opts.kubeconfig):
        raise click.UsageError("--from-file reads no cluster: drop --context/--kubeconfig")
    try:
        # The cost audit needs only the clusters: where only the inventory file is mounted
        # (the in-cluster CronJob) the workloads' bases are absent, and that is fine.
        inv = load_inventory(opts.inventory, read_bases=False)
    except InventoryError as err:
        fail_inventory(err)
    except Exception as err:  # noqa: BLE001 - a traceback would exit 1, read as "over budget"
        click.echo(safe_line(f"topogate audit: internal error reading the inventory "
                             f"({type(err).__name__}: {scrub(str(err))}); please report it "
                             "[exit 70]"), err=True)
        raise click.exceptions.Exit(70) from None
    try:
        window = resolve_window(opts.start, opts.end, dt.date.today())
        factory = _audit_preflight(inv, default_client_factory(opts.max_attempts))
        flows = None
        if opts.flow_logs:
            flows = _read_flows(inv, opts, window)
        may_split: dict[str, list[str]] | None
        cause_error: str | None = None
        causes: dict[str, str] = {}
        try:
            may_split = _may_split(opts.inventory, opts.paths, causes)
        except Exception as err:  # noqa: BLE001 - the cause is optional, the cost is not
            may_split = None
            cause_error = scrub(str(err) or type(err).__name__)
        result = run_audit(inv, window[0], window[1], factory,
                           may_split, verify=opts.verify_usage_types, analysis_error=cause_error)
        if flows is not None:
            result = _attach_flows(result, flows, causes, opts.job_budget_usd_per_day)
        disarm()  # the verdict is made: the report is printed whole
    except DeadlineExceeded:
        # outside the Cost Explorer queries (the analysis, the flow logs): none was answered
        late = deadline_error(opts.deadline, 0)
        click.echo(safe_line(late.line()), err=True)
        raise click.exceptions.Exit(int(late.code)) from None
    except AuditError as err:
        click.echo(safe_line(err.line()), err=True)
        raise click.exceptions.Exit(int(err.code)) from None
    except Exception as err:  # noqa: BLE001 - one line, never a traceback, in a nightly job
        click.echo(safe_line(f"topogate audit: internal error ({type(err).__name__}: "
                             f"{scrub(str(err))}); please report it [exit 70]"), err=True)
        raise click.exceptions.Exit(70) from None
    if cause_error is not None:
        # After the audit succeeded, so a failed audit still prints exactly one line.
        click.echo(safe_line(f"topogate audit: cause not analysed: {cause_error}"), err=True)
    show(REPORT, result, opts.fmt)
    raise click.exceptions.Exit(result.exit_code)
