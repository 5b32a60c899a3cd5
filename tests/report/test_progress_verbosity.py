"""Output at scale (issue 11 item 4): the text report lists failing workloads and one line for
the rest past SMALL_RUN workloads, every one with -v, none with --quiet; progress goes to
stderr only for a person at a terminal, never under CI or with machine formats."""

from __future__ import annotations

import dataclasses
import io
import time
from pathlib import Path

from conftest import invoke
from report_support import BROKEN, CLEAN, FINDINGS, result

from topogate.core import progress
from topogate.report.text import QUIET, SMALL_RUN, VERBOSE, TextReporter

LAB = Path(__file__).resolve().parents[2] / "fixtures" / "lab"


def _many(n: int):  # type: ignore[no-untyped-def]
    clean = tuple(dataclasses.replace(CLEAN, name=f"clean-{i:03}", object=f"PyTorchJob/ml-team/clean-{i:03}")
                  for i in range(n))
    return result(FINDINGS, (BROKEN, *clean))


def test_small_run_lists_every_workload_as_before() -> None:
    r = _many(SMALL_RUN - 1)
    assert TextReporter().render(r) == TextReporter(verbosity=VERBOSE).render(r)
    assert "PyTorchJob/ml-team/clean-000 (cluster gpu-east): colocated" in TextReporter().render(r)


def test_at_scale_only_failing_workloads_and_one_line_for_the_rest() -> None:
    r = _many(500)
    out = TextReporter().render(r)
    assert "PyTorchJob/ml-team/llama-ft (cluster gpu-east): NOT colocated" in out
    assert "clean-000" not in out
    assert ("500 other workloads colocated and schedulable with no blocked flow "
            "(-v lists every workload)") in out
    assert out.endswith("\nFAIL: 3 errors, 1 warning, 1 info in 501 workloads\n")
    assert len(out.splitlines()) < 30
    verbose = TextReporter(verbosity=VERBOSE).render(r)
    assert "clean-499 (cluster gpu-east): colocated, schedulable" in verbose


def test_quiet_is_findings_and_the_summary_line() -> None:
    out = TextReporter(verbosity=QUIET).render(_many(3))
    assert "(cluster " not in out and "Master x1" not in out
    assert out.splitlines()[0].startswith("/abs/path/with space.yaml:2:1: error TG001")
    assert out.endswith("\n\nFAIL: 3 errors, 1 warning, 1 info in 4 workloads\n")


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_only_at_a_terminal_outside_ci_for_people() -> None:
    tty, pipe = _Tty(), io.StringIO()
    assert progress.wanted("text", False, tty, {})
    assert not progress.wanted("text", False, pipe, {})
    assert not progress.wanted("text", False, tty, {"CI": "true"})
    assert progress.wanted("text", False, tty, {"CI": "false"})
    assert not progress.wanted("json", False, tty, {})
    assert not progress.wanted("sarif", False, tty, {})
    assert not progress.wanted("text", True, tty, {})


def test_progress_shows_slow_work_then_erases_itself() -> None:
    slow, quick = _Tty(), _Tty()
    with progress.shown("topogate check", True, slow, delay=0.05, every=0.02):
        progress.note("reading workloads and their bases (50/2,000)")
        time.sleep(0.3)
    assert "topogate check: reading workloads and their bases (50/2,000) (0 s)" in slow.getvalue()
    assert slow.getvalue().endswith("\r\x1b[K")
    with progress.shown("topogate check", True, quick, delay=5):
        pass
    assert quick.getvalue() == ""


def test_cli_quiet_and_verbose(tmp_path: Path) -> None:
    inv = str(LAB / "inventory.yaml")
    quiet = invoke("check", inv, "--quiet")
    normal = invoke("check", inv)
    verbose = invoke("check", inv, "-v")
    assert "PyTorchJob/ml-demo/train (cluster lab)" not in quiet.stdout
    assert quiet.stdout.splitlines()[-1] == normal.stdout.splitlines()[-1]
    assert "PyTorchJob/ml-demo/train (cluster lab)" in normal.stdout
    assert normal.stdout == verbose.stdout  # one workload: a small run lists it anyway
    assert normal.stderr == ""  # not a terminal: no progress


def test_every_phase_of_a_check_reports_with_counts_that_move(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    # Before: nothing, then "reading workloads and their bases (1,450/1,500)" to the end: the
    # tree checks, the kustomize builds, the analysis and the rules never said a word.
    from topogate.check.run import run_check

    notes: list[str] = []
    monkeypatch.setattr(progress, "note", notes.append)
    run_check(str(LAB.parent / "multi" / "inventory.yaml"))
    phases = [n.split(" (")[0].split(":")[0] for n in notes]
    order = [p for i, p in enumerate(phases) if p not in phases[:i]]
    assert order == ["reading workloads and their bases", "checking kustomization trees before building",
                     "kubectl kustomize", "analysing placement and network paths of 48 objects",
                     "running the rules over 4 jobs"], order
    builds = [n for n in notes if n.startswith("kubectl kustomize: ")]
    total = builds[-1].split(" of ")[1].split()[0]
    assert builds[0] == f"kubectl kustomize: 1 of {total} roots built and read" and len(builds) == int(total)
    assert builds[-1] == f"kubectl kustomize: {total} of {total} roots built and read"
    reads = [n for n in notes if n.startswith("reading workloads")]
    n = reads[-1].split("/")[-1].rstrip(")")
    assert reads[-1].endswith(f"({n}/{n})")  # the last count is the whole, not 1,450/1,500
