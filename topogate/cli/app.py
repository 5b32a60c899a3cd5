"""The `topogate` command group: each command lives in its own module of topogate.cli.

Exit codes (check/generate/explain/trace/rules): 0 clean, 1 findings or differences,
2 bad invocation or unreadable input (topogate.core.exitcodes). `audit egress` and the live
commands add 75/77/78 (see topogate.audit).
"""

from __future__ import annotations

from typing import Any

import click

from topogate.cli.audit import audit
from topogate.cli.baseline import baseline
from topogate.cli.check import check
from topogate.cli.clusters import clusters
from topogate.cli.config import config
from topogate.cli.diff import diff
from topogate.cli.explain import explain
from topogate.cli.generate import generate
from topogate.cli.live import drift, import_
from topogate.cli.replay import replay
from topogate.cli.rules import rules
from topogate.cli.schema import schema
from topogate.cli.stdio import guarded, install
from topogate.cli.trace import trace


class _Group(click.Group):
    """The command group, with standard output guarded (topogate.cli.stdio): a full disk, a
    closed pipe or a closed fd 1 is one line and exit 2, for every command, `--help` included."""

    def main(self, *args: Any, **kwargs: Any) -> Any:
        install()
        return super().main(*args, **kwargs)

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        return guarded(lambda: super(_Group, self).make_context(*args, **kwargs))

    def invoke(self, ctx: click.Context) -> Any:
        return guarded(lambda: super(_Group, self).invoke(ctx))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="topogate")
def main() -> None:
    """topogate: one map of zones, pools and network doors for distributed training jobs.

    Exit codes: 0 clean, 1 findings or differences, 2 bad invocation or unreadable input; the
    commands that talk to a service add 75 (temporary), 77 (access denied), 78 (configuration).
    Each command's --help has its own. Shell completion: docs/cli.md.
    """


for _command in (generate, check, baseline, diff, explain, rules, trace, replay, audit, import_, drift, config,
                 clusters, schema):
    main.add_command(_command)

__all__ = ["audit", "baseline", "check", "clusters", "config", "diff", "drift", "explain", "generate", "import_", "main", "replay",
           "rules", "schema", "trace"]
