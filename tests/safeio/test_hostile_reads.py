"""Hostile PATHs for `check` and `trace`: every case is refused with one line naming the place,
exit 2, fast; never a hang, a traceback, or a read outside the repository (issue 10, items 2,
3 and 6). Each case is the minimal input of a failure measured before the fix."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest
from hostile_support import alias_bomb, deep, invoke, make_repo

from topogate.sources.manifests import collect

JOB = (Path(__file__).resolve().parents[2] / "fixtures" / "lab" / "bases" / "train" / "pytorchjob.yaml")


def check(repo: Path, *paths: Path | str) -> tuple[int, str]:
    start = time.monotonic()
    code, _, err = invoke("check", str(repo / "inventory.yaml"), *map(str, paths), "--format", "json")
    assert time.monotonic() - start < 30, "a small hostile input must not take long"
    assert "Traceback" not in err
    return code, err


def refused(repo: Path, *paths: Path | str) -> str:
    code, err = check(repo, *paths)
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def not_built(repo: Path, *paths: Path | str) -> str:
    """A root that needs the network: never fetched, one TG009 finding (exit 1), not exit 2 for
    the whole run. Returns `file:line:column: message` of that finding."""
    code, out, err = invoke("check", str(repo / "inventory.yaml"), *map(str, paths), "--format", "json")
    assert code == 1 and "Traceback" not in err, err
    import json

    found = [f for f in json.loads(out)["findings"] if f["rule"] == "TG009"]
    assert len(found) == 1, found
    f = found[0]
    return f"{f['file']}:{f['line']}:{f['column']}: {f['message']}"


def trace_refused(*args: str) -> str:
    code, _, err = invoke("trace", *args, "--from", "ml-demo/PyTorchJob/train/Worker",
                          "--to", "ml-demo/PyTorchJob/train/Master")
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


# --- item 2: only regular files, a size cap, guards on every YAML ---


def test_fifo_among_paths_is_refused_not_waited_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    os.mkfifo(repo / "pipe.yaml")
    line = refused(repo, repo / "pipe.yaml")
    assert "pipe.yaml:1:1: is a FIFO (named pipe), not a regular file" in line
    d = repo / "manifests"
    d.mkdir()
    os.mkfifo(d / "pipe.yaml")
    assert "FIFO" in refused(repo, d)


def test_fifo_listed_by_a_kustomization_is_refused_before_kubectl(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = _kustomization(repo, "resources: [../bases/train, extra.yaml]\n")
    os.mkfifo(d / "extra.yaml")
    assert "extra.yaml:1:1: is a FIFO" in refused(repo, d)


def test_symlink_to_dev_zero_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "zero.yaml").symlink_to("/dev/zero")
    line = refused(repo, repo / "zero.yaml")
    assert "zero.yaml" in line and "outside the repository" in line
    d = repo / "manifests"
    d.mkdir()
    (d / "zero.yaml").symlink_to("/dev/zero")
    assert "outside the repository" in refused(repo, d)


def test_dev_null_as_a_path(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    assert "/dev/null:1:1: is a character device, not a regular file" in refused(repo, "/dev/null")


def test_file_over_the_size_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = make_repo(tmp_path)
    big = repo / "big.yaml"
    big.write_text(JOB.read_text() + "# " + "x" * (1024 * 1024) + "\n")
    monkeypatch.setenv("TOPOGATE_MAX_FILE_MB", "1")
    assert "larger than 1 MB, the file limit" in refused(repo, big)


def test_fifty_megabyte_manifest_is_refused_by_the_default_cap(tmp_path: Path) -> None:
    # Before: 333 s and 4.5 GB. The default cap (32 MB, about 20 s to read here) refuses it.
    repo = make_repo(tmp_path)
    big = repo / "big.yaml"
    with big.open("w") as fh:
        fh.write(JOB.read_text())
        fh.truncate(50 * 1024 * 1024)  # sparse: the size is what is refused, before reading
    assert "the file limit" in refused(repo, big)


def test_alias_bomb_in_a_plain_manifest_is_refused_before_expansion(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "bomb.yaml").write_text(alias_bomb())
    line = refused(repo, repo / "bomb.yaml")
    assert "bomb.yaml:1:1: aliases expand this document by more than 200000 values" in line
    assert "alias bomb" in trace_refused(str(repo / "bomb.yaml"), str(repo / "bases" / "train"))


def test_alias_bomb_in_a_kustomization_resource_never_reaches_kubectl(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = _kustomization(repo, "resources: [../bases/train, bomb.yaml]\n")
    (d / "bomb.yaml").write_text(alias_bomb())
    start = time.monotonic()
    assert "bomb.yaml:1:1: aliases expand" in refused(repo, d)
    assert time.monotonic() - start < 10


def test_recursive_alias_in_a_manifest_is_refused_at_its_place(tmp_path: Path) -> None:
    # libyaml composes an alias inside its own anchor into a cycle: an infinite object that
    # every later step would recurse into.
    repo = make_repo(tmp_path)
    (repo / "loop.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: &m\n  name: a\n  labels: {self: *m}\n")
    assert "loop.yaml:3:11: this anchor is aliased from inside itself" in refused(repo, repo / "loop.yaml")


def test_small_aliases_are_fine(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "cm.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- {kind: ConfigMap, metadata: {name: a, labels: &l {x: y}}}\n"
        "- {kind: ConfigMap, metadata: {name: b, labels: *l}}\n")
    assert len(collect([str(repo / "cm.yaml")])) == 2


def test_duplicate_key_in_a_manifest_is_an_error_at_its_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    text = JOB.read_text().replace("metadata:\n", "metadata:\n  name: other\n", 1)
    (repo / "dup.yaml").write_text(text)
    line = refused(repo, repo / "dup.yaml")
    assert "dup.yaml:" in line and "duplicate key 'name' (first at line" in line
    # The reported place is the second key.
    where = line.split("dup.yaml:", 1)[1].split(":")[:2]
    row = text.splitlines()[int(where[0]) - 1]
    assert row[int(where[1]) - 1:].startswith("name:")


def test_control_character_is_an_error_at_its_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "ctl.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\x07b\n")
    assert "ctl.yaml:4:10: U+0007 is not allowed in YAML" in refused(repo, repo / "ctl.yaml")


def test_not_utf8_is_an_error_at_its_place(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "latin1.yaml").write_bytes(b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: caf\xe9}\n")
    assert "latin1.yaml:3:21: not UTF-8 text" in refused(repo, repo / "latin1.yaml")


def test_deep_nesting_is_refused_not_a_recursion_error(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    for n in (150, 600):
        (repo / "deep.yaml").write_text(deep(n))
        assert "nested more than 100 levels deep" in refused(repo, repo / "deep.yaml")
    (repo / "flow.yaml").write_text("a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert "flow.yaml:1:" in refused(repo, repo / "flow.yaml")


def test_deep_directories_are_walked_without_recursion(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = repo / "deep"
    try:
        leaf = d
        for _ in range(1100):
            leaf = leaf / "d"
            leaf.mkdir(parents=True)
        (leaf / "job.yaml").write_text(JOB.read_text())
        code, err = check(repo, d)
        assert code in (0, 1), err
    finally:
        # pytest's own clean-up (shutil.rmtree) recurses per level and would fail on this tree.
        subprocess.run(["rm", "-rf", str(d)], check=True)


# --- item 3: paths ---


def test_symlink_loop_is_refused_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = repo / "jobs"
    d.mkdir()
    (d / "pytorchjob.yaml").write_text(JOB.read_text())
    (d / "loop").symlink_to("..")
    (d / "self").symlink_to(".")
    line = refused(repo, d)
    assert "symlink loop" in line and "loop" in line


def test_a_directory_reached_twice_is_read_once(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = repo / "jobs"
    (d / "real").mkdir(parents=True)
    (d / "real" / "pytorchjob.yaml").write_text(JOB.read_text())
    (d / "again").symlink_to("real")
    assert len(collect([str(d)])) == 1


def test_manifest_symlinked_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    outside = tmp_path / "secret.yaml"
    outside.write_text(JOB.read_text())
    (repo / "job.yaml").symlink_to(outside)
    assert "outside the repository" in refused(repo, repo / "job.yaml")


def _kustomization(repo: Path, text: str) -> Path:
    d = repo / "overlay"
    d.mkdir(exist_ok=True)
    (d / "kustomization.yaml").write_text(text)
    return d


@pytest.mark.parametrize("text, place", [
    ("resources: [https://github.com/example/repo//base?ref=v1]\n", "kustomization.yaml:1:13"),
    ("resources: [github.com/example/repo/base]\n", "kustomization.yaml:1:13"),
    ("resources:\n- ../bases/train\ncomponents:\n- git@github.com:example/c.git\n", "kustomization.yaml:4:3"),
])
def test_remote_references_are_refused_before_kubectl(tmp_path: Path, text: str, place: str) -> None:
    repo = make_repo(tmp_path)
    line = not_built(repo, _kustomization(repo, text))
    assert place in line and "is remote" in line


def test_remote_component_of_a_nested_base_is_refused(tmp_path: Path) -> None:
    # The case that made generate run `git fetch`: the URL two kustomizations down.
    repo = make_repo(tmp_path)
    base = repo / "other"
    base.mkdir()
    (base / "pytorchjob.yaml").write_text(JOB.read_text())
    (base / "kustomization.yaml").write_text(
        "resources: [pytorchjob.yaml]\ncomponents: [https://example.com/c.git]\n")
    line = not_built(repo, _kustomization(repo, "resources: [../other]\n"))
    assert "other/kustomization.yaml:2:14" in line and "is remote" in line


@pytest.mark.parametrize("field", ["resources", "components"])
def test_directory_outside_the_repository_is_refused(tmp_path: Path, field: str) -> None:
    repo = make_repo(tmp_path)
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (outside / "kustomization.yaml").write_text("resources: []\n")
    line = refused(repo, _kustomization(repo, f"{field}:\n- ../../elsewhere\n"))
    assert "outside the repository" in line and "kustomization.yaml:2:3" in line


def test_generator_file_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (tmp_path / "id_rsa").write_text("not a key")
    (repo / "overlay").mkdir()
    (repo / "overlay" / "key").symlink_to(tmp_path / "id_rsa")
    text = "resources: [../bases/train]\nconfigMapGenerator:\n- name: c\n  files: [k=key]\n"
    assert "outside the repository" in refused(repo, _kustomization(repo, text))


def test_patch_path_that_is_a_fifo_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = _kustomization(repo, "resources: [../bases/train]\npatches:\n- path: p.yaml\n")
    os.mkfifo(d / "p.yaml")
    assert "p.yaml:1:1: is a FIFO" in refused(repo, d)


def test_kustomization_file_symlinked_outside_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (tmp_path / "k.yaml").write_text("resources: [../bases/train]\n")
    d = repo / "overlay"
    d.mkdir()
    (d / "kustomization.yaml").symlink_to(tmp_path / "k.yaml")
    assert "outside the repository" in refused(repo, d)


def test_helm_charts_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    line = not_built(repo, _kustomization(repo, "helmCharts:\n- name: x\n  repo: https://example.com\n"))
    assert "kustomization.yaml:2:1" in line and "helm" in line


def test_kustomization_with_many_resources_is_checked_in_linear_time(tmp_path: Path) -> None:
    # Before: 20,000 entries took 50 s (the file re-read per entry). The check before the build
    # reads each file once; the build itself is kubectl's.
    from topogate.safeio.repopaths import Roots
    from topogate.sources.kustomization import check_tree

    repo = make_repo(tmp_path)
    d = repo / "many"
    d.mkdir()
    names = []
    for i in range(20_000):
        (d / f"cm{i}.yaml").write_text(f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n")
        names.append(f"- cm{i}.yaml\n")
    (d / "kustomization.yaml").write_text("resources:\n" + "".join(names))
    start = time.monotonic()
    check_tree(d, Roots.of([str(d)]))
    assert time.monotonic() - start < 30  # about 5 s on the project's 2-core machine


# --- item 6: one line, exit 2 ---


def test_trace_port_with_a_superscript_digit() -> None:
    lab = str(Path(__file__).resolve().parents[2] / "fixtures" / "trace" / "lab")
    code, _, err = invoke("trace", lab, "--from", "world", "--to", "world", "--port", "²")
    assert code == 2 and "--port '²'" in err and "Traceback" not in err


# --- item 6: fields of the wrong type, which the analysis used to crash on ---


@pytest.mark.parametrize("old, new, place, field", [
    ("nvidia.com/gpu: 1", 'nvidia.com/gpu: "²"', "20:33", "resources.limits.nvidia.com/gpu must be a whole number"),
    ("          containers:", "          affinity: x\n          containers:", "14:21", "spec.affinity must be a mapping"),
    ("          containers:", "          topologySpreadConstraints: [{maxSkew: x, topologyKey: k}]\n          containers:",
     "14:49", "topologySpreadConstraints[0].maxSkew must be an integer"),
    ("          containers:", "          topologySpreadConstraints: [{maxSkew: .nan, topologyKey: k}]\n          containers:",
     "14:49", "maxSkew must be an integer"),
    ("          containers:", "          tolerations: {key: gpu}\n          containers:", "14:24", "tolerations must be a list"),
])
def test_field_of_the_wrong_type_is_bad_input_at_its_place(tmp_path: Path, old: str, new: str, place: str,
                                                           field: str) -> None:
    repo = make_repo(tmp_path)
    (repo / "job.yaml").write_text(JOB.read_text().replace(old, new, 1))
    line = refused(repo, repo / "job.yaml")
    assert f"job.yaml:{place}: PyTorchJob/train: spec.pytorchReplicaSpecs.Master.template" in line
    assert field in line
    assert "job.yaml" in trace_refused(str(repo / "job.yaml"))


def test_text_replicas_of_a_jobset(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    (repo / "js.yaml").write_text(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: t, namespace: ml-demo}\n"
        "spec:\n  replicatedJobs:\n  - name: w\n    replicas: x\n"
        "    template: {spec: {template: {spec: {containers: [{name: a}]}}}}\n")
    assert "js.yaml:7:15: JobSet/ml-demo/t: spec.replicatedJobs[0].replicas must be an integer" in refused(
        repo, repo / "js.yaml")


def test_a_key_with_a_newline_is_reported_on_one_line(tmp_path: Path) -> None:
    # Found by the fuzz harness: the duplicate key's text was printed raw, over two lines.
    repo = make_repo(tmp_path)
    (repo / "k.yaml").write_text('? " \\n"\n? " \\n"\n: 0\n')
    assert "k.yaml:2:3: duplicate key ' \\n'" in refused(repo, repo / "k.yaml")


# --- OUT, as `check --rendered OUT` reads it ---


@pytest.mark.parametrize("make", ["fifo", "dev-zero"])
def test_special_file_in_the_rendered_tree_is_refused(tmp_path: Path, make: str) -> None:
    from topogate.generators import render_tree
    from topogate.sources.inventory import load_inventory
    from topogate.tree import writer

    repo = make_repo(tmp_path)
    out = repo / "out"
    writer.write_tree(str(out), render_tree(load_inventory(repo / "inventory.yaml"), str(out)))
    victim = out / "clusters" / "lab" / "kustomization.yaml"
    victim.unlink()
    if make == "fifo":
        os.mkfifo(victim)
    else:
        victim.symlink_to("/dev/zero")
    code, _, err = invoke("check", str(repo / "inventory.yaml"), "--rendered", str(out), str(JOB))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "clusters/lab/kustomization.yaml: is " in err and "where generate writes a regular file" in err


# --- issue 21, item 12: remoteness decided by kustomize's rules, not by what is on disk ---


@pytest.mark.parametrize("name", ["github.com:org/repo", "example.com:org/repo", "gh:org/repo",
                                  "me@host:org/repo"])
def test_a_local_directory_named_like_a_git_shorthand_is_remote(tmp_path: Path, name: str) -> None:
    # kustomize parses the reference as a repository URL before it looks at the disk, so the
    # local directory of that name is never what it reads: it runs `git fetch`.
    repo = make_repo(tmp_path)
    local = repo / "overlay" / name
    local.mkdir(parents=True)
    (local / "kustomization.yaml").write_text("resources: []\n")
    line = not_built(repo, _kustomization(repo, f"resources:\n- ../bases/train\n- {name}\n"))
    assert "is remote" in line and "kustomization.yaml:3:3" in line, line


def test_a_local_path_with_a_colon_after_a_slash_stays_local(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    d = repo / "overlay" / "sub" / "a:b"
    d.mkdir(parents=True)
    (d / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
    code, err = check(repo, _kustomization(repo, "resources:\n- ../bases/train\n- sub/a:b/cm.yaml\n"))
    assert code in (0, 1), err
