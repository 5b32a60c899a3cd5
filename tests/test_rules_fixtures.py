"""Every rule has a failing and a passing fixture (fixtures/rules/<ID>-<name>/{fail,pass})."""

from __future__ import annotations

from pathlib import Path

import pytest
from check_support import RULES, run_case

from topogate.policies import REGISTRY

CASES = sorted(p.name for p in RULES.iterdir() if p.is_dir())


def test_every_rule_has_fixtures() -> None:
    named = {c.split("-", 1)[0]: c.split("-", 1)[1] for c in CASES}
    assert set(named) == set(REGISTRY), "each registered rule needs fixtures/rules/<ID>-<name>/"
    for rid, name in named.items():
        assert REGISTRY[rid].NAME == name
        for variant in ("fail", "pass"):
            assert (RULES / f"{rid}-{name}" / variant / "case.yaml").is_file()


@pytest.mark.parametrize("case", CASES)
def test_rule_fails_on_failing_fixture(case: str, tmp_path: Path) -> None:
    rid = case.split("-", 1)[0]
    out = run_case(RULES / case / "fail", tmp_path)
    hits = [f for f in out.result.findings if f.rule == rid]
    assert hits, f"{rid} did not fire; findings: {[(f.rule, f.message) for f in out.result.findings]}"
    for f in hits:
        assert f.line >= 1 and f.column >= 1 and f.file
        assert f.severity == REGISTRY[rid].SEVERITY
    assert out.exit_code in ((2,) if rid == "TG001" else (1,)) or REGISTRY[rid].SEVERITY != "error"


@pytest.mark.parametrize("case", CASES)
def test_rule_passes_on_passing_fixture(case: str, tmp_path: Path) -> None:
    out = run_case(RULES / case / "pass", tmp_path)
    assert [(f.rule, f.message) for f in out.result.findings] == []
    assert out.exit_code == 0
