"""The bad-inventory corpus: every case reports exactly its expected problems, all at once."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from topogate.inventory.loader import InventoryError
from topogate.sources.inventory import load_inventory

BAD = Path(__file__).resolve().parents[2] / "fixtures" / "bad"
CASES = sorted(p.name for p in BAD.iterdir() if p.is_dir() and not p.name.startswith("_"))


def _report(case: Path) -> str:
    cwd = os.getcwd()
    os.chdir(case)
    try:
        load_inventory("inventory.yaml")
    except InventoryError as e:
        return str(e) + "\n"
    finally:
        os.chdir(cwd)
    return "LOADED OK\n"


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 15


@pytest.mark.parametrize("case", CASES)
def test_bad_inventory(case: str, request: pytest.FixtureRequest) -> None:
    got = _report(BAD / case)
    expected_file = BAD / case / "expected.txt"
    if request.config.getoption("--update-golden", default=False):
        expected_file.write_text(got)
    assert expected_file.exists(), f"missing {expected_file}: run pytest --update-golden and review it"
    assert got != "LOADED OK\n", "a bad inventory loaded"
    assert got == expected_file.read_text()
    for line in got.splitlines():
        # every problem names file:line:column
        file, ln, col, _ = line.split(":", 3)
        # the inventory itself, or the base manifest the problem is in
        assert file == "inventory.yaml" or file.startswith("../_bases/"), line
        assert int(ln) >= 1 and int(col) >= 1
