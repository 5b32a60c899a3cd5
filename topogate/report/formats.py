"""The report registry: each command's formats as one table, and the one dispatcher from a format
name to its renderer.

Every command that prints a report (check, check --live and drift, diff, replay, trace, audit
egress, explain) declares a `Formats` next to its renderers: format name -> a function from the
command's result to the whole report text. The CLI's one output path (topogate.cli.output.show)
renders through it, escapes for a CI log, writes `-o FILE`; no command chooses among its formats
itself (tests/report/test_report_pipeline.py fails on an `if fmt == ...` chain outside this module and
the reporter factory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from topogate.core.escape import for_log

R = TypeVar("R")


@dataclass(frozen=True)
class Formats(Generic[R]):
    """One command's formats, in the order its `--format` offers them."""

    renderers: Mapping[str, Callable[[R], str]]
    # (format, text) -> the text safe for a CI log; a command whose renderers already escape (and
    # redact more: audit egress) gives its own.
    escape: Callable[[str, str], str] = field(default=for_log)
    # The format an unknown name renders as (`diff -o report.xml` is text), None: refused.
    fallback: str | None = None
    # Formats coloured on a terminal (check's text: topogate.report.color).
    coloured: frozenset[str] = frozenset()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self.renderers)

    def render(self, result: R, fmt: str) -> str:
        """The whole report of `result` in `fmt`, as the renderer writes it (not yet escaped)."""
        renderer = self.renderers.get(fmt)
        if renderer is None:
            if self.fallback is None:
                raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join(self.renderers)}")
            renderer = self.renderers[self.fallback]
        return renderer(result)

    def for_log(self, result: R, fmt: str) -> str:
        """The report of `result` in `fmt`, safe for standard output (which may be a CI log)."""
        return self.escape(fmt, self.render(result, fmt))


def as_written(fmt: str, text: str) -> str:
    """The escape of renderers that escape their own text."""
    del fmt
    return text


__all__ = ["Formats", "as_written"]
