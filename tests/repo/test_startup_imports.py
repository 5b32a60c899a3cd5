"""What `topogate generate` imports: not the reporters, not jsonschema.

Each of them cost a small generate more than its YAML writing (issue 11): the reporters came
in through report.escape's package, jsonschema through the inventory schema, which now
checks a clean inventory without it (inventory/quickschema.py). Run in a fresh interpreter,
as users run the CLI.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import FIXTURES

from topogate.report import FORMATS, REPORTERS

PROBE = """
import sys
from click.testing import CliRunner
from topogate.cli import main
r = CliRunner().invoke(main, ["generate", sys.argv[1], "-o", sys.argv[2]])
assert r.exit_code == 0, r.output
print(" ".join(sorted(m for m in sys.modules if m.startswith(("jsonschema", "topogate.report")))))
"""


def test_generate_imports_neither_reporters_nor_jsonschema(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-c", PROBE, str(FIXTURES / "multi" / "inventory.yaml"),
                           str(tmp_path / "out")], capture_output=True, text=True, env=env,
                          check=True)
    assert proc.stdout.split() == ["topogate.report"]  # the format names only, no reporter


def test_format_names_are_the_registry() -> None:
    assert FORMATS == tuple(REPORTERS)
