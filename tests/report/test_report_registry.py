"""The format registry and `--format auto`: parsing a format is separate from rendering it."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner
from report_support import CLEAN_RESULT, result, shuffled

from topogate.report import AUTO, REPORTERS, Reporter, get_reporter, resolve_format


def test_registry_is_explicit_and_complete() -> None:
    assert list(REPORTERS) == ["text", "json", "sarif", "github", "markdown", "junit"]
    for name, cls in REPORTERS.items():
        assert issubclass(cls, Reporter)
        assert cls.name == name


@pytest.mark.parametrize(("env", "isatty", "expected"), [
    ({"GITHUB_ACTIONS": "true"}, False, "github"),
    ({"GITHUB_ACTIONS": "true"}, True, "github"),
    ({}, True, "text"),
    ({}, False, "text"),
    ({"GITHUB_ACTIONS": "false"}, False, "text"),
    ({"GITHUB_ACTIONS": "1"}, False, "text"),  # GitHub sets exactly "true"; anything else is not it
    ({"CI": "true"}, False, "text"),
])
def test_auto(env: dict[str, str], isatty: bool, expected: str) -> None:
    assert resolve_format(AUTO, env, isatty) == expected


@pytest.mark.parametrize("fmt", list(REPORTERS))
def test_explicit_format_wins_over_environment(fmt: str) -> None:
    assert resolve_format(fmt, {"GITHUB_ACTIONS": "true"}, True) == fmt


def test_unknown_format_is_an_error() -> None:
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        resolve_format("xml", {}, True)


def test_choices_plug_into_click() -> None:
    # How cli.py is meant to use it: click rejects bad values (exit 2) before anything runs.
    @click.command()
    @click.option("--format", "fmt", type=click.Choice([AUTO, *REPORTERS]), default=AUTO)
    def cmd(fmt: str) -> None:
        click.echo(resolve_format(fmt, {}, False))

    runner = CliRunner()
    assert runner.invoke(cmd, ["--format", "sarif"]).output == "sarif\n"
    assert runner.invoke(cmd, []).output == "text\n"
    assert runner.invoke(cmd, ["--format", "xml"]).exit_code == 2


@pytest.mark.parametrize("fmt", list(REPORTERS))
def test_every_format_is_deterministic(fmt: str) -> None:
    r = result()
    first = get_reporter(fmt).render(r)
    assert get_reporter(fmt).render(r) == first
    for seed in range(5):
        assert get_reporter(fmt).render(shuffled(r, seed)) == first, f"seed {seed}"


@pytest.mark.parametrize("fmt", list(REPORTERS))
def test_every_format_renders_a_clean_run_and_ends_with_newline(fmt: str) -> None:
    out = get_reporter(fmt).render(CLEAN_RESULT)
    assert out.endswith("\n")
    assert "TG101" not in out or fmt == "sarif"  # SARIF lists every rule, found or not


def test_strict_changes_the_verdict_only() -> None:
    warn_only = result(findings=tuple(f for f in result().findings if f.severity == "warning"))
    assert not get_reporter("text").failed(warn_only)
    assert get_reporter("text", strict=True).failed(warn_only)
    assert get_reporter("markdown", strict=True).render(warn_only).startswith("## ❌ topogate check failed")
    assert get_reporter("markdown").render(warn_only).startswith("## ✅ topogate check passed")
