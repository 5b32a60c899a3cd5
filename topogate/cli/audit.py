"""`topogate audit egress`: the nightly cost audit's command (click only here)."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from typing import Any

import click

from topogate.cli.common import fail_inventory
from topogate.inventory.loader import InventoryError
from topogate.inventory.model import Inventory
from topogate.sources.inventory import load_inventory


def _may_split(inventory: str, paths: tuple[str, ...]) -> dict[str, list[str]]:
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
def audit_egress(inventory: str, paths: tuple[str, ...], start: object, end: object, fmt: str,
                 verify_usage_types: bool, max_attempts: int) -> None:
    """Inter-AZ data transfer cost per cluster from AWS Cost Explorer, against the budget.

    PATHs are manifests to analyse for jobs that may split across zones (the expected cause).
    If that analysis cannot run, one warning goes to stderr and the cost is still audited.
    Exit codes: 0 within budget, 1 over budget, 2 bad invocation, 75 temporary (run again),
    77 access denied, 78 configuration (credentials, region, endpoint, cost tag, usage types).
    """

    # lazy: start-up time: a command's own modules load only when it runs
    from topogate.audit import AuditError, default_client_factory, resolve_window, run_audit
    from topogate.audit.errors import register_environment_secrets, scrub
    from topogate.audit.report import render
    from topogate.core.escape import line as safe_line

    register_environment_secrets()
    try:
        # The cost audit needs only the clusters: where only the inventory file is mounted
        # (the in-cluster CronJob) the workloads' bases are absent, and that is fine.
        inv = load_inventory(inventory, read_bases=False)
    except InventoryError as err:
        fail_inventory(err)
    except Exception as err:  # noqa: BLE001 - a traceback would exit 1, read as "over budget"
        click.echo(safe_line(f"topogate audit: internal error reading the inventory "
                             f"({type(err).__name__}: {scrub(str(err))}); please report it "
                             "[exit 70]"), err=True)
        raise click.exceptions.Exit(70) from None
    try:
        assert start is None or isinstance(start, dt.date)
        assert end is None or isinstance(end, dt.date)
        window = resolve_window(start, end, dt.date.today())
        factory = _audit_preflight(inv, default_client_factory(max_attempts))
        may_split: dict[str, list[str]] | None
        cause_error: str | None = None
        try:
            may_split = _may_split(inventory, paths)
        except Exception as err:  # noqa: BLE001 - the cause is optional, the cost is not
            may_split = None
            cause_error = scrub(str(err) or type(err).__name__)
        result = run_audit(inv, window[0], window[1], factory,
                           may_split, verify=verify_usage_types, analysis_error=cause_error)
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
    click.echo(render(result, fmt), nl=False)
    raise click.exceptions.Exit(result.exit_code)
