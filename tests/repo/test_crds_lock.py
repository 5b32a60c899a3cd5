"""The CRD lock and `make crds`, and what the suite does when the CRDs are not there.

This machine reaches no host but package registries, so the downloader is run against a real
`python -m http.server` on 127.0.0.1 serving a mirror laid out like the destination (the
`--base-url` override); the pinned GitHub URLs themselves are only checked for their shape.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import fetch_crds
import pytest
from conftest import REPO, crds_dir, require_crds

FETCH = REPO / "tests" / "fetch_crds.py"


def test_lock_pins_every_upstream_file_by_commit_and_hash() -> None:
    root = require_crds()
    entries = fetch_crds.lock_entries()
    on_disk = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.yaml"))
    assert [e["path"] for e in entries] == on_disk
    for e in entries:
        data = (root / e["path"]).read_bytes()
        assert (hashlib.sha256(data).hexdigest(), len(data)) == (e["sha256"], e["bytes"]), e["path"]
        # A commit, never a branch or tag: the bytes behind the URL cannot move.
        assert re.fullmatch(r"https://raw\.githubusercontent\.com/[\w.-]+/[\w.-]+/[0-9a-f]{40}/\S+\.yaml",
                            e["url"]), e["url"]


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A copy of the CRDs served by `python -m http.server` on 127.0.0.1: (its directory, URL)."""
    mirror = tmp_path / "mirror"
    # The tests using this fixture call require_crds() first, so a skip is reported from
    # conftest's one line (a skip here would be one more summary line per test).
    shutil.copytree(crds_dir(), mirror)
    proc = subprocess.Popen(
        [sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", str(mirror)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        assert proc.stdout is not None
        m = re.search(r"port (\d+)", proc.stdout.readline())
        assert m, "http.server did not say its port"
        yield mirror, f"http://127.0.0.1:{m.group(1)}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(FETCH), *args], capture_output=True, text=True,
                          timeout=300, stdin=subprocess.DEVNULL)


def test_fetch_verifies_and_writes_every_file(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    require_crds()
    mirror, url = request.getfixturevalue("serve")
    dest = tmp_path / "crds"
    proc = _run("--dest", str(dest), "--base-url", url)
    assert proc.returncode == 0, proc.stderr
    for e in fetch_crds.lock_entries():
        assert (dest / e["path"]).read_bytes() == (mirror / e["path"]).read_bytes()
    assert fetch_crds.missing(dest) == []
    # Present and verified: a second run fetches nothing, so it passes with the mirror gone.
    shutil.rmtree(mirror)
    again = _run("--dest", str(dest), "--base-url", url)
    assert again.returncode == 0, again.stderr


def test_a_tampered_file_fails_and_nothing_is_written(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    require_crds()
    mirror, url = request.getfixturevalue("serve")
    victim = fetch_crds.lock_entries()[3]["path"]
    data = (mirror / victim).read_bytes()
    (mirror / victim).write_bytes(data.replace(b"type: string", b"type: object", 1))
    dest = tmp_path / "crds"
    proc = _run("--dest", str(dest), "--base-url", url)
    assert proc.returncode == 1
    assert f"{victim}: sha256 " in proc.stderr and "refusing it" in proc.stderr
    assert "nothing was written" in proc.stderr
    assert not dest.exists()


def test_an_unreachable_mirror_is_one_line_per_file(tmp_path: Path) -> None:
    # Port 9 (discard) on 127.0.0.1: nothing listens, the connection is refused at once.
    proc = _run("--dest", str(tmp_path / "crds"), "--base-url", "http://127.0.0.1:9")
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == len(fetch_crds.lock_entries()) + 1
    assert "Traceback" not in proc.stderr


def _pytest_without_crds(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if k != "TOPOGATE_REQUIRE_CRDS"}
    full.update(TOPOGATE_CRDS=str(tmp_path / "nowhere"), **env)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-ra",
         "tests/gitops/test_gitops.py::test_flux_git_ref", "tests/generators/test_kueue.py",
         "tests/trace/test_trace.py", "-k",
         # the Cilium CRDs also come from the pinned Go module (cilium_support.cilium_crd): the
         # trace tests skip only on a machine without it; the others always need the files
         "git_ref or validate_against_upstream_crd or crd_rules_catch"],
        cwd=REPO, env=full, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)


def test_without_crds_the_tests_that_need_them_skip_with_one_line(tmp_path: Path) -> None:
    proc = _pytest_without_crds(tmp_path)
    assert proc.returncode == 0, proc.stdout
    skipped = [ln for ln in proc.stdout.splitlines() if ln.startswith("SKIPPED")]
    assert len(skipped) == 1, proc.stdout
    assert "TOPOGATE_CRDS=" in skipped[0] and "make crds" in skipped[0]
    assert re.match(r"SKIPPED \[([2-9]|\d\d+)\]", skipped[0]), skipped[0]  # several tests, one line


def test_required_crds_missing_fail_the_run(tmp_path: Path) -> None:
    proc = _pytest_without_crds(tmp_path, TOPOGATE_REQUIRE_CRDS="1")
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "TOPOGATE_REQUIRE_CRDS is set" in out and "make crds" in out
    assert "SKIPPED" not in out
