"""Shared pieces of the hostile-input tests: a scratch repository and the minimal bad inputs."""

from __future__ import annotations

import shutil
from pathlib import Path

from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fixtures" / "lab"


def make_repo(tmp: Path) -> Path:
    """A copy of the lab repository (inventory and base) with a .git marking its root."""
    repo = tmp / "repo"
    shutil.copytree(LAB, repo)
    (repo / ".git").mkdir()
    return repo


def invoke(*args: str) -> tuple[int, str, str]:
    return run_cli(*args)  # a traceback is itself the failure being tested for


def alias_bomb(levels: int = 9) -> str:
    """A billion-laughs ConfigMap: under 1 KB, 9**levels strings once expanded."""
    lines = ["apiVersion: v1", "kind: ConfigMap", "metadata: {name: bomb}", "data:",
             '  a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        lines.append(f"  a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]")
    return "\n".join(lines) + "\n"


def deep(levels: int) -> str:
    """A document nested `levels` block mappings deep."""
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: deep}\ndata:\n" + "".join(
        f"{'  ' * (i + 1)}k{i}:\n" for i in range(levels)) + f"{'  ' * (levels + 1)}v\n"
