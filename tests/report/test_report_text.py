"""Text: compiler-style lines sorted by file and line, a summary per job, a count line."""

from __future__ import annotations

from report_support import CLEAN_RESULT, result

from topogate.report.text import TextReporter


def test_finding_lines() -> None:
    out = TextReporter().render(result())
    lines = out.splitlines()
    assert lines[0] == "/abs/path/with space.yaml:2:1: error TG001 unreadable: bad YAML <tag>"
    assert "jobs/llama.yaml:9:7: error TG102 may-split: Master may land" in out
    i = lines.index("jobs/llama.yaml:30:7: error TG101 hard-block: Worker -> Master: TCP/23456 denied, "
                    "100% of steps")
    assert lines[i + 1] == "    fix: pin Master to us-east-1a"  # continuation indented
    assert lines.index("policies/intra-zone.yaml:3:1: warning TG110 dangling-policy: selects no pod") > i
    assert "Namespace/ml-team: info TG120 no-policy: no policy in ml-team" in lines


def test_job_summaries_and_counts() -> None:
    out = TextReporter().render(result())
    assert "PyTorchJob/ml-team/llama-ft (cluster gpu-east): NOT colocated, schedulable" in out
    assert "  Master x1: us-east-1a, us-east-1b" in out
    assert "  Worker x4 (8 GPU/pod): us-east-1a" in out
    assert "  blocked: Worker@us-east-1a -> Master@us-east-1b TCP/23456 (rendezvous): ingress of" in out
    assert "PyTorchJob/ml-team/clean-ft (cluster gpu-east): colocated, schedulable" in out
    assert out.endswith("\nFAIL: 3 errors, 1 warning, 1 info in 2 workloads\n")


def test_clean_run() -> None:
    out = TextReporter().render(CLEAN_RESULT)
    assert out.endswith("ok: 0 errors, 0 warnings in 1 workload\n")
    assert "blocked" not in out
