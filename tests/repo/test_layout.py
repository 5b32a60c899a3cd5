"""tests/ has one folder per layer of topogate/ (and a few more), as tests/tools/layout.py lays
them out: no test module sits flat in tests/, none sits in a folder the layout does not have or
against its table, and no two share a file name (pytest imports each by its bare name)."""

from __future__ import annotations

import importlib.util
from collections import Counter
from pathlib import Path
from types import ModuleType

TESTS = Path(__file__).resolve().parent.parent
HOW = "give it a folder in tests/tools/layout.py and run `python3 tests/tools/layout.py`"


def _layout() -> ModuleType:
    spec = importlib.util.spec_from_file_location("layout", TESTS / "tools" / "layout.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LAYOUT = _layout()


def _modules() -> list[Path]:
    return sorted(p for p in TESTS.glob("*/test_*.py"))


def test_no_test_module_sits_flat_in_tests() -> None:
    flat = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert not flat, f"flat in tests/: {', '.join(flat)}: {HOW}"


def test_each_test_module_sits_in_a_folder_of_the_layout_and_where_its_table_says() -> None:
    misplaced = []
    for p in _modules():
        want = LAYOUT.folder_of(p.name)
        if p.parent.name not in LAYOUT.LAYOUT or (want is not None and want != p.parent.name):
            misplaced.append(f"{p.relative_to(TESTS)} (the layout says {want or 'nothing'})")
    assert not misplaced, f"{'; '.join(misplaced)}: {HOW}"


def test_no_two_test_modules_share_a_name() -> None:
    twice = [n for n, k in Counter(p.name for p in _modules()).items() if k > 1]
    assert not twice, f"test modules named alike in two folders: {', '.join(twice)}"


def test_a_moved_module_finds_what_it_found_before() -> None:
    f = "Path(__file__)"  # spelled apart, so that running the layout over this file leaves these cases be
    assert LAYOUT.deeper(f"{f}.resolve().parents[1] / 'fixtures'") == f"{f}.resolve().parents[2] / 'fixtures'"
    assert LAYOUT.deeper(f"{f}.resolve().parent.parent") == f"{f}.resolve().parent.parent.parent"
    assert LAYOUT.deeper(f"str({f}.parent)") == f"str({f}.parent.parent)"
    assert LAYOUT.deeper(f"{f}.parents[0]") == f"{f}.parents[1]"
    t = "tests/"
    assert LAYOUT.renamed(f"see {t}test_docs.py::x and `{t}test_cluster_*.py`") == \
        f"see {t}docs/test_docs.py::x and `{t}oracles/test_cluster_*.py`"
    # a glob over modules of two folders stays as it was; so does a name the table does not know
    assert LAYOUT.renamed(f"{t}test_hostile_*.py {t}test_x.py") == f"{t}test_hostile_*.py {t}test_x.py"
