"""The folders of `topogate` are layers (docs/architecture.md): each imports only from those below.

Read from the source with `ast`, every import (at module level or inside a function) is held to:
- no upward import, and no import between two folders of one layer;
- inside `analysis/`, the same for its parts (scheduling and netpolicy at the bottom, the map on
  top);
- no private name (`_x`) imported from another module;
- a name imported from another folder is in that module's `__all__` (its surface);
- no import inside a function unless a comment on it (or the line above) says `lazy:` and why
  (start-up time: tests/repo/test_startup_imports.py guards those), so none hides a cycle.
A deliberate violation of each fails the test (test_the_checker_catches_each_violation).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "topogate"

# Bottom first. A folder may import from its own folder and from any folder of a lower layer.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("core",),
    ("safeio",),
    ("k8s",),
    ("inventory",),
    ("sources",),
    ("gitops",),
    ("analysis", "generators"),
    ("policies",),
    ("tree",),
    ("report",),
    ("check",),
    ("trace",),
    ("diff",),
    ("replay",),
    ("audit",),
    ("live",),
    ("cli",),
)
# The parts of analysis/, bottom first (modules directly in analysis/ are named by their stem).
ANALYSIS: tuple[tuple[str, ...], ...] = (
    ("scheduling", "netpolicy"),
    ("result", "locate", "kueue"),
    ("placement",),
    ("proofs",),
    ("map",),
)


def _rank(table: tuple[tuple[str, ...], ...], part: str) -> int:
    return next(i for i, names in enumerate(table) if part in names)


@dataclass(frozen=True)
class Violation:
    module: str
    line: int
    what: str

    def __str__(self) -> str:
        return f"topogate/{self.module}:{self.line}: {self.what}"


def _folder(rel: str) -> str:
    return rel.split("/", 1)[0] if "/" in rel else ""


def _analysis_part(rel: str) -> str:
    parts = rel.split("/")
    return parts[1].removesuffix(".py") if len(parts) > 1 else ""


def _module_file(dotted: str, root: Path) -> Path | None:
    p = root.joinpath(*dotted.split(".")[1:])
    if p.with_suffix(".py").is_file():
        return p.with_suffix(".py")
    if (p / "__init__.py").is_file():
        return p / "__init__.py"
    return None


def _exports(path: Path) -> set[str] | None:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
                return {e.value for e in getattr(node.value, "elts", []) if isinstance(e, ast.Constant)}
    return None


def _inside_function(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    lines.add(sub.lineno)
    return lines


def _under_type_checking(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in ast.walk(node):
                if isinstance(sub, (ast.Import, ast.ImportFrom)):
                    lines.add(sub.lineno)
    return lines


def _said_lazy(lines: list[str], lineno: int) -> bool:
    """A `lazy:` comment on the import's line, or on the comment line just above the block of
    imports it belongs to."""
    if "lazy:" in lines[lineno - 1]:
        return True
    i = lineno - 2
    while i >= 0 and (lines[i].strip().startswith(("from ", "import ")) or not lines[i].strip()):
        if "lazy:" in lines[i]:
            return True
        i -= 1
    return i >= 0 and lines[i].strip().startswith("#") and "lazy:" in lines[i]


def violations(root: Path = PACKAGE) -> list[Violation]:
    found: list[Violation] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        text = path.read_text()
        src_lines = text.splitlines()
        tree = ast.parse(text)
        lazy = _inside_function(tree)
        typing_only = _under_type_checking(tree)
        here = _folder(rel)
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("topogate"):
                targets = [(node.module, a.name) for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [(a.name, "") for a in node.names if a.name.startswith("topogate")]
            else:
                continue
            if node.lineno in lazy and not _said_lazy(src_lines, node.lineno):
                found.append(Violation(rel, node.lineno, "an import inside a function without a "
                                                           "`lazy:` comment saying why"))
            for module, name in targets:
                dotted = module
                if name and _module_file(f"{module}.{name}", root) is not None:
                    dotted, name = f"{module}.{name}", ""  # `from topogate.x import submodule`
                target = _module_file(dotted, root)
                if target is None:
                    continue
                there_rel = target.relative_to(root).as_posix()
                there = _folder(there_rel)
                if name.startswith("_") and not name.startswith("__") and there_rel != rel:
                    found.append(Violation(rel, node.lineno, f"imports the private name {name} of {dotted}"))
                if not here or not there or here == "schemas":
                    continue
                if here != there:
                    up = _rank(LAYERS, there) - _rank(LAYERS, here)
                    if up >= 0 and node.lineno not in typing_only:
                        found.append(Violation(rel, node.lineno, (
                            f"imports {dotted} ({there}/), which is "
                            f"{'a layer above' if up else 'beside'} {here}/")))
                    exported = _exports(target)
                    if name and (exported is None or name not in exported):
                        found.append(Violation(rel, node.lineno, (
                            f"imports {name} from {dotted}, which is not in its __all__")))
                elif here == "analysis":
                    a, b = _analysis_part(rel), _analysis_part(there_rel)
                    if a != b and a and b and _rank(ANALYSIS, b) >= _rank(ANALYSIS, a):
                        found.append(Violation(rel, node.lineno, (
                            f"imports {dotted} (analysis/{b}), which is not below analysis/{a}")))
    return found


def test_the_layers_hold() -> None:
    found = violations()
    assert not found, "\n".join(map(str, found))


def test_the_checker_catches_each_violation(tmp_path: Path) -> None:
    """Each kind of violation, planted in a copy of two modules, is reported."""
    root = tmp_path / "topogate"
    for rel in ("core/__init__.py", "core/position.py", "safeio/__init__.py", "safeio/limits.py",
                "analysis/__init__.py", "analysis/netpolicy/__init__.py", "analysis/map/__init__.py",
                "analysis/map/build.py", "analysis/netpolicy/model.py"):
        dest = root / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text((PACKAGE / rel).read_text())
    (root / "__init__.py").write_text("")
    assert violations(root) == []
    (root / "core/position.py").write_text(
        (PACKAGE / "core/position.py").read_text()
        + "\nfrom topogate.safeio.limits import current\n"  # upward
        + "from topogate.safeio.limits import _env_int\n"  # private (and upward)
        + "def f() -> None:\n    from topogate.core import position\n")  # unexplained lazy import
    (root / "analysis/netpolicy/model.py").write_text(
        (PACKAGE / "analysis/netpolicy/model.py").read_text()
        + "\nfrom topogate.analysis.map import build\n")  # an upward part of analysis
    (root / "safeio/limits.py").write_text(
        (PACKAGE / "safeio/limits.py").read_text().replace("__all__", "_not_all")
        + "\nfrom topogate.core.position import Position as _P\n")
    what = sorted(v.what.split(" (")[0].split(",")[0] for v in violations(root))
    assert what == sorted([
        "an import inside a function without a `lazy:` comment saying why",
        "imports topogate.analysis.map.build",
        "imports topogate.safeio.limits",
        "imports topogate.safeio.limits",
        "imports current from topogate.safeio.limits",
        "imports _env_int from topogate.safeio.limits",
        "imports the private name _env_int of topogate.safeio.limits",
    ]), what
