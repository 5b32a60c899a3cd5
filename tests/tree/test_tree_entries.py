"""writer.tree_entries (one scandir walk, one lstat per file) lists and compares a tree exactly
as the os.walk/pathlib code it replaced did; check's drift refuses the same special files.

The reference functions below are that former code, kept here only to compare against, on
random trees holding what a pull request can plant in OUT: nested and empty directories,
symlinks to files, to directories and to nowhere, FIFOs, files of the right size but other
bytes, and a directory that cannot be listed.
"""

from __future__ import annotations

import os
import random
import stat
from collections.abc import Mapping
from pathlib import Path

import pytest

from topogate.check.drift import refuse_special_files
from topogate.check.errors import CheckInputError
from topogate.safeio import limits
from topogate.tree import writer


def _reference_walk(out: Path, errors: list[str] | None = None) -> list[str]:
    found: list[str] = []

    def failed(e: OSError) -> None:
        if errors is not None:
            errors.append(f"{Path(e.filename or out).relative_to(out).as_posix()}: {e.strerror or e}")

    for dirpath, dirnames, filenames in os.walk(out, onerror=failed):
        rel = Path(dirpath).relative_to(out)
        for d in list(dirnames):
            if os.path.islink(os.path.join(dirpath, d)):
                dirnames.remove(d)
                filenames.append(d)
        for f in filenames:
            found.append((rel / f).as_posix())
    return sorted(found)


def _reference_diff_tree(out: Path, files: Mapping[str, bytes]) -> list[tuple[str, str]]:
    on_disk = set(_reference_walk(out)) if out.is_dir() else set()
    result: list[tuple[str, str]] = []
    for p in sorted(on_disk | set(files)):
        if p not in files:
            result.append(("removed", p))
        elif p not in on_disk:
            result.append(("added", p))
        else:
            same = False
            try:
                st = os.lstat(out / p)
                if stat.S_ISREG(st.st_mode) and st.st_size == len(files[p]):
                    same = (out / p).read_bytes() == files[p]
            except OSError:
                pass
            if not same:
                result.append(("changed", p))
    return result


def _reference_refusal(out: Path, files: Mapping[str, bytes]) -> str | None:
    for rel in files:
        try:
            st = os.lstat(out / rel)
        except OSError:
            continue
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISREG(st.st_mode) or st.st_size > limits.current().max_file_bytes:
            return str(out / rel)
    return None


def _random_tree(rng: random.Random, out: Path) -> dict[str, bytes]:
    """A tree on disk and what `generate` would write there: overlapping, not equal."""
    files: dict[str, bytes] = {}
    dirs = [""]
    for i in range(rng.randint(5, 40)):
        d = rng.choice(dirs)
        name = f"{d}{rng.choice('abcxyz')}{i}"
        what = rng.random()
        body = rng.choice([b"", b"kind: A\n", b"kind: B\n", b"x" * rng.randint(1, 30)])
        if what < 0.2:
            os.makedirs(out / name, exist_ok=True)
            dirs.append(name + "/")
            continue
        if what < 0.7:
            (out / name).parent.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(body)
        elif what < 0.78:
            os.symlink(rng.choice(["/nonexistent", str(out / dirs[-1]) if dirs[-1] else "/", "f"]), out / name)
        elif what < 0.85:
            os.mkfifo(out / name)
        elif what < 0.9:
            target = rng.choice(dirs)
            os.symlink(str(out / target) if target else str(out), out / name)
            if rng.random() < 0.5:  # generate writes below what OUT has as a linked directory
                files[f"{name}/inner.yaml"] = b"kind: A\n"
        # what generate writes: the same bytes, other bytes of the same length, or none
        r = rng.random()
        if r < 0.5:
            files[name] = body
        elif r < 0.7:
            files[name] = bytes(reversed(body)) if body else b"y"
        elif r < 0.8:
            files[name] = body + b"#"
    for i in range(rng.randint(0, 5)):
        files[f"{rng.choice(dirs)}new{i}.yaml"] = b"kind: N\n"
    return dict(sorted(files.items()))


@pytest.mark.parametrize("seed", range(40))
def test_tree_entries_compare_as_the_walk_did(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    out = tmp_path / "out"
    out.mkdir()
    files = _random_tree(rng, out)
    assert sorted(writer.tree_entries(out)) == _reference_walk(out)
    entries = writer.tree_entries(str(out))
    assert writer.diff_tree(out, files, entries) == _reference_diff_tree(out, files)
    assert writer.diff_tree(out, files) == _reference_diff_tree(out, files)
    # Every refusal in turn: drop the file refused and ask again, down to a tree refused nowhere.
    left = dict(files)
    while True:
        want = _reference_refusal(out, left)
        try:
            refuse_special_files(str(out), left, entries)
            got = None
        except CheckInputError as e:
            got = str(e).split(": is ", 1)[0]
        assert got == want
        if want is None:
            break
        del left[Path(want).relative_to(out).as_posix()]


@pytest.mark.skipif(os.geteuid() == 0, reason="needs a directory the test user cannot list, and root can list a mode-000 directory: run the tests as a user other than root")
def test_unlistable_directory_is_reported_as_before(tmp_path: Path) -> None:
    out = tmp_path / "out"
    (out / "a" / "locked").mkdir(parents=True)
    (out / "a" / "locked" / "f.yaml").write_text("x")
    (out / "a" / "g.yaml").write_text("y")
    os.chmod(out / "a" / "locked", 0)
    try:
        mine: list[str] = []
        theirs: list[str] = []
        assert sorted(writer.tree_entries(out, mine)) == _reference_walk(out, theirs)
        assert mine == theirs and mine
    finally:
        os.chmod(out / "a" / "locked", 0o700)


def test_unlistable_root_and_missing_tree(tmp_path: Path) -> None:
    mine: list[str] = []
    theirs: list[str] = []
    assert sorted(writer.tree_entries(tmp_path / "nope", mine)) == _reference_walk(tmp_path / "nope", theirs)
    assert mine == theirs
    files = {"a.yaml": b"x"}
    assert writer.diff_tree(tmp_path / "nope", files) == _reference_diff_tree(tmp_path / "nope", files)
