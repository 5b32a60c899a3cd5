"""Every well-known string has one home.

A label key, an annotation, an API version or a device resource that two modules each spell out
drifts: one copy gains Gaudi's GPUs and the other does not, and `--live` counts 0 GPUs on a node
`check` counts as 8. The homes are the modules below; anywhere else in topogate/ such a string
is imported by name, never written again (docstrings and comments may name it).
"""

from __future__ import annotations

import ast
import re

from conftest import REPO

PACKAGE = REPO / "topogate"
# The modules that own well-known strings: the label contract and Kubernetes' well-known labels,
# Kueue's API vocabulary, the device resources counted as GPUs.
HOMES = ("topogate/core/labels.py", "topogate/k8s/kueue.py", "topogate/k8s/quantity.py",
         "topogate/k8s/kustomization.py")
# A label, annotation or resource key with a DNS prefix ("example.com/name"), or an API version.
WELL_KNOWN = re.compile(r"[a-z0-9]([-a-z0-9.]*[a-z0-9])?\.[a-z]{2,}/[-A-Za-z0-9_.]+")


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the constant nodes that are docstrings."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _strings(node: ast.AST) -> list[str]:
    """The strings a module-level constant is made of (a string, or a tuple/list/set of them)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _module_constants(tree: ast.Module) -> list[tuple[str, str, int]]:
    """(name, value, line) of each module-level NAME = "well-known string"."""
    out = []
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign | ast.AnnAssign) and stmt.value is not None:
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out.extend((t.id, v, stmt.lineno) for v in _strings(stmt.value) if WELL_KNOWN.fullmatch(v))
    return out


def violations(sources: dict[str, str]) -> list[str]:
    """Each place a home's string is written again, and each well-known string two modules define."""
    trees = {rel: ast.parse(text, rel) for rel, text in sources.items()}
    owned: dict[str, str] = {}  # value -> "home:NAME"
    for home in HOMES:
        tree = trees[home]
        for stmt in tree.body:
            if isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name):
                value = stmt.value
                if isinstance(value, ast.JoinedStr):
                    continue  # built from another constant of the home: checked through that one
                for v in _strings(value):
                    if WELL_KNOWN.fullmatch(v):
                        owned[v] = f"{home}:{stmt.targets[0].id}"
    # f"{GROUP}/..." constants of a home: their values, read by importing the home is not
    # possible here (no imports of topogate in a source scan), so they are owned as evaluated.
    owned.update(_formatted(trees))
    found: list[str] = []
    defined: dict[str, list[str]] = {}
    for rel, tree in sorted(trees.items()):
        for name, value, line in _module_constants(tree):
            defined.setdefault(value, []).append(f"{rel}:{line} {name}")
        if rel in HOMES:
            continue
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
                    and node.value in owned):
                found.append(f"{rel}:{node.lineno}:{node.col_offset + 1}: spells {node.value!r}; "
                             f"import {owned[node.value]}")
    for value, places in sorted(defined.items()):
        folders = {p.split(":")[0].rsplit("/", 1)[0] for p in places}
        if len(folders) > 1:
            found.append(f"{value!r} defined in {len(folders)} folders: " + ", ".join(places))
    return found


def _formatted(trees: dict[str, ast.Module]) -> dict[str, str]:
    """Values of a home's NAME = f"{OTHER}/suffix" constants, OTHER a plain string of that home."""
    out: dict[str, str] = {}
    for home in HOMES:
        plain: dict[str, str] = {}
        for stmt in trees[home].body:
            if not (isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Name)):
                continue
            name, value = stmt.targets[0].id, stmt.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                plain[name] = value.value
            elif isinstance(value, ast.JoinedStr):
                parts = []
                for v in value.values:
                    if isinstance(v, ast.Constant):
                        parts.append(str(v.value))
                    elif (isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Name)
                          and v.value.id in plain):
                        parts.append(plain[v.value.id])
                    else:
                        break
                else:
                    plain[name] = "".join(parts)
                    out[plain[name]] = f"{home}:{name}"
    return out


def _package_sources() -> dict[str, str]:
    return {p.relative_to(REPO).as_posix(): p.read_text(encoding="utf-8") for p in sorted(PACKAGE.rglob("*.py"))}


def test_every_well_known_string_has_one_home() -> None:
    found = violations(_package_sources())
    assert not found, "\n".join(found)


def test_a_deliberate_copy_is_found() -> None:
    """The control: a second definition of a GPU resource, and a label spelled out, each fail."""
    sources = _package_sources()
    sources["topogate/live/copy.py"] = ('"""A copy."""\nGPUS = ("nvidia.com/gpu", "amd.com/gpu")\n'
                                        'def f(labels):\n    return labels.get("topogate.dev/workload")\n')
    sources["topogate/analysis/copy.py"] = 'HOST = "kubernetes.io/hostname"\n'
    found = violations(sources)
    assert any(f.startswith("topogate/live/copy.py:2:9: spells 'nvidia.com/gpu'") for f in found), found
    assert any(f.startswith("topogate/live/copy.py:4:23: spells 'topogate.dev/workload'; "
                            "import topogate/core/labels.py:WORKLOAD_LABEL") for f in found), found
    assert any(f.startswith("topogate/analysis/copy.py:1:8: spells 'kubernetes.io/hostname'") for f in found), found
    assert any(f.startswith("'kubernetes.io/hostname' defined in 2 folders") for f in found), found


def test_the_homes_exist() -> None:
    assert all((REPO / h).is_file() for h in HOMES)
