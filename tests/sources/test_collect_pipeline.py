"""collect() checks each kustomization tree and starts its build at once, reading outputs
after every tree is checked: a refusal still wins over an earlier tree's failed build, and
`Collecting` (the two halves, for callers with other work to do meanwhile) raises where
collect() raised and leaves no build behind. Real kubectl."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_support import make_repo

from topogate.sources import manifests


def _overlay(repo: Path, name: str, text: str) -> str:
    d = repo / name
    d.mkdir()
    (d / "kustomization.yaml").write_text(text)
    return str(d)


def test_a_refusal_in_a_later_tree_wins_over_an_earlier_failed_build(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    failing = _overlay(repo, "a", "resources: [../bases/train]\nnameSuffix: [x]\n")
    remote = _overlay(repo, "b", "resources: [https://example.com/x.yaml]\n")
    with pytest.raises(manifests.ManifestError) as err:
        manifests.collect([failing, remote])
    assert "b/kustomization.yaml:1:13: resources entry 'https://example.com/x.yaml' is remote" in str(err.value)


def test_collecting_raises_where_collect_raised(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    good = _overlay(repo, "a", "resources: [../bases/train]\nnameSuffix: -a\n")
    with manifests.Collecting([good, str(repo / "missing")]) as pending:  # nothing raised yet
        with pytest.raises(manifests.ManifestError) as err:
            pending.result()
    assert str(err.value).endswith("missing:1:1: no such file or directory")


def test_collecting_gives_what_collect_gives(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    roots = [_overlay(repo, f"o{i}", f"resources: [../bases/train]\nnameSuffix: -s{i}\n") for i in range(3)]
    want = [(o.ref, o.pos.file, o.pos.line, o.built_from) for o in manifests.collect(roots)]
    with manifests.Collecting(roots) as pending:
        got = [(o.ref, o.pos.file, o.pos.line, o.built_from) for o in pending.result()]
    assert got == want
    assert [r.split("/")[-1] for r, *_ in got] == ["train-s0", "train-s1", "train-s2"]


def test_leaving_without_a_result_waits_for_the_builds(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    roots = [_overlay(repo, f"o{i}", "resources: [../bases/train]\n") for i in range(3)]
    with manifests.Collecting(roots) as pending:
        pool = pending.builds.pool
    if pool is not None:  # more than one CPU: the builds ran in threads, all finished now
        assert all(f.done() for f in pending.builds.pending.values() if not isinstance(f, Path))
