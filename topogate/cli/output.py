"""The one output path of every command's report (check, check --live, drift, diff, replay,
trace, audit egress, explain): `show` renders through the command's table in the report registry
(topogate.report.formats), `emit` is check's.

The report goes to standard output in the format asked for (escaped for a CI log and redacted:
topogate.core.escape.for_log; check's text coloured on a terminal); with `-o FILE` it is also written there,
atomically (topogate.tree.writer.write_file), in the format its extension names; `-o` may be
repeated (one analysis, a markdown summary and a SARIF file for code scanning). A header (what
was compared) goes before it.

`write_output` is the one way a command writes `-o FILE` (check, check --live, drift, diff,
schema): a regular file is replaced whole; a character device or a FIFO (`-o /dev/stdout`) is
written through, escaped for a CI log as standard output is; a directory or a socket is refused
(topogate.tree.target).
"""

from __future__ import annotations

import os
import sys
from pathlib import PurePath
from typing import TYPE_CHECKING, TypeVar

import click

from topogate.analysis.result import CheckResult
from topogate.cli.common import fail
from topogate.core.escape import for_log, lines
from topogate.report import check_formats, resolve_format
from topogate.report.color import colorize, use_color
from topogate.report.formats import Formats
from topogate.tree.writer import cannot_write, write_file

if TYPE_CHECKING:
    from topogate.inventory.model import Inventory

R = TypeVar("R")

# `-o FILE` without --output-format: by the file's extension. `-o report.md` (what action.yml
# and most users pass for a job summary) is markdown; any other name gets the format of
# standard output.
BY_SUFFIX = {".md": "markdown", ".markdown": "markdown", ".sarif": "sarif", ".json": "json",
             ".txt": "text", ".xml": "junit"}


def output_format(explicit: str | None, path: str, stdout_format: str) -> str:
    """The format of `-o FILE`: `--output-format` when given, else the file's extension, else
    the format of standard output."""
    if explicit:
        return explicit
    return BY_SUFFIX.get(PurePath(path).suffix.lower(), stdout_format)


def output_files(paths: tuple[str, ...], explicit: str | None, stdout_format: str) -> tuple[tuple[str, str], ...]:
    """(file, format) of each `-o FILE`. With several, each file's extension names its format:
    one `--output-format` for all of them would write the same report twice."""
    if explicit and len(paths) > 1:
        fail("topogate: --output-format names the format of one -o FILE; with several -o, name each "
             "file's format by its extension (" + ", ".join(sorted(BY_SUFFIX)) + ")")
    seen: set[str] = set()
    for p in paths:
        real = os.path.realpath(p)
        if real in seen:
            fail(f"topogate: -o {p} is given twice")
        seen.add(real)
    return tuple((p, output_format(explicit, p, stdout_format)) for p in paths)


def require_writable(outputs: tuple[tuple[str, str], ...]) -> None:
    """Exit 2 before any work when an `-o FILE` cannot be written (not after the report printed)."""
    for output, _ in outputs:
        problem = cannot_write(output)
        if problem:
            fail(f"topogate: cannot write the report to {output}: {problem}")


def write_output(path: str, text: str, fmt: str) -> str:
    """Write `text`, a report in `fmt`, to `-o path` (module doc); "" or why it could not."""
    return write_file(path, text, stream=lambda t: for_log(fmt, t))


def stdout_format(fmt: str) -> str:
    """The concrete format of standard output (`auto`: github under GitHub Actions)."""
    return resolve_format(fmt, os.environ, sys.stdout.isatty())


def emit(result: CheckResult, fmt: str, *, strict: bool, verbosity: int = 0,
         outputs: tuple[tuple[str, str], ...] = (), header: str | None = None,
         markdown_appendix: str = "", inventory: Inventory | None = None) -> None:
    """Print check's report of `result` in `fmt` (concrete), and write it to each (file, format)
    of `outputs` (show). A header goes before it: on stdout for text, else on stderr.
    `markdown_appendix` ends a markdown report (check --changed-since: the connectivity diff);
    `inventory` (the one checked against) gives the markdown pictures each job's openings;
    `verbosity` is standard output's (a file gets the default list of workloads)."""
    def table(verbosity: int) -> Formats[CheckResult]:
        return check_formats(strict=strict, verbosity=verbosity, inventory=inventory,
                             markdown_appendix=markdown_appendix)

    if header is not None:
        click.echo(lines(header), err=fmt != "text")
        if fmt == "text":
            click.echo()
    show(table(verbosity), result, fmt, outputs=outputs, files=table(0))


def show(formats: Formats[R], result: R, fmt: str, *, outputs: tuple[tuple[str, str], ...] = (),
         files: Formats[R] | None = None, command: str = "topogate") -> None:
    """Print the report of `result` in `fmt` through the command's `formats`, escaped for a CI
    log, and write it to each (file, format) of `outputs` (through `files`, by default the same
    table); a file that cannot be written is `command: -o FILE: why`, exit 2."""
    # Escaped for a CI log first; colour (a terminal only) after, so its escapes survive.
    report = formats.for_log(result, fmt)
    if fmt in formats.coloured and use_color(os.environ, sys.stdout.isatty()):
        report = colorize(report)
    click.echo(report, nl=False, color=True if formats.coloured else None)
    for output, output_format in outputs:
        problem = write_output(output, (files or formats).render(result, output_format), output_format)
        if problem:
            fail(f"{command}: -o {output}: {problem}")


__all__ = ["emit", "output_files", "output_format", "require_writable", "show", "stdout_format", "write_output"]
