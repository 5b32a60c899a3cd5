"""`topogate schema`: prints the shipped inventory schema, or writes it whole with -o."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import invoke

ROOT = Path(__file__).resolve().parent.parent.parent
SHIPPED = (ROOT / "topogate/schemas/inventory.schema.json").read_text()


def test_prints_the_shipped_schema() -> None:
    res = invoke("schema")
    assert res.exit_code == 0
    assert json.loads(res.output) == json.loads(SHIPPED)


def test_writes_it_where_the_docs_say(tmp_path: Path) -> None:
    out = tmp_path / ".topogate" / "inventory.schema.json"
    res = invoke("schema", "-o", str(out))
    assert res.exit_code == 0, res.output
    assert json.loads(out.read_text()) == json.loads(SHIPPED)
    assert [p.name for p in out.parent.iterdir()] == ["inventory.schema.json"]  # no temp file left


def test_an_unwritable_target_is_exit_2_and_leaves_nothing(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    res = invoke("schema", "-o", str(blocker / "inventory.schema.json"))
    assert res.exit_code == 2
    assert blocker.read_text() == "x"
