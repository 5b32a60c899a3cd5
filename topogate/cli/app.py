"""Command line: parse, call, exit. No logic lives here.

Exit codes (check/generate/explain/trace/rules): 0 clean, 1 findings or differences,
2 bad invocation or unreadable input. `audit egress` has its own table (see topogate.audit).
"""

from __future__ import annotations

import os
import sys

import click

from topogate.cli.audit import audit
from topogate.cli.common import fail_inventory as _fail_inventory
from topogate.cli.common import formats as _formats
from topogate.cli.live import drift, import_
from topogate.core import progress
from topogate.core.escape import one_line
from topogate.inventory.loader import InventoryError, load_inventory


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
@click.option("--diff", "show_diff", is_flag=True,
              help="With --check: also print a unified diff of each file (committed -> generated).")
def generate(inventory: str, out: str, check_only: bool, show_diff: bool) -> None:
    """Generate CiliumNetworkPolicies and Kustomize overlays from INVENTORY into OUT."""
    from topogate.core import gctune
    from topogate.core.gctune import bulk
    from topogate.generators import render_tree
    from topogate.tree import writer

    if show_diff and not check_only:
        click.echo("topogate: --diff goes with --check (generate writes the tree otherwise)", err=True)
        sys.exit(2)
    try:
        with progress.shown("topogate generate", progress.wanted()), bulk():
            inv = load_inventory(inventory)
            progress.note("rendering")
            files = render_tree(inv, os.path.realpath(out))
    except InventoryError as err:
        _fail_inventory(err)
        return
    if check_only:
        diffs = writer.diff_tree(out, files)
        if diffs:
            # File names and paths come from the pull request: one_line keeps them from
            # emitting workflow commands into the CI log (issue 10 item 4).
            click.echo(f"{one_line(out)} is not what `topogate generate` would write:")
            for status, path in diffs:
                click.echo(f"  {status:8} {one_line(path)}")
            if show_diff:
                from topogate.core.escape import lines
                from topogate.tree.treediff import file_diffs

                click.echo("")
                click.echo(lines("".join(d.diff for d in file_diffs(out, files, limit=None))), nl=False)
            foreign = writer.foreign_files(out)
            if foreign:
                # generate refuses to replace a tree holding files it did not write
                click.echo("First move or delete what topogate did not generate: "
                           + ", ".join(one_line(f) for f in foreign))
            click.echo(f"Run: topogate generate {one_line(inventory)} -o {one_line(out)}")
            sys.exit(1)
        click.echo(f"{one_line(out)} is up to date ({len(files)} file{'s' if len(files) != 1 else ''}).")
        return
    try:
        with progress.shown(f"topogate generate: writing {len(files):,} files", progress.wanted()):
            writer.write_tree(out, files)
    except writer.WriteError as err:
        click.echo(one_line(f"topogate: {err}"), err=True)
        sys.exit(2)
    from topogate.tree.summary import summarise

    click.echo(summarise(inv, files, out))
    if gctune.one_shot(main):
        gctune.exit_now(0)  # the written tree's bytes and the model need not be freed one by one


# --- check / explain / rules commands (analysis) ---




@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--rendered", type=click.Path(file_okay=False),
              help="Also check that this generated tree is exactly what `generate` writes.")
@click.option("--cluster", help="Analyse PATHs as manifests of this inventory cluster.")
@click.option("--format", "fmt", type=click.Choice(_formats()), default="auto", show_default=True,
              help="auto: github under GitHub Actions, else text.")
@click.option("--strict", is_flag=True, help="Warnings fail the check too.")
@click.option("-o", "--output", type=click.Path(dir_okay=False),
              help="Also write the report in this format to a file (e.g. markdown for a PR comment).")
@click.option("--output-format", type=click.Choice(_formats()[1:]), default=None,
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
    from topogate.check.run import CheckInputError, run_check
    from topogate.core import gctune
    from topogate.policies.selection import select_outcome
    from topogate.report import get_reporter, resolve_format
    from topogate.report.output import output_format as _output_format

    one_shot = gctune.one_shot(main)
    if one_shot:
        gctune.hold()
    name = resolve_format(fmt, os.environ, sys.stdout.isatty())
    out_format = _output_format(output_format, output or "", name)
    if live or context or kubeconfig or from_file:
        from topogate.cli.check_live import check_live

        if changed_since is not None:
            click.echo("topogate: --changed-since narrows a check of files; --live reads the cluster",
                       err=True)
            sys.exit(2)

        check_live(inventory, paths, rendered, cluster, fmt, strict, live, context, kubeconfig, from_file,
                   output, out_format)

    if output:
        # before the analysis, not after it has printed the report
        parent = os.path.dirname(os.path.abspath(output))
        if not os.path.isdir(parent) or not os.access(parent, os.W_OK):
            click.echo(f"topogate: cannot write the report to {one_line(output)}: {one_line(parent)} is not a "
                       "writable directory", err=True)
            sys.exit(2)
    try:
        with progress.shown("topogate check", progress.wanted(name, quiet)):
            outcome = run_check(inventory, paths, rendered, cluster, strict=strict,
                                changed_since=changed_since)
        outcome = select_outcome(outcome, select, ignore, strict)
        if outcome.result.scope is not None and outcome.result.scope.note:
            click.echo(one_line(f"topogate: {outcome.result.scope.note}"), err=True)
    except CheckInputError as err:
        click.echo(one_line(f"topogate: {err}"), err=True)
        sys.exit(2)
    verbosity = -1 if quiet else 1 if verbose else 0
    # Escaped for a CI log first; colour (a terminal only) after, so its escapes survive.
    report = _log_safe(name, get_reporter(name, strict=strict, verbosity=verbosity).render(outcome.result))
    if name == "text":
        from topogate.report.color import colorize, use_color

        report = colorize(report) if use_color(os.environ, sys.stdout.isatty()) else report
    click.echo(report, nl=False, color=True)
    if output:
        from topogate.report.output import write_report

        problem = write_report(output, get_reporter(out_format, strict=strict).render(outcome.result))
        if problem:
            click.echo(one_line(f"topogate: -o {output}: {problem}"), err=True)
            sys.exit(2)
    if one_shot:
        gctune.exit_now(outcome.exit_code)
    sys.exit(outcome.exit_code)


def _log_safe(fmt: str, text: str) -> str:
    from topogate.core.escape import for_log

    return for_log(fmt, text)


@main.command()
@click.argument("inventory", type=click.Path(dir_okay=False))
@click.argument("workload")
@click.argument("paths", nargs=-1, type=click.Path())
@click.option("--cluster", help="Analyse PATHs as manifests of this inventory cluster.")
@click.option("--format", "fmt", type=click.Choice(["text", "mermaid", "json"]), default="text",
              show_default=True)
def explain(inventory: str, workload: str, paths: tuple[str, ...], cluster: str | None, fmt: str) -> None:
    """Print the map of one job: where each group can land and why, and every required flow.

    WORKLOAD is `name`, `namespace/name` or `Kind/namespace/name`.
    """
    import json

    from topogate.check.run import CheckInputError, run_check
    from topogate.report.explain import explain_json, explain_text
    from topogate.report.mermaid import job_diagram

    try:
        outcome = run_check(inventory, paths, None, cluster)
    except CheckInputError as err:
        click.echo(one_line(f"topogate: {err}"), err=True)
        sys.exit(2)
    if outcome.inventory is None:
        for f in outcome.result.findings:
            click.echo(one_line(f"{f.file}:{f.line}:{f.column}: {f.message}"), err=True)
        sys.exit(2)
    matches = [j for j in outcome.result.jobs
               if workload in (j.name, f"{j.namespace}/{j.name}", j.object)]
    if len(matches) != 1:
        known = ", ".join(j.object for j in outcome.result.jobs) or "none"
        what = "no job" if not matches else "several jobs"
        click.echo(one_line(f"topogate: {what} named '{workload}' found; jobs: {known}"), err=True)
        sys.exit(2)
    job = matches[0]
    if fmt == "json":
        click.echo(_log_safe("json", json.dumps(explain_json(job), indent=2, sort_keys=True)))
    elif fmt == "mermaid":
        click.echo(_log_safe("mermaid", job_diagram(job)))
    else:
        click.echo(_log_safe("text", explain_text(job)), nl=False)
    findings = [f for f in outcome.result.findings if f.object == job.object and f.severity == "error"]
    sys.exit(1 if findings or job.blocked or not job.colocated or not job.schedulable else 0)


@main.command()
@click.argument("rule", required=False)
@click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
              show_default=True)
def rules(fmt: str, rule: str | None = None) -> None:
    """List the rules (`--format markdown` writes docs/rules.md); RULE (ID or name) shows one."""
    from topogate.policies.engine import all_rules
    from topogate.report.rules import one_rule, rules_json

    infos = all_rules()
    if rule is not None or fmt == "json":
        text, code = one_rule(infos, rule, fmt) if rule is not None else (rules_json(infos), 0)
        click.echo(text, err=code != 0)
        sys.exit(code)
    if fmt == "text":
        for r in infos:
            click.echo(f"{r.id}  {r.name:<22} {r.severity:<8} {r.summary.split(': ', 1)[-1]}")
        return
    click.echo("# topogate rules\n")
    click.echo("Generated by `topogate rules --format markdown`; do not edit.\n")
    click.echo("| ID | name | severity | what it finds |")
    click.echo("| --- | --- | --- | --- |")
    for r in infos:
        click.echo(f"| [{r.id}](#{r.id.lower()}-{r.name}) | {r.name} | {r.severity} | "
                   f"{r.summary.split(': ', 1)[-1]} |")
    for r in infos:
        body = r.doc.split("\n\n", 1)[1].strip() if "\n\n" in r.doc else ""
        click.echo(f"\n## {r.id} {r.name}\n\nSeverity: {r.severity}\n\n{body}")


# --- trace command ---


@main.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path())
@click.option("--from", "src", required=True, metavar="SRC",
              help="ns/Kind/name[/group], ns:key=value,..., an entity (world, host, kube-apiserver, "
                   "cluster, remote-node), a CIDR/IP, or fqdn:NAME.")
@click.option("--to", "dst", required=True, metavar="DST", help="Same forms as --from.")
@click.option("--port", metavar="P[/TCP|UDP|SCTP]",
              help="One port (or a container-port name of DST). Default: every TCP and UDP port class.")
@click.option("--inventory", type=click.Path(dir_okay=False),
              help="Inventory: cluster name and zones of known workloads, and their bases.")
@click.option("--cluster", help="Trace within this cluster: policies other clusters own do not apply "
                                "(default: the cluster the workloads belong to).")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def trace(paths: tuple[str, ...], src: str, dst: str, port: str | None, inventory: str | None,
          cluster: str | None, fmt: str) -> None:
    """May SRC reach DST? The verdict and, per side, the policy line that decides it.

    PATHs are YAML files, directories or kustomization directories holding the workloads,
    CiliumNetworkPolicies, CiliumClusterwideNetworkPolicies, NetworkPolicies and Namespaces.
    Exit codes: 0 allowed (every traced port class), 1 denied (any class), 2 bad input.
    """
    import json

    from topogate.trace import TraceError, as_json, run_trace
    from topogate.trace.text import render_trace_text

    try:
        result = run_trace(paths, src, dst, port, inventory, cluster)
    except TraceError as err:
        click.echo(one_line(f"topogate trace: {err}"), err=True)
        sys.exit(2)
    if fmt == "json":
        click.echo(_log_safe("json", json.dumps(as_json(result), indent=2, sort_keys=True)))
    else:
        click.echo(_log_safe("text", render_trace_text(result)), nl=False)
    sys.exit(result.exit_code)


# --- command groups that live in topogate/cli/: audit egress, import, drift ---

main.add_command(audit)
main.add_command(import_)
main.add_command(drift)


if __name__ == "__main__":  # pragma: no cover
    main()
