"""The path shortcuts of the kustomization check give exactly what the plain calls give.

check_tree keeps paths as text and resolves them through Roots (each directory once, `..`
as the parent of what came before): these compare that with `str(Path(cur) / ref)` and
`os.path.realpath` on varied paths over a tree with symlinks, loops and missing parts, and
count the calls that made a tree of N overlays cost more than linear work.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.safeio.repopaths import Roots, display
from topogate.sources.kustomization import _join, check_tree

_PARTS = ["a", "b.yaml", ".", "..", "", "x y", ".hidden", "a\\b"]


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(cur=st.lists(st.sampled_from(_PARTS), max_size=4), ref=st.lists(st.sampled_from(_PARTS), max_size=4),
       lead=st.sampled_from(["", "/", "//"]))
def test_join_is_paths_own_join(cur: list[str], ref: list[str], lead: str) -> None:
    base = str(Path(lead + "/".join(cur))) if lead or cur else "."
    text = "/".join(ref)
    for r in (text, "/" + text, text + "/", "./" + text):
        assert _join(base, r) == str(Path(base) / r)


def _tree(root: Path) -> None:
    """Directories, files, symlinks to each, a link up, a loop, a dangling link."""
    (root / "d" / "e").mkdir(parents=True)
    (root / "d" / "f.yaml").write_text("a: 1\n")
    (root / "d" / "e" / "g.yaml").write_text("b: 2\n")
    (root / "ld").symlink_to("d")
    (root / "d" / "up").symlink_to("..")
    (root / "lf").symlink_to("d/f.yaml")
    (root / "abs").symlink_to(root / "d" / "e")
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    (root / "dangling").symlink_to("nowhere")


_COMPONENTS = ["d", "e", "f.yaml", "g.yaml", "ld", "up", "lf", "abs", "loop1", "dangling",
               "missing", ".", ".."]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("paths")
    _tree(root)
    return root


@settings(max_examples=400, derandomize=True, database=None, deadline=None)
@given(parts=st.lists(st.sampled_from(_COMPONENTS), min_size=1, max_size=6), absolute=st.booleans())
def test_roots_realpath_is_os_realpath(tree: Path, parts: list[str], absolute: bool) -> None:
    old = os.getcwd()
    os.chdir(tree)
    try:
        text = "/".join(parts)
        if absolute:
            text = f"{tree}/{text}"
        roots = Roots((tree,))
        for _ in range(2):  # resolved, then from what was remembered
            real, mode = roots.real_mode(text)
            assert real == os.path.realpath(text), text
            if mode is not None:
                assert mode == os.lstat(real).st_mode
                assert stat.S_ISDIR(mode) == os.path.isdir(real)
    finally:
        os.chdir(old)


def _overlays(root: Path, n: int) -> Path:
    """A cluster root naming n overlays, each a base four levels up and two files."""
    top = root / "out" / "clusters" / "c0"
    (top).mkdir(parents=True)
    names = []
    for i in range(n):
        base = root / "bases" / f"job-{i}"
        base.mkdir(parents=True)
        (base / "kustomization.yaml").write_text("resources:\n- job.yaml\n")
        (base / "job.yaml").write_text(f"kind: ConfigMap\nmetadata:\n  name: job-{i}\n")
        ov = top / "workloads" / f"job-{i}"
        ov.mkdir(parents=True)
        (ov / "kustomization.yaml").write_text(
            f"resources:\n- ../../../../../bases/job-{i}\n- extra.yaml\npatches:\n- path: patch.yaml\n")
        (ov / "extra.yaml").write_text(f"kind: ConfigMap\nmetadata:\n  name: extra-{i}\n")
        (ov / "patch.yaml").write_text("- op: add\n  path: /data\n  value: {}\n")
        names.append(f"- workloads/job-{i}\n")
    (top / "kustomization.yaml").write_text("resources:\n" + "".join(names))
    return top


def _calls(root: Path, n: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    top = _overlays(root, n)
    counts = {"realpath": 0, "lstat": 0}
    real_realpath, real_lstat = os.path.realpath, os.lstat

    def realpath(p: object, **kw: object) -> str:
        counts["realpath"] += 1
        return real_realpath(p, **kw)  # type: ignore[arg-type]

    def lstat(p: object, **kw: object) -> os.stat_result:
        counts["lstat"] += 1
        return real_lstat(p, **kw)  # type: ignore[arg-type]

    with monkeypatch.context() as m:
        m.setattr(os.path, "realpath", realpath)
        m.setattr(os, "lstat", lstat)
        tree = check_tree(top, Roots((root,)))
    assert len(tree.dirs) == 2 * n
    return counts


def test_check_tree_resolves_each_overlay_in_constant_calls(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    small = _calls(tmp_path / "small", 4, monkeypatch)
    large = _calls(tmp_path / "large", 40, monkeypatch)
    # A `..` is the parent of the resolved directory before it: no full realpath of each
    # overlay's `../../../../../bases/job-i` (a stat per component, per overlay), and each
    # directory is resolved once: an overlay and its base cost a fixed number of lstats.
    assert large["realpath"] == small["realpath"]
    assert (large["lstat"] - small["lstat"]) / 36 <= 18  # 26 when each `..` path was resolved whole


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", "..x", "x..", ".hidden"]), min_size=1, max_size=6),
       st.booleans(), st.booleans())
def test_display_is_relpath_below_the_working_directory_and_the_path_as_given_elsewhere(
        parts: list[str], absolute: bool, trailing: bool) -> None:
    """display's short cut for relative paths gives what os.path.relpath gave (the definition
    it replaced), for every shape of path: `..` anywhere, empty and dotted components."""
    text = "/".join(parts) + ("/" if trailing else "")
    if absolute:
        text = os.getcwd() + "/" + text
    if not text:
        return
    rel = os.path.relpath(text)
    assert display(text) == (rel if not rel.startswith("..") else text)


def test_directories_the_walk_remembers_are_their_realpaths(tmp_path: Path) -> None:
    # check_tree notes each directory a kustomization names as it resolves it (Roots.remember_dir)
    # and checks it from that: through a symlinked base, a link up and `..` after it, each
    # remembered real path is os.path.realpath's, and the tree reads the same directories.
    top = _overlays(tmp_path, 3)
    (tmp_path / "linked").symlink_to(tmp_path / "bases")
    (top / "workloads" / "up").symlink_to("..")
    ov = top / "workloads" / "job-1"
    (ov / "kustomization.yaml").write_text(
        "resources:\n- ../../../../../linked/job-1\n- ../up/workloads/job-2/sub\n- extra.yaml\n")
    sub = top / "workloads" / "job-2" / "sub"
    sub.mkdir()
    (sub / "kustomization.yaml").write_text("resources:\n- ../../../../../../linked/job-0\n")
    roots = Roots((tmp_path,))
    tree = check_tree(top, roots)
    remembered = roots._real_dirs
    assert len(remembered) > 6
    for text, real in remembered.items():
        assert real == os.path.realpath(text), text
    assert [str(d) for d in tree.dirs] == [str(d) for d in check_tree(top, Roots((tmp_path,))).dirs]
    assert str(tmp_path / "bases" / "job-1") in {str(d) for d in tree.dirs}
