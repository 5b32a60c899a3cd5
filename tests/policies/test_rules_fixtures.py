"""Every rule has a failing and a passing fixture (fixtures/rules/<ID>-<name>/{fail,pass}), and
the failing one pins what users read: fail/expected.txt holds each of the rule's findings as
file:line:column, severity, rule and message. It is rewritten only with `--update-golden`."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from check_support import RULES, run_case
from conftest import REPO

from topogate.policies import REGISTRY

CASES = sorted(p.name for p in RULES.iterdir() if p.is_dir())


def test_every_rule_has_fixtures() -> None:
    named = {c.split("-", 1)[0]: c.split("-", 1)[1] for c in CASES}
    assert set(named) == set(REGISTRY), "each registered rule needs fixtures/rules/<ID>-<name>/"
    for rid, name in named.items():
        assert REGISTRY[rid].NAME == name
        for variant in ("fail", "pass"):
            assert (RULES / f"{rid}-{name}" / variant / "case.yaml").is_file()


def _portable(text: str, tmp: Path) -> str:
    """text with this checkout's and this run's directories taken out: the repository's root
    (absolute paths become repository-relative), the run's scratch directory, and the rendered
    tree a case writes beside its inventory (`.rendered-<run>`)."""
    text = text.replace(str(tmp), "<tmp>").replace(os.path.relpath(tmp), "<tmp>")
    text = text.replace(f"{REPO}/", "").replace(str(REPO), ".")
    return re.sub(r"\.rendered-[^/\s:]+", ".rendered", text)


@pytest.mark.parametrize("case", CASES)
def test_rule_fails_on_failing_fixture(case: str, tmp_path: Path, update_golden: bool) -> None:
    rid = case.split("-", 1)[0]
    out = run_case(RULES / case / "fail", tmp_path)
    hits = [f for f in out.result.findings if f.rule == rid]
    assert hits, f"{rid} did not fire; findings: {[(f.rule, f.message) for f in out.result.findings]}"
    for f in hits:
        assert f.line >= 1 and f.column >= 1 and f.file
        assert f.severity == REGISTRY[rid].SEVERITY
    assert out.exit_code in ((2,) if rid == "TG001" else (1,)) or REGISTRY[rid].SEVERITY != "error"
    got = "".join(_portable(f"{f.file}:{f.line}:{f.column}: {f.severity} {f.rule} {f.message}", tmp_path) + "\n"
                  for f in hits)
    expected = RULES / case / "fail" / "expected.txt"
    if update_golden:
        expected.write_text(got, encoding="utf-8")
    assert expected.is_file(), f"{expected.relative_to(REPO)} is missing: run pytest with --update-golden and review it"
    assert got == expected.read_text(encoding="utf-8"), (
        f"{rid}'s message changed; if meant, run pytest with --update-golden and review the diff")


@pytest.mark.parametrize("case", CASES)
def test_rule_passes_on_passing_fixture(case: str, tmp_path: Path) -> None:
    out = run_case(RULES / case / "pass", tmp_path)
    assert [(f.rule, f.message) for f in out.result.findings] == []
    assert out.exit_code == 0
