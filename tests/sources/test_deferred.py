"""The content checks that wait until the builds are under way (topogate.sources.deferred): a
file of a kustomization tree is still refused at its place before any output is read, a file
check --rendered finds to be the generator's own is not composed (nor one of the scratch tree
check INVENTORY renders), and what the generator writes is plain YAML, which is what makes
trusting it sound."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostile_support import make_repo

from topogate.check.errors import CheckInputError
from topogate.check.run import run_check
from topogate.generators import render_tree
from topogate.safeio.saferead import InputError, nodes
from topogate.sources import deferred, manifests
from topogate.sources.deferred import DeferredChecks, digest, may_wait
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import collect
from topogate.tree import writer

ROOT = Path(__file__).resolve().parents[2]
DUPLICATE = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  name: b\n"


@pytest.mark.parametrize("fixture", ["lab", "multi"])
def test_every_generated_yaml_file_is_plain_and_the_overlays_may_wait(fixture: str, tmp_path: Path) -> None:
    inv = load_inventory(str(ROOT / "fixtures" / fixture / "inventory.yaml"))
    files = render_tree(inv, str(tmp_path))
    overlays = 0
    for rel, content in files.items():
        if not rel.endswith((".yaml", ".yml")):
            continue
        text = content.decode()
        assert nodes(text, rel)  # no duplicate key, alias, depth or character it refuses
        if rel.endswith(("ciliumnetworkpolicy.yaml", "placement-patch.yaml")):
            overlays += 1
            # else the walk composes it after all (no saving); a wildcard FQDN is the one `*`
            assert may_wait(text) or "matchPattern: '*" in text, rel
    assert overlays


def _composed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the deferred checks compose from here on, as shown, in order."""
    composed: list[str] = []

    def recording(text: str, shown: str) -> list[object]:
        composed.append(shown)
        return nodes(text, shown)

    monkeypatch.setattr(deferred, "nodes", recording)
    return composed


def test_settle_checks_what_waits_in_order_but_what_is_vouched_for() -> None:
    checks = DeferredChecks()
    checks.add("/r/good.yaml", "good.yaml", "a: 1\n")
    checks.add("/r/first.yaml", "first.yaml", DUPLICATE)
    checks.add("/r/second.yaml", "second.yaml", DUPLICATE)
    assert checks.asks("/r/first.yaml")
    with pytest.raises(InputError) as err:
        checks.settle()
    assert str(err.value.pos) == "first.yaml:5:3"
    assert "duplicate key 'name'" in str(err.value)
    assert not checks.asks("/r/first.yaml")  # nothing is held once settled

    vouched = DeferredChecks()
    vouched.add("/r/first.yaml", "first.yaml", DUPLICATE)
    vouched.add("/r/second.yaml", "second.yaml", DUPLICATE)
    with pytest.raises(InputError) as err:
        vouched.settle(lambda real, text: real == "/r/first.yaml" and digest(text) == digest(DUPLICATE))
    assert str(err.value.pos) == "second.yaml:5:3"


def test_a_patch_is_composed_once_when_a_split_asks_whether_it_keeps_ids(monkeypatch: pytest.MonkeyPatch) -> None:
    checks = DeferredChecks()
    checks.add("/r/rename.yaml", "rename.yaml", "- op: replace\n  path: /metadata/name\n  value: x\n")
    checks.add("/r/label.yaml", "label.yaml", "- op: add\n  path: /metadata/labels\n  value: {a: b}\n")
    composed = _composed(monkeypatch)
    assert checks.keeps(["/r/label.yaml"])
    assert not checks.keeps(["/r/label.yaml", "/r/rename.yaml"])
    # met again by another tree's walk: still asked about, and the answer stays what it was
    checks.add("/r/rename.yaml", "rename.yaml", "- op: replace\n  path: /metadata/name\n  value: x\n")
    assert checks.asks("/r/rename.yaml") and not checks.keeps(["/r/rename.yaml"])
    checks.settle()
    assert composed == ["label.yaml", "rename.yaml"]  # once each: settle has none left
    checks.add("/r/bad.yaml", "bad.yaml", "- op: add\n  op: remove\n")
    with pytest.raises(InputError, match="duplicate key 'op'"):
        checks.keeps(["/r/bad.yaml"])


@pytest.mark.parametrize("text, waits", [
    ("a: 1\n", True),
    ("a: &x 1\nb: *x\n", False),  # an alias: composed by the walk, never handed to kubectl
    ('a: "\\x41"\n', False),  # an escape: forbidden text may hide behind it
    ("a: " + "x" * deferred.WAITS_UP_TO + "\n", False),
])
def test_what_may_wait(text: str, waits: bool) -> None:
    assert may_wait(text) is waits


def test_a_duplicate_key_in_a_resource_is_refused_at_its_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = repo / "overlay"
    d.mkdir()
    (d / "kustomization.yaml").write_text("resources: [../bases/train, dup.yaml]\n")
    (d / "dup.yaml").write_text(DUPLICATE)
    with pytest.raises(InputError) as err:
        collect([str(d)])
    assert str(err.value.pos).endswith("overlay/dup.yaml:5:3")


def _generated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The lab repository generated into out/, run from its root; the files the deferred checks
    compose are recorded in the list returned."""
    repo = make_repo(tmp_path)
    monkeypatch.chdir(repo)
    writer.write_tree("out", render_tree(load_inventory("inventory.yaml"), str((repo / "out").resolve())))
    return _composed(monkeypatch)


def test_check_rendered_composes_none_of_the_generators_own_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    composed = _generated(tmp_path, monkeypatch)
    outcome = run_check("inventory.yaml", ["out/clusters"], rendered="out")
    assert outcome.exit_code == 0, outcome.result.findings
    assert outcome.result.jobs
    assert composed == ["bases/train/pytorchjob.yaml"]  # the base is no generated file
    # Without --rendered nothing vouches for them: each is composed before any output is read.
    outcome = run_check("inventory.yaml", ["out/clusters"])
    assert outcome.exit_code == 0, outcome.result.findings
    assert any(s.endswith("ciliumnetworkpolicy.yaml") for s in composed)
    assert any(s.endswith("placement-patch.yaml") for s in composed)


def test_check_inventory_alone_composes_none_of_its_scratch_trees_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `check INVENTORY` renders into a scratch tree and reads it: every file there is what it
    # has just written, so only the user's base is composed.
    composed = _generated(tmp_path, monkeypatch)
    outcome = run_check("inventory.yaml")
    assert outcome.exit_code == 0, outcome.result.findings
    assert outcome.result.jobs
    assert composed == ["bases/train/pytorchjob.yaml"]


def test_check_rendered_refuses_a_generated_file_edited_by_hand_at_its_place(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    composed = _generated(tmp_path, monkeypatch)
    policy = next(Path("out/clusters").rglob("ciliumnetworkpolicy.yaml"))
    text = policy.read_text()
    policy.write_text(text.replace("metadata:\n", "metadata:\n  name: other\n", 1))
    with pytest.raises(CheckInputError) as err:
        run_check("inventory.yaml", ["out/clusters"], rendered="out")
    assert str(err.value).startswith(f"{policy}:6:3: duplicate key 'name' (first at line 5, column 3)")
    # its text is no longer the generator's: composed (and refused: nothing after it is)
    assert composed == [str(policy)]


def _root(repo: Path, name: str, parts: str, n: int, patch: str, first: str | None = None) -> Path:
    """A root listing n directories of repo/<parts>, each a ConfigMap and a JSON patch file
    (`first` in the first directory, if given)."""
    for i in range(n):
        d = repo / parts / f"e{i}"
        if not d.is_dir():
            d.mkdir(parents=True)
            (d / "objects.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {parts}-{i}\n")
            (d / "p.yaml").write_text(first if i == 0 and first is not None else patch)
            (d / "kustomization.yaml").write_text(
                "resources: [objects.yaml]\npatches:\n- path: p.yaml\n  target: {kind: ConfigMap}\n")
    root = repo / name
    root.mkdir()
    (root / "kustomization.yaml").write_text(
        "resources:\n" + "".join(f"- ../{parts}/e{i}\n" for i in range(n)))
    return root


def test_a_patch_two_trees_share_is_asked_about_by_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Root a is decided (its first patch composed: it renames, so a is built whole) before root
    c, which lists the same directories, is walked: c meets that patch already checked, and is
    built whole too, not split on the walk's first guess that a waiting patch keeps ids."""
    monkeypatch.setattr(manifests.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(manifests, "SPLIT_FROM", 4)
    monkeypatch.setattr(manifests, "PART_DIRS", 4)
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    rename = "- op: replace\n  path: /metadata/name\n  value: renamed\n"
    label = "- op: add\n  path: /metadata/labels\n  value: {x: y}\n"
    a = _root(repo, "a", "shared", 8, label, first=rename)
    b = _root(repo, "b", "own", 8, label)
    c = _root(repo, "c", "shared", 8, label)
    reading = manifests.prepare(manifests.find([str(a), str(b), str(c)]), early=True)
    try:
        assert reading.error is None
        assert {p.name: n for p, n in reading.builds.items()} == {"a": 1, "b": 2, "c": 1}
    finally:
        if reading.started is not None:
            reading.started.__exit__()
