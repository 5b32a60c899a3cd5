"""The placement fixtures (fixtures/placement/<case>/): `topogate check` gives exactly the
placement rules (TG102-TG106) each case.yaml expects. The scheduler oracle
(tests/oracles/test_scheduler_oracle.py) runs the same cases against the real kube-scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from check_support import ROOT, run_case

PLACEMENT = ROOT / "fixtures" / "placement"
CASES = sorted(p.name for p in PLACEMENT.iterdir() if (p / "case.yaml").is_file())
RULES = ("TG102", "TG103", "TG104", "TG105", "TG106")


@pytest.mark.parametrize("case", CASES)
def test_placement_fixture_gives_the_expected_rules(case: str, tmp_path: Path) -> None:
    spec = yaml.safe_load((PLACEMENT / case / "case.yaml").read_text())
    out = run_case(PLACEMENT / case, tmp_path)
    got = sorted({f.rule for f in out.result.findings if f.rule in RULES})
    assert got == sorted(spec["expect"]), [(f.rule, f.message) for f in out.result.findings if f.rule in RULES]
