"""A module's `__all__` is its surface: every name in it is used by another module (of
topogate/, tests/ or benchmarks/), and is defined where it is listed. A name no other module
uses is either the module's own business (out of `__all__`) or dead code (gone)."""

from __future__ import annotations

import ast
import re

from conftest import REPO


def _all(tree: ast.Module) -> list[str]:
    for st in tree.body:
        if isinstance(st, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in st.targets):
            return [str(n) for n in ast.literal_eval(st.value)]
    return []


def unused_exports(sources: dict[str, str]) -> list[str]:
    """module: name for each name of a topogate module's __all__ that no other source names."""
    found = []
    words = {rel: re.findall(r"\w+", text) for rel, text in sources.items()}
    users: dict[str, set[str]] = {}  # word -> the sources that spell it
    for rel, ws in words.items():
        for w in set(ws):
            users.setdefault(w, set()).add(rel)
    for rel, text in sorted(sources.items()):
        if not rel.startswith("topogate/"):
            continue
        for name in _all(ast.parse(text, rel)):
            if words[rel].count(name) < 2:
                found.append(f"{rel}: {name} is listed but not defined")
            elif not users.get(name, set()) - {rel}:
                found.append(f"{rel}: {name} is used by no other module")
    return found


def _sources() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8")
            for d in ("topogate", "tests", "benchmarks") for p in sorted((REPO / d).rglob("*.py"))}


def test_every_export_is_used() -> None:
    found = unused_exports(_sources())
    assert not found, "\n".join(found)


def test_an_unused_export_is_found() -> None:
    """The control: a constant exported and used by nobody else fails."""
    name = "_".join(("SPARE", "NAME", "NOBODY", "USES"))  # not spelled whole here, or this file would use it
    sources = _sources()
    sources["topogate/core/spare.py"] = f'{name} = 1\n__all__ = ["{name}"]\n'
    assert unused_exports(sources) == [f"topogate/core/spare.py: {name} is used by no other module"]
