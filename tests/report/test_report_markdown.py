"""Markdown for a PR comment: verdict, findings table, a picture for each job in trouble."""

from __future__ import annotations

from pathlib import Path

import pytest
from render_support import MULTI, REPO, SPLIT, lab_with_openings, mermaid_blocks, topogate
from report_support import CLEAN_RESULT, result

from topogate.cli.output import emit
from topogate.inventory.loader import load_inventory
from topogate.report.markdown import MarkdownReporter, cell


def test_failed_report() -> None:
    out = MarkdownReporter().render(result())
    assert out.startswith("## ❌ topogate check failed\n\n3 errors, 1 warning, 1 info in 2 workloads\n")
    assert "| Rule | Severity | Where | Message |" in out
    assert ("| TG101 hard-block | error | jobs/llama.yaml:30 | Worker -&gt; Master: TCP/23456 denied, "
            "100% of steps<br>fix: pin Master to us-east-1a |") in out
    # a pipe in a message must not open a new column
    assert "us-east-1a \\| pin or follow |" in out


def test_mermaid_for_the_broken_job_only() -> None:
    out = MarkdownReporter().render(result())
    assert out.count("```mermaid") == 1
    block = out.split("```mermaid\n", 1)[1].split("\n```", 1)[0]
    assert block.startswith("flowchart LR")
    assert "-.->" in block
    assert "linkStyle 1 stroke:red" in block
    section = out.split("#### PyTorchJob/ml-team/llama-ft", 1)[1]
    assert "**can be split across zones**" in section
    assert "- Worker (us-east-1a) → Master (us-east-1b) TCP/23456 rendezvous: ingress of Master" in section
    # the clean job is a table row in a collapsed section, not a picture
    assert "<details><summary>1 clean workload" in out
    assert "| PyTorchJob/ml-team/clean-ft | gpu-east | us-east-1a |" in out


def test_passed_report() -> None:
    out = MarkdownReporter().render(CLEAN_RESULT)
    assert out.startswith("## ✅ topogate check passed\n")
    assert "### Findings" not in out and "```mermaid" not in out


def test_cell_is_inert() -> None:
    assert cell("<img src=x onerror=alert(1)> | a\nb") == "&lt;img src=x onerror=alert(1)&gt; \\| a<br>b"


def test_pictures_draw_each_jobs_openings_from_the_inventory_checked_against(
        capsys: pytest.CaptureFixture[str]) -> None:
    inv = load_inventory(str(MULTI))  # its llama-ft is BROKEN's job: a door, a scraper, egress
    (without,) = mermaid_blocks(MarkdownReporter().render(result()))
    (block,) = mermaid_blocks(MarkdownReporter(inventory=inv).render(result()))
    assert "o0" not in without
    assert '  o0(["pods app=s3-gateway in namespace storage"])' in block
    assert '|"door datasets TCP/9000"|' in block and '|"scrape TCP/9090"|' in block
    # the same job (its flows' edges), more around it (and its network zone, which the inventory names)
    flows = [ln for ln in without.splitlines() if "-->" in ln or "-.->" in ln]
    assert flows and set(flows) <= set(block.splitlines())
    assert '  subgraph n0["network zone fabric"]' in block
    # the CLI's one output path hands the inventory to the reporter
    emit(result(), "markdown", strict=False, inventory=inv)
    assert mermaid_blocks(capsys.readouterr().out) == [block]


def test_check_markdown_draws_the_openings_of_the_inventory_it_checked(tmp_path: Path) -> None:
    code, md = topogate("check", str(lab_with_openings(tmp_path)), str(SPLIT), "--format", "markdown")
    assert code == 1 and "**can be split across zones**" in md
    (picture,) = mermaid_blocks(md)
    assert '  o0(["pods of namespace monitoring"])' in picture and '  o1[/"10.9.0.0/16"/]' in picture
    assert '  o0 -->|"scrape TCP/9090"| z0_g0' in picture
    assert '  z0_g0 -->|"egress TCP/443"| o1' in picture
    # the same check against the lab as it is: no openings, nothing drawn around the job
    _, plain = topogate("check", str(REPO / "fixtures" / "lab" / "inventory.yaml"), str(SPLIT), "--format", "markdown")
    (without,) = mermaid_blocks(plain)
    assert "o0" not in without and without.splitlines()[:4] == picture.splitlines()[:4]
