"""examples/: every template is listed in its README, and the Argo CD plugin image's build
context (the repository root) leaves out what `pip install .` does not read."""

from __future__ import annotations

import fnmatch
import subprocess

from conftest import REPO

EXAMPLES = REPO / "examples"


def test_every_example_is_in_the_readme_table() -> None:
    readme = (EXAMPLES / "README.md").read_text()
    rows = [line for line in readme.splitlines() if line.startswith("| `")]
    named = " ".join(rows)
    missing = []
    for p in sorted(EXAMPLES.iterdir()):
        if p.name == "README.md":
            continue
        if p.is_dir():
            files = [f"{p.name}/{f.name}" for f in sorted(p.iterdir())]
            if f"`{p.name}/`" not in named and not all(f"`{f}`" in named for f in files):
                missing.append(p.name + "/")
        elif f"`{p.name}`" not in named:
            missing.append(p.name)
    assert missing == [], f"examples/README.md's table omits {missing}"


def _ignored(patterns: list[str], path: str) -> bool:
    """Whether the docker build context leaves out `path` (a top-level name or a nested path):
    the subset of .dockerignore syntax the file uses (no `!` exceptions)."""
    parts = path.split("/")
    for pat in patterns:
        bare = pat.removeprefix("**/")
        for i in range(len(parts)):
            prefix = "/".join(parts[: i + 1])
            if fnmatch.fnmatchcase(prefix, pat) or (pat.startswith("**/") and fnmatch.fnmatchcase(parts[i], bare)):
                return True
    return False


def test_dockerignore_keeps_the_history_and_virtualenv_out_of_the_image_context() -> None:
    patterns = [line.strip() for line in (REPO / ".dockerignore").read_text().splitlines()
                if line.strip() and not line.startswith("#")]
    assert not any(p.startswith("!") for p in patterns)  # _ignored does not model exceptions
    for out in (".git", ".venv", ".venv/bin/python", "topogate/__pycache__/x.pyc", "topogate.egg-info"):
        assert _ignored(patterns, out), out
    # what `pip install /src/topogate` needs: the project file, the package, its schemas
    tracked = subprocess.run(["git", "ls-files", "pyproject.toml", "README.md", "topogate"], cwd=REPO,
                             capture_output=True, text=True, check=True).stdout.split()
    assert "pyproject.toml" in tracked and any(t.startswith("topogate/schemas/") for t in tracked)
    assert [t for t in tracked if _ignored(patterns, t)] == []
    assert "dockerignore" in (EXAMPLES / "argocd-cmp" / "Dockerfile").read_text()
