"""topogate's network-policy verdicts held equal to Cilium's own engine, on generated cases.

Cilium v1.20.2's policy code (tests/cilium/, run by tests/cilium_support.py) answers each flow of
a seeded, generated case (tests/cilium_cases.py: every construct topogate's evaluator models, and
the agent's settings); `topogate trace` answers the same flow over the same objects. Every
disagreement is listed with a reproducer shrunk to what still disagrees, and fails the test.
Named exceptions, counted in the output, only where the oracle cannot express a construct:
flows to an FQDN (Cilium learns a name's addresses from its DNS proxy at run time) and flows an
L7 rule sends to Cilium's proxy (compared at L4; the proxy's verdict per request is not asked).

TOPOGATE_ORACLE_CASES (default 170, about 1,300 flows) sets how many cases; TOPOGATE_ORACLE_SEED
the first seed; TOPOGATE_ORACLE_SHRINK_S the seconds spent shrinking.
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from cilium_cases import case
from cilium_compare import Tally, compare_case, klass, shrink
from cilium_proofs import ProofTally, run_inventory, settings_variants
from cilium_support import CiliumOracle
from conftest import REPO

CASES = int(os.environ.get("TOPOGATE_ORACLE_CASES", "170"))
SEED = int(os.environ.get("TOPOGATE_ORACLE_SEED", "0"))
SHRINK_S = float(os.environ.get("TOPOGATE_ORACLE_SHRINK_S", "90"))
MIN_QUERIES = 1000


def test_trace_agrees_with_cilium(cilium_oracle: CiliumOracle, tmp_path: Path,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    tally = Tally()
    for seed in range(SEED, SEED + CASES):
        compare_case(seed, case(seed), cilium_oracle, tmp_path / "case", tally)
    deadline = time.monotonic() + SHRINK_S
    shown = [shrink(d, cilium_oracle, tmp_path / "shrink", deadline) for d in tally.disagreements]
    for d in shown:
        d.klass = klass(d, cilium_oracle)
    by_class = Counter(d.klass for d in shown)
    lines = [f"cilium oracle: {tally.cases} cases, {tally.queries} flows compared, {tally.agreed} agree, "
             f"{len(shown)} disagree; {tally.refused} policies the agent refuses; "
             f"{cilium_oracle.cases} oracle cases in {cilium_oracle.seconds:.1f} s"]
    lines += [f"  exception: {name}: {n}" for name, n in sorted(tally.exceptions.items())]
    lines += [f"  disagreements: {name}: {n}" for name, n in sorted(by_class.items())]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
        for d in shown:
            print(d.render())
    if CASES >= 170:
        assert tally.queries >= MIN_QUERIES, "the generator asks too few flows"
    assert not shown, f"{len(shown)} flows where topogate and Cilium v1.20.2 disagree (listed above)"


PROOF_LIMIT = int(os.environ.get("TOPOGATE_ORACLE_PROOF_FLOWS", "150"))  # per inventory and agent


@pytest.mark.parametrize("inventory", ["fixtures/lab/inventory.yaml", "fixtures/multi/inventory.yaml"])
def test_checks_proofs_agree_with_cilium(inventory: str, cilium_oracle: CiliumOracle, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """The policies `topogate generate` writes, under agents of several settings: every flow the
    proofs decide (a sample of PROOF_LIMIT each) as Cilium decides it."""
    tally = ProofTally()
    rnd = random.Random(SEED)
    for settings, block in settings_variants(rnd):
        run_inventory(REPO / inventory, settings, block, tmp_path, monkeypatch, cilium_oracle, rnd, PROOF_LIMIT, tally)
    with capsys.disabled():
        print(f"\ncilium oracle, check's proofs over {inventory}'s generated tree: {tally.asked} flows asked, "
              f"{tally.agreed} agree, {len(tally.disagreements)} disagree, {tally.skipped} not expressible "
              "(an FQDN or a CIDR range)")
        for d in tally.disagreements:
            print("  " + d)
    assert tally.asked >= 100
    assert not tally.disagreements
