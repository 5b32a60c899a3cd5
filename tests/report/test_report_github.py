"""GitHub workflow commands and their escaping (actions/toolkit's escapeData/escapeProperty)."""

from __future__ import annotations

from dataclasses import replace

from report_support import result

from topogate.core.findings import Finding
from topogate.report.github import GithubReporter, annotation, escape_data, escape_property


def test_escape_data() -> None:
    assert escape_data("a%b\r\nc: d, e") == "a%25b%0D%0Ac: d, e"


def test_escape_property() -> None:
    assert escape_property("a%b\r\nc: d, e") == "a%25b%0D%0Ac%3A d%2C e"


def test_percent_is_escaped_first() -> None:
    # Otherwise the %0A produced for a newline would itself become %250A.
    assert escape_data("\n%") == "%0A%25"


def test_annotation_for_a_nasty_message() -> None:
    f = Finding("dir,x/a:b.yaml", 30, 7, "TG101", "hard-block", "error", "PyTorchJob/ns/j",
                "Worker -> Master: TCP/23456 denied, 100% of steps\nfix: pin Master")
    assert annotation(f) == (
        "::error file=dir%2Cx/a%3Ab.yaml,line=30,col=7,title=TG101 hard-block"
        "::Worker -> Master: TCP/23456 denied, 100%25 of steps%0Afix: pin Master"
    )


def test_severity_to_command() -> None:
    def at(severity: str) -> str:
        return annotation(Finding("f.yaml", 1, 1, "TG1", "n", severity, "o", "m"))

    assert at("error").startswith("::error ")
    assert at("warning").startswith("::warning ")
    assert at("info").startswith("::notice ")


def test_unknown_file_has_no_file_property_and_names_the_object() -> None:
    f = Finding("<unknown>", 1, 1, "TG120", "no-policy", "info", "Namespace/ml-team", "no policy")
    assert annotation(f) == "::notice title=TG120 no-policy::Namespace/ml-team: no policy"


def test_report_one_line_per_finding_plus_count() -> None:
    out = GithubReporter().render(result()).splitlines()
    assert len(out) == 6
    assert all(line.startswith("::") for line in out[:5])
    assert out[-1] == "topogate: 3 errors, 1 warning, 1 info in 2 workloads"
    assert "::error file=jobs/llama.yaml,line=30,col=7,title=TG101 hard-block::" in "\n".join(out)


def test_annotations_github_will_cut_are_said_in_the_log() -> None:
    # GitHub shows 10 error annotations per step and drops the rest silently: on a large PR the
    # log must say how many the diff does not show, and where to see them all.
    many = tuple(Finding(f"jobs/j{i:02}.yaml", 1, 1, "TG102", "may-split", "error", f"PyTorchJob/ns/j{i}", "split")
                 for i in range(13))
    out = GithubReporter().render(replace(result(), findings=many))
    assert out.count("::error ") == 13  # every one is printed: the log keeps them all
    assert out.splitlines()[-1].startswith("topogate: GitHub shows at most 10 annotations of each kind per step: "
                                           "3 errors not shown")
    assert "SARIF" in out.splitlines()[-1]
    assert "GitHub shows at most" not in GithubReporter().render(result())
