"""collect() checks each kustomization tree and starts its build at once, reading outputs
after every tree is checked: a refusal still wins over an earlier tree's failed build, and
`Collecting` (the two halves, for callers with other work to do meanwhile) raises where
collect() raised and leaves no build behind. Real kubectl."""

from __future__ import annotations

import time
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


# --- builds started while the later trees are checked (prepare(..., early=True)) ---------------

def _logged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A log of each tree checked and each build begun, in the order they happen (two CPUs)."""
    from topogate.sources import kustomization

    log = tmp_path / "events"
    log.write_text("")
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f"#!/bin/sh\nfor a in \"$@\"; do last=$a; done\necho \"build $(basename $last)\" >> {log}\n"
                       f"exec {kustomization.kubectl()} \"$@\"\n")
    wrapper.chmod(0o755)
    monkeypatch.setenv("TOPOGATE_KUBECTL", str(wrapper))
    monkeypatch.setattr(manifests._Builds, "cpus", staticmethod(lambda: 2))
    real = manifests.check_tree

    def check_tree(d: Path, *args: object, **kw: object) -> object:
        got = real(d, *args, **kw)  # type: ignore[arg-type]
        time.sleep(0.3)  # a slow check: a build begun after it would be logged before the next
        with log.open("a") as fh:
            fh.write(f"check {d.name}\n")
        return got

    monkeypatch.setattr(manifests, "check_tree", check_tree)
    return log


def _objects(pending: manifests.Collecting) -> list[tuple[str, str, int, str]]:
    return [(o.ref, o.pos.file, o.pos.line, o.built_from) for o in pending.result()]


def test_a_tree_decided_whole_builds_while_the_next_is_checked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    roots = [_overlay(repo, f"o{i}", f"resources: [../bases/train]\nnameSuffix: -s{i}\n") for i in range(3)]
    want = [(o.ref, o.pos.file, o.pos.line, o.built_from) for o in manifests.collect(roots)]
    log = _logged(tmp_path, monkeypatch)
    reading = manifests.prepare(manifests.find(roots), early=True)
    events = log.read_text().splitlines()
    assert events.index("build o0") < events.index("check o2"), events  # begun before the last check
    assert reading.builds == {Path(r): 1 for r in roots}
    with manifests.Collecting(roots, reading=reading) as pending:
        assert _objects(pending) == want
    assert sorted(e for e in log.read_text().splitlines() if e.startswith("build")) == ["build o0", "build o1",
                                                                                       "build o2"]  # once each


def test_without_early_nothing_builds_before_every_tree_is_checked(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    roots = [_overlay(repo, f"o{i}", f"resources: [../bases/train]\nnameSuffix: -s{i}\n") for i in range(2)]
    log = _logged(tmp_path, monkeypatch)
    reading = manifests.prepare(manifests.find(roots))
    assert log.read_text().splitlines() == ["check o0", "check o1"]
    with manifests.Collecting(roots, reading=reading) as pending:
        pending.result()
    assert log.read_text().splitlines()[2:] in (["build o0", "build o1"], ["build o1", "build o0"])


def test_a_root_a_later_tree_includes_is_read_through_it_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner root is begun before the tree that wraps it is checked; then dropped: its
    objects come once, through the wrapper, as without early builds."""
    repo = make_repo(tmp_path)
    inner = _overlay(repo, "a-inner", "resources: [../bases/train]\nnameSuffix: -in\n")
    wrapper = _overlay(repo, "b-wrapper", "resources: [../a-inner]\ncommonLabels: {wave: '1'}\n")
    want = [(o.ref, o.pos.file, o.pos.line, o.built_from) for o in manifests.collect([inner, wrapper])]
    log = _logged(tmp_path, monkeypatch)
    reading = manifests.prepare(manifests.find([inner, wrapper]), early=True)
    assert "build a-inner" in log.read_text().splitlines()  # begun early
    assert list(reading.builds) == [Path(wrapper)]
    with manifests.Collecting([inner, wrapper], reading=reading) as pending:
        assert _objects(pending) == want
    assert [r for r, *_ in want] == ["PyTorchJob/train-in"]


def test_an_early_build_and_a_later_refusal_give_the_refusal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    failing = _overlay(repo, "a", "resources: [../bases/train]\nnameSuffix: [x]\n")
    remote = _overlay(repo, "b", "resources: [https://example.com/x.yaml]\n")
    log = _logged(tmp_path, monkeypatch)
    reading = manifests.prepare(manifests.find([failing, remote]), early=True)
    with pytest.raises(manifests.ManifestError) as err:
        with manifests.Collecting([failing, remote], reading=reading) as pending:
            pending.result()
    assert "build a" in log.read_text().splitlines()  # begun before b was refused, and failed
    assert "b/kustomization.yaml:1:13: resources entry 'https://example.com/x.yaml' is remote" in str(err.value)
