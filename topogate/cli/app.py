"""The `topogate` command group: each command lives in its own module of topogate.cli.

Exit codes (check/generate/explain/trace/rules): 0 clean, 1 findings or differences,
2 bad invocation or unreadable input (topogate.core.exitcodes). `audit egress` and the live
commands add 75/77/78 (see topogate.audit).
"""

from __future__ import annotations

import click

from topogate.cli.audit import audit
from topogate.cli.check import check
from topogate.cli.clusters import clusters
from topogate.cli.config import config
from topogate.cli.diff import diff
from topogate.cli.explain import explain
from topogate.cli.generate import generate
from topogate.cli.live import drift, import_
from topogate.cli.rules import rules
from topogate.cli.schema import schema
from topogate.cli.trace import trace


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="topogate")
def main() -> None:
    """topogate: one map of zones, pools and network doors for distributed training jobs.

    Exit codes: 0 clean, 1 findings or differences, 2 bad invocation or unreadable input; the
    commands that talk to a service add 75 (temporary), 77 (access denied), 78 (configuration).
    Each command's --help has its own. Shell completion: docs/cli.md.
    """


for _command in (generate, check, diff, explain, rules, trace, audit, import_, drift, config, clusters, schema):
    main.add_command(_command)

__all__ = ["audit", "check", "clusters", "config", "diff", "drift", "explain", "generate", "import_", "main", "rules",
           "schema", "trace"]
