"""The npm tools the tests drive (tests/node: mermaid-cli, yaml-language-server, pinned by its
package-lock.json and installed by `make node-tools`), and the one rule for when one is missing:
the calling test skips with how to get it, except under TOPOGATE_REQUIRE_RENDER=1 (CI), where
that is a failure."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
BIN = NODE_DIR / "node_modules" / ".bin"


def render_required() -> bool:
    """CI sets TOPOGATE_REQUIRE_RENDER=1: there a missing node tool fails instead of skipping."""
    return os.environ.get("TOPOGATE_REQUIRE_RENDER", "") not in ("", "0")


def missing(problem: str, how: str) -> None:
    """Skip the calling test for `problem`, saying `how` to mend it; fail it when required."""
    if render_required():
        pytest.fail(f"{problem} and TOPOGATE_REQUIRE_RENDER is set: {how}", pytrace=False)
    pytest.skip(f"{problem}: {how}")
