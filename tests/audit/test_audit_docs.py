"""docs/audit.md's sample console block is what its command line prints against moto_server
(the same stand-in for Cost Explorer as tests/audit/test_audit_moto.py), PATH included."""

from __future__ import annotations

import re
import shlex

import pytest

pytest.register_assert_rewrite("audit_support")
pytest_plugins = ["audit_support"]
from audit_support import AUDIT_FIXTURES, Moto  # noqa: E402
from conftest import invoke  # noqa: E402
from test_audit_moto import three_pages  # noqa: E402

DOC = AUDIT_FIXTURES.parent.parent / "docs" / "audit.md"


def test_the_sample_block_is_what_its_command_prints(moto_ce: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    block = re.search(r"```\n\$ (topogate audit egress [^\n]*)\n(.*?)\$ echo \$\?\n(\d+)\n```",
                      DOC.read_text(), re.S)
    assert block, "docs/audit.md has no sample console block"
    argv = shlex.split(block.group(1))[1:]
    assert "[PATH" not in block.group(1)  # a command a reader can paste
    monkeypatch.chdir(AUDIT_FIXTURES.parent.parent)
    moto_ce.seed(*three_pages())
    res = invoke(*argv)
    assert (res.stdout, res.exit_code) == (block.group(2), int(block.group(3))), res.stderr
