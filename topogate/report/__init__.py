"""Reporters: one CheckResult, many formats (text, json, sarif, github, markdown, junit).

The registry is explicit so `--format` choices are known without importing plugins, and so
parsing a format (click.Choice(["auto", *REPORTERS])) stays separate from rendering it.
`check_formats` is check's (and drift's) table in the registry every command reports through
(topogate.report.formats).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from topogate.analysis.result import CheckResult
    from topogate.inventory.model import Inventory
    from topogate.report.base import Reporter
    from topogate.report.formats import Formats

# The names, in registry order, known without importing a reporter: the CLI offers them as
# `--format` choices when it starts, and importing the reporters (with the analysis result
# types they render) would make every command pay for them, `generate` included, and any
# command that imports report.escape. `REPORTERS` (below) imports them on first use.
FORMATS: tuple[str, ...] = ("text", "json", "sarif", "github", "markdown", "junit")

REPORTERS: dict[str, type[Reporter]]  # bound on first access, by __getattr__


def _registry() -> dict[str, type[Reporter]]:
    # lazy: start-up time: `generate` and `--format` choices need no reporter
    from topogate.report.github import GithubReporter
    from topogate.report.json import JsonReporter
    from topogate.report.junit import JunitReporter
    from topogate.report.markdown import MarkdownReporter
    from topogate.report.sarif import SarifReporter
    from topogate.report.text import TextReporter

    return {
        "text": TextReporter,
        "json": JsonReporter,
        "sarif": SarifReporter,
        "github": GithubReporter,
        "markdown": MarkdownReporter,
        "junit": JunitReporter,
    }


def _reporters() -> dict[str, type[Reporter]]:
    found: dict[str, type[Reporter]] | None = globals().get("REPORTERS")
    if found is None:
        found = globals()["REPORTERS"] = _registry()
    return found


def __getattr__(name: str) -> Any:
    if name == "REPORTERS":
        return _reporters()
    if name == "Reporter":
        # lazy: start-up time: `generate` and `--format` choices need no reporter
        from topogate.report.base import Reporter

        return Reporter
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


AUTO = "auto"


def resolve_format(fmt: str, env: Mapping[str, str], isatty: bool) -> str:
    """The concrete format for `fmt`; `auto` means github under GitHub Actions, text otherwise.

    GitHub sets GITHUB_ACTIONS=true in every step, and there workflow commands become
    annotations on the pull request's diff. Everywhere else text is the only format a person
    can read, piped or not: `isatty` is accepted so callers need not change when a terminal
    specific choice appears, but today a pipe gets the same text as a terminal so that
    `topogate check ... | tee log` shows what the user saw.
    """
    del isatty  # see docstring: deliberately not a factor yet
    if fmt == AUTO:
        return "github" if env.get("GITHUB_ACTIONS") == "true" else "text"
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; choose one of: {', '.join([AUTO, *FORMATS])}")
    return fmt


def get_reporter(fmt: str, *, strict: bool = False, verbosity: int = 0,
                 inventory: Inventory | None = None) -> Reporter:
    """A reporter for a concrete (already resolved) format; `verbosity` (-1 quiet, 0, 1 -v)
    decides how many workload summaries the text format lists; `inventory` (the one checked
    against) lets the markdown pictures draw each job's doors, scrapers and egress."""
    if fmt == "text":
        # lazy: start-up time: `generate` and `--format` choices need no reporter
        from topogate.report.text import TextReporter

        return TextReporter(strict=strict, verbosity=verbosity)
    if fmt == "markdown":
        # lazy: start-up time, as above
        from topogate.report.markdown import MarkdownReporter

        return MarkdownReporter(strict=strict, inventory=inventory)
    return _reporters()[fmt](strict=strict)


def check_formats(*, strict: bool = False, verbosity: int = 0, inventory: Inventory | None = None,
                  markdown_appendix: str = "") -> Formats[CheckResult]:
    """The formats of a report of findings (check, check --live, drift), each a reporter of
    get_reporter; `markdown_appendix` ends a markdown report (check --changed-since: the
    connectivity diff). Text is coloured on a terminal."""
    from topogate.report.formats import Formats  # lazy: start-up time, as the reporters

    def renderer(name: str, appendix: str = "") -> Callable[[CheckResult], str]:
        def render(result: CheckResult) -> str:
            text = get_reporter(name, strict=strict, verbosity=verbosity, inventory=inventory).render(result)
            return text + "\n" + appendix if appendix else text
        return render

    renderers = {name: renderer(name) for name in FORMATS}
    renderers["markdown"] = renderer("markdown", markdown_appendix)
    return Formats(renderers, coloured=frozenset({"text"}))


__all__ = ["AUTO", "FORMATS", "REPORTERS", "Reporter", "check_formats", "get_reporter", "resolve_format"]
