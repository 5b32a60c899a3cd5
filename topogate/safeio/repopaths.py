"""Where topogate may read: the repositories of its inputs, walked once, symlinks resolved once.

A pull request can commit symlinks: to /dev/zero, to ~/.ssh, to an ancestor directory (a loop
that made the old recursive walk read each file once per lap). Every path read is resolved to
its real location first and must lie inside one of the allowed roots: the repository holding
each PATH (and the inventory, and the rendered tree). A directory reached twice is walked once;
one reached again from inside itself is a loop and refused.
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from topogate.core.position import Position
from topogate.safeio import gitrun
from topogate.safeio.saferead import InputError, is_generated, read_text

KUSTOMIZATION_FILES = ("kustomization.yaml", "kustomization.yml", "Kustomization")
# What `kubectl apply -f DIR` and an Argo CD directory application read: YAML and JSON.
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")


def display(p: str | os.PathLike[str]) -> str:
    """Paths in findings: relative to the working directory when below it (for annotations)."""
    text = os.fspath(p)
    if text and not os.path.isabs(text):
        # relpath of a relative path that stays below the working directory is its normpath;
        # spared the two abspaths and the component walk (a narrowed check asks 20,000 times)
        short = os.path.normpath(text)
        if not short.startswith(".."):
            return short
    try:
        rel = os.path.relpath(p)
    except ValueError:  # pragma: no cover - another drive on Windows
        return str(p)
    return rel if not rel.startswith("..") else str(p)


def repo_root(path: str | os.PathLike[str]) -> Path:
    """The repository a path belongs to: the nearest directory above it holding .git; outside
    any repository the working directory when the path is below it, else the path itself (its
    directory for a file)."""
    # The PATH's own place decides, not where a symlink at it points (that is checked later).
    here = Path(os.path.abspath(path))
    start = Path(os.path.realpath(here.parent))
    if here.is_dir() and not here.is_symlink():
        start = start / here.name
    for p in (start, *start.parents):
        if (p / ".git").exists():
            return p
    cwd = Path(os.path.realpath(os.getcwd()))
    if start == cwd or cwd in start.parents:
        return cwd
    return start


@dataclass(frozen=True)
class Roots:
    """The directories (real paths) inside which reading is allowed."""

    dirs: tuple[Path, ...]

    @classmethod
    def of(cls, paths: Iterable[str | os.PathLike[str]]) -> Roots:
        return cls(tuple(sorted({repo_root(p) for p in paths})))

    @functools.cached_property
    def _prefixes(self) -> tuple[tuple[str, str], ...]:
        return tuple((str(d), str(d).rstrip("/") + "/") for d in self.dirs)

    def holds(self, real: str | Path) -> bool:
        """Whether a real path (absolute, no symlink, no `..`) is one of the roots or below one.
        Compared as text: the same answer as `d in real.parents`, without building Paths."""
        text = str(real)
        for d, below in self._prefixes:
            if text == d or text.startswith(below):
                return True
        return False

    @functools.cached_property
    def _real_dirs(self) -> dict[str, str]:
        return {}

    def realpath(self, path: str | os.PathLike[str]) -> str:
        """os.path.realpath(path), resolving each directory once per collect (a tree of
        thousands of kustomizations names the same parents thousands of times, each component
        a stat). realpath(dir/name) is realpath(realpath(dir)/name): the components resolve in
        order, so only the last one is new; and realpath(dir/..) is the parent of
        realpath(dir) (`..` applies to what came before it, resolved: `base: ../../bases/x`
        costs no stat of each parent again)."""
        return self.real_mode(os.fspath(path))[0]

    def real_mode(self, text: str) -> tuple[str, int | None]:
        """(realpath(text), the st_mode of its last component when that was looked at here and
        is no symlink, else None): spares the caller a second stat to tell a directory."""
        head, name = os.path.split(text)
        if not head or head == text or not name:
            return os.path.realpath(text), None
        real_head = self.real_dir(head)
        if name == ".":
            return real_head, None
        if name == "..":
            return os.path.dirname(real_head), None
        # os.path.join(real_head, name) for a name with no slash (split's), spared the call
        joined = real_head + name if not real_head or real_head.endswith("/") else f"{real_head}/{name}"
        try:
            mode = os.lstat(joined).st_mode
        except OSError:
            return joined, None  # as realpath: a missing component is kept as written
        return (os.path.realpath(joined), None) if stat.S_ISLNK(mode) else (joined, mode)

    def real_dir(self, text: str) -> str:
        """realpath(text) of a directory, remembered: the paths below it resolve from it."""
        cache = self._real_dirs
        real = cache.get(text)
        if real is None:
            real = cache[text] = self.real_mode(text)[0]
        return real

    def remember_dir(self, text: str, real: str) -> None:
        """Note real_mode(text)[0], just asked of a directory, as its real_dir (a tree's walk
        asks for each directory it names again when it checks it)."""
        self._real_dirs.setdefault(text, real)

    def check(self, path: Path, where: Position, what: str) -> Path:
        """The real path of `path`, or InputError if it lies outside every root."""
        return Path(self.check_text(os.fspath(path), where, what)[0])

    def check_text(self, text: str, where: Position, what: str) -> tuple[str, int | None]:
        """check() without Paths: (real path, st_mode or None as real_mode gives it)."""
        real, mode = self.real_mode(text)
        if not self.holds(real):
            shown = ", ".join(str(d) for d in self.dirs)
            raise InputError(where, (
                f"{what} resolves to {real}, outside the repository ({shown}); topogate reads "
                "nothing outside it: vendor the file into the repository"))
        if _in_git_dir(real):
            raise InputError(where, (
                f"{what} resolves to {real}, inside a .git directory, which holds the "
                "repository's configuration and the CI job's token: nothing there is read"))
        return real, mode

    @functools.cached_property
    def _tracked(self) -> dict[str, frozenset[str] | None]:
        return {}

    def untracked(self, real: str) -> str | None:
        """Why the file at `real` (a real path inside the roots) may not be read, or None.

        In a git work tree only the files git tracks are read, and those `topogate generate`
        wrote (they carry its header): a CI checkout also holds what earlier steps wrote beside
        the pull request (a cloud credential, a token file), and what kustomize reads can reach
        a report. Outside a work tree every file inside the roots is read."""
        root = next((d for d, below in self._prefixes if real == d or real.startswith(below)), None)
        if root is None:
            return None
        if root not in self._tracked:
            try:
                self._tracked[root] = gitrun.tracked_files(root) if _is_work_tree(root) else None
            except gitrun.GitFailed as e:
                return (f"cannot tell whether git tracks it: {e}; topogate reads only tracked "
                        "files in a git work tree")
        files = self._tracked[root]
        if files is None or real in files or is_generated(real):
            return None
        return ("is not tracked by git: in a git work tree topogate and kustomize read only "
                "tracked files (a CI checkout also holds files earlier steps wrote, such as "
                "credentials); `git add` it (`git add -N` will do), or move it out of the tree")

    def check_tracked(self, real: str, where: Position, what: str) -> None:
        """InputError when the file at `real` is one `untracked` refuses."""
        why = self.untracked(real)
        if why is not None:
            raise InputError(where, f"{what} {why}")


def _is_work_tree(root: str) -> bool:
    """Whether `root` holds a git repository (a .git directory with a HEAD, or a .git file
    naming one, as a worktree or submodule has); an empty `.git` marks no repository."""
    dot = os.path.join(root, ".git")
    if os.path.isdir(dot):
        return os.path.isfile(os.path.join(dot, "HEAD"))
    try:
        with open(dot, "rb") as fh:
            return fh.read(8) == b"gitdir: "
    except OSError:
        return False


def _in_git_dir(real: str) -> bool:
    return "/.git" in real and (real.endswith("/.git") or "/.git/" in real)


def read_input(path: str | os.PathLike[str], shown: str | None = None, *,
               tracked: bool = True) -> str:
    """The text of one input named on the command line (the inventory, a snapshot), under the
    limits every manifest has: it must resolve inside its own repository (a symlink to
    /dev/zero or ~/.ssh is refused, not read and quoted), never into .git, be a regular file
    (a FIFO is refused, not waited on) no larger than the file limit, and, with `tracked`, be
    tracked by git in a git work tree. `shown` names it in messages (default: as written)."""
    shown = os.fspath(path) if shown is None else shown
    where = Position(shown, 1, 1)
    if not os.path.lexists(path):
        raise InputError(where, "cannot read: no such file or directory")
    roots = Roots.of([path])
    real = roots.check(Path(path), where, shown)
    if tracked:
        roots.check_tracked(str(real), where, shown)
    return read_text(real, shown)


def kustomization_file(d: Path) -> Path | None:
    return next((d / n for n in KUSTOMIZATION_FILES if os.path.lexists(d / n)), None)


@dataclass(frozen=True)
class WalkUnit:
    """One thing to read, in walk order: a YAML file, or a kustomization directory to build."""

    path: Path  # as reached (for display)
    real: Path
    kustomization: bool


def walk(raw: str, roots: Roots, other: list[Path] | None = None) -> Iterator[WalkUnit]:
    """The manifest files (.yaml, .yml, .json) and top-most kustomization directories of one
    PATH, in sorted order; the files of other extensions met go to `other`.

    Iterative (a 1,100-deep tree must not exhaust Python's stack); dot-entries are skipped."""
    top = Path(raw)
    where = Position(raw, 1, 1)
    if not os.path.lexists(top):
        raise InputError(where, "no such file or directory")
    real = roots.check(top, where, raw)
    if not real.is_dir():
        yield WalkUnit(top, real, False)
        return
    seen: set[Path] = set()
    # Each frame: the directory's real path, its remaining entries (reversed, to pop in order)
    # and the real paths of the directories above it, to tell a loop from a second route to
    # the same place. Only symlinks are resolved: a plain entry's real path is its parent's
    # plus its name (resolving every entry again would make a deep tree quadratic).
    stack: list[tuple[Path, list[Path], frozenset[Path]]] = []

    def enter(d: Path, d_real: Path, chain: frozenset[Path]) -> WalkUnit | None:
        if d_real in chain:
            raise InputError(Position(display(d), 1, 1), (
                f"symlink loop: {display(d)} leads back to {d_real}; remove the symlink"))
        if d_real in seen:
            return None
        seen.add(d_real)
        if kustomization_file(d) is not None:
            return WalkUnit(d, d_real, True)
        try:
            entries = sorted(d.iterdir())
        except OSError as e:
            raise InputError(Position(display(d), 1, 1),
                             f"cannot read the directory: {e.strerror or e}") from None
        stack.append((d_real, [e for e in reversed(entries) if not e.name.startswith(".")],
                      chain | {d_real}))
        return None

    first = enter(top, real, frozenset())
    if first is not None:
        yield first
    while stack:
        parent_real, entries, chain = stack[-1]
        if not entries:
            stack.pop()
            continue
        child = entries.pop()
        try:
            is_dir = child.is_dir()
            is_link = child.is_symlink()
        except OSError as e:
            raise InputError(Position(display(child), 1, 1), f"cannot read: {e.strerror or e}") from None
        if not is_dir and child.suffix not in MANIFEST_SUFFIXES:
            if other is not None:
                other.append(child)
            continue
        child_real = parent_real / child.name
        if is_link:
            child_real = roots.check(child, Position(display(child), 1, 1), display(child))
        if is_dir:
            unit = enter(child, child_real, chain)
            if unit is not None:
                yield unit
        elif child_real not in seen:
            seen.add(child_real)
            yield WalkUnit(child, child_real, False)

__all__ = ["KUSTOMIZATION_FILES", "Roots", "WalkUnit", "MANIFEST_SUFFIXES", "display", "kustomization_file",
           "read_input", "repo_root", "walk"]
