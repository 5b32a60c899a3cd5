"""`topogate explain`: the map of one job, where each group can land and why, every flow."""

from __future__ import annotations

import click

from topogate.cli.common import fail, inventory_arg


@click.command()
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg)
@click.argument("workload")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--cluster", help="Analyse PATHs as manifests of this inventory cluster.")
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "json"]), default="text",
              show_default=True)
def explain(inventory: str, workload: str, paths: tuple[str, ...], cluster: str | None, fmt: str) -> None:
    """Print the map of one job: where each group can land and why, and every required flow.

    WORKLOAD is `name`, `namespace/name` or `Kind/namespace/name`.

    Exit codes: 0 the job is colocated, schedulable and nothing blocks it, 1 it is not (or an
    error finding is on it), 2 bad invocation, unreadable input, or no such job.
    """
    # lazy: start-up time (the analysis loads only when a command runs)
    from topogate.check.errors import CheckInputError
    from topogate.check.run import run_check
    from topogate.cli.output import show
    from topogate.core.escape import one_line
    from topogate.core.exitcodes import exit_when, fails
    from topogate.report.explain import REPORT, Explained

    try:
        outcome = run_check(inventory, paths, None, cluster)
    except CheckInputError as err:
        fail(f"topogate: {err.lines[0]}", more=err.lines[1:])
    if outcome.inventory is None:
        for f in outcome.result.findings:
            click.echo(one_line(f"{f.file}:{f.line}:{f.column}: {f.message}"), err=True)
        raise click.exceptions.Exit(2)
    matches = [j for j in outcome.result.jobs
               if workload in (j.name, f"{j.namespace}/{j.name}", j.object)]
    if len(matches) != 1:
        known = ", ".join(j.object for j in outcome.result.jobs) or "none"
        what = "no job" if not matches else "several jobs"
        fail(f"topogate: {what} named '{workload}' found; jobs: {known}")
    job = matches[0]
    show(REPORT, Explained(job, outcome.inventory), fmt)
    failing = any(f.object == job.object and fails(f.severity, strict=False) for f in outcome.result.findings)
    raise click.exceptions.Exit(exit_when(failing or bool(job.blocked) or not job.colocated or not job.schedulable))


__all__ = ["explain"]
