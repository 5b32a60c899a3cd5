"""Download the upstream CRDs the tests validate against, pinned by tests/crds.lock.json.

    python3 tests/fetch_crds.py [--dest DIR] [--base-url URL] [--lock LOCK]   (what `make crds` runs)

Each file of the lock is fetched from its pinned upstream URL (a commit, never a branch) or,
with --base-url (or $TOPOGATE_CRDS_BASE_URL), from URL/<path>: a mirror laid out like the
destination. Every file must have exactly the locked size and sha256; one that does not is
reported with both hashes and the run exits 1. Nothing is written unless every file verified,
so a tampered mirror cannot leave a half-updated directory behind. Files already present with
the right hash are not fetched again.

Standard library only: it runs before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

LOCK = Path(__file__).resolve().parent / "crds.lock.json"
DEFAULT_DEST = Path(__file__).resolve().parents[1] / ".crds"
TIMEOUT = 60


def lock_entries(lock: Path = LOCK) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = json.loads(lock.read_text())["files"]
    return entries


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def missing(directory: Path, lock: Path = LOCK) -> list[str]:
    """Locked files that `directory` lacks (presence only: the fetch is what verifies hashes)."""
    return [e["path"] for e in lock_entries(lock) if not (directory / e["path"]).is_file()]


def _url(entry: dict[str, Any], base_url: str | None) -> str:
    return f"{base_url.rstrip('/')}/{entry['path']}" if base_url else str(entry["url"])


def _get(url: str, limit: int) -> bytes:
    if not url.startswith(("https://", "http://")):
        raise ValueError(f"not an http(s) URL: {url}")
    with urllib.request.urlopen(url, timeout=TIMEOUT) as resp:
        # One byte past the locked size is enough to know the file is not the locked one.
        data: bytes = resp.read(limit + 1)
    return data


def fetch(dest: Path, base_url: str | None = None, lock: Path = LOCK) -> list[str]:
    """Fetch and verify every locked file into `dest`; the problems found (empty when all is well)."""
    problems: list[str] = []
    verified: dict[str, bytes] = {}
    for e in lock_entries(lock):
        target = dest / e["path"]
        if target.is_file() and sha256(target.read_bytes()) == e["sha256"]:
            continue
        url = _url(e, base_url)
        try:
            data = _get(url, int(e["bytes"]))
        except (OSError, ValueError, urllib.error.URLError) as exc:
            problems.append(f"{e['path']}: cannot download {url}: {exc}")
            continue
        got = sha256(data)
        if got != e["sha256"]:
            problems.append(f"{e['path']}: sha256 {got} ({len(data)} bytes) from {url}, "
                            f"the lock says {e['sha256']} ({e['bytes']} bytes): refusing it")
            continue
        verified[e["path"]] = data
    if problems:
        return problems
    for rel, data in sorted(verified.items()):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".fetch-", dir=target.parent)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, target)
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    ap.add_argument("--dest", type=Path, default=DEFAULT_DEST, help="where to put them (default: .crds/)")
    ap.add_argument("--base-url", default=os.environ.get("TOPOGATE_CRDS_BASE_URL") or None,
                    help="fetch URL/<path> instead of each pinned upstream URL (a mirror)")
    ap.add_argument("--lock", type=Path, default=LOCK,
                    help="the lock to fetch (default: tests/crds.lock.json; tests/scheduler_crds.lock.json "
                         "pins the other schedulers' CRDs)")
    args = ap.parse_args(argv)
    problems = fetch(args.dest, args.base_url, args.lock)
    for p in problems:
        print(f"fetch_crds: {p}", file=sys.stderr)
    if problems:
        print(f"fetch_crds: {len(problems)} file(s) failed; nothing was written to {args.dest}",
              file=sys.stderr)
        return 1
    print(f"fetch_crds: {len(lock_entries(args.lock))} upstream CRDs verified in {args.dest}; "
          f"the tests use them (or set TOPOGATE_CRDS={args.dest})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
