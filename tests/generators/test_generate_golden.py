"""Golden trees: the bundled examples must generate exactly fixtures/golden/<case>/.

The golden tree is rendered with OUT = the golden directory itself, so the overlays' relative
paths to the bases are the ones a user gets, and the golden tree builds with kubectl as it is.
A missing golden tree fails; only `pytest --update-golden` (re)writes it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES, GOLDEN

from topogate.generators import render_tree
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

CASES = ["lab", "multi"]


@pytest.mark.parametrize("case", CASES)
def test_golden_tree(case: str, update_golden: bool) -> None:
    inv = load_inventory(str(FIXTURES / case / "inventory.yaml"))
    golden = GOLDEN / case
    files = render_tree(inv, str(golden))
    if update_golden:
        writer.write_tree(golden, files)
        return
    if not golden.is_dir():
        pytest.fail(f"no golden tree at {golden}; run `pytest --update-golden` and review it")
    diffs = writer.diff_tree(golden, files)
    if diffs:
        first = next((p for s, p in diffs if s == "changed"), None)
        detail = ""
        if first:
            import difflib

            old = (golden / first).read_text().splitlines()
            new = files[first].decode().splitlines()
            detail = "\n".join(list(difflib.unified_diff(old, new, "golden", "now", lineterm=""))[:60])
        pytest.fail(f"{case}: generated tree differs from {golden} (run `pytest --update-golden` if "
                    f"intended): {diffs}\n{detail}")


def test_golden_has_no_stray_files() -> None:
    # Each golden case must belong to a fixture with an inventory (no orphaned trees).
    for d in sorted(Path(GOLDEN).iterdir()) if GOLDEN.is_dir() else []:
        assert d.name in CASES, f"{d} has no test case"
