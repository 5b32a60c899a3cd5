"""`check --changed-since REF`: only the clusters a change can affect are built and analysed,
and anything unclear checks everything, saying so (topogate.check.changed, topogate.check.narrow).

Real git in a scratch repository (init, commit on main, branch, change), the real `kubectl
kustomize`, wrapped by a script that logs which directory each build was asked for: the count
of builds is the behaviour under test."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import GIT_ENV, git, run_cli

from topogate.check.changed import ChangeSelection, UnitReads, escaped, select, unit_cluster
from topogate.check.gitdiff import GitUnknown, changed_files
from topogate.generators import render_tree
from topogate.sources.inventory import load_inventory
from topogate.sources.kustomization import kubectl
from topogate.tree import writer

REPO = Path(__file__).resolve().parents[2]
MULTI = REPO / "fixtures" / "multi"  # two clusters: gpu-east (llama-ft, bert-mpi), gpu-west (resnet, gpt-sft)



def commit_all(repo: Path, msg: str) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", msg)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """fixtures/multi and its generated tree (deploy/) committed on main; HEAD on a branch."""
    r = tmp_path / "repo"
    shutil.copytree(MULTI, r)
    writer.write_tree(r / "deploy", render_tree(load_inventory(str(r / "inventory.yaml")), str(r / "deploy")))
    (r / "README.md").write_text("the platform repo\n")
    git(r, "init", "-q", "-b", "main")
    commit_all(r, "main")
    git(r, "checkout", "-qb", "change")
    monkeypatch.chdir(r)
    return r


@pytest.fixture
def builds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The log of `kubectl kustomize DIR` calls: one DIR per line."""
    log = tmp_path / "builds.log"
    log.touch()
    wrapper = tmp_path / "kubectl"
    wrapper.write_text(f'#!/bin/sh\n[ "$1" = kustomize ] && echo "$2" >> {log}\nexec {kubectl()} "$@"\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv("TOPOGATE_KUBECTL", str(wrapper))
    return log


def built(log: Path) -> list[str]:
    return sorted(os.path.relpath(p) for p in log.read_text().split())


def check(*args: str) -> tuple[int, str, str]:
    return run_cli("check", *args)


def last_line(text: str) -> str:
    return text.rstrip("\n").splitlines()[-1]


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))


# --- end to end: real git, real kustomize ---


def test_a_changed_base_builds_and_analyses_only_its_cluster(repo: Path, builds: Path) -> None:
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")  # gpu-west's JobSet
    commit_all(repo, "resnet 3.2")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert code == 0, out + err
    assert built(builds) == ["deploy/clusters/gpu-west"]
    assert "JobSet/vision/resnet" in out and "TrainJob/llm/gpt-sft" in out
    assert "llama-ft" not in out and "bert-mpi" not in out  # gpu-east was not analysed
    assert last_line(out) == ("ok: 0 errors, 1 warning in 2 workloads (--changed-since main: 1 of 2 clusters "
                              "changed (gpu-west), 1 of 2 kustomize roots built)")
    assert err == ""  # narrowed, not fallen back: the summary says what it covered

    builds.write_text("")
    code, full, _ = check("inventory.yaml", "deploy/clusters")
    assert built(builds) == ["deploy/clusters/gpu-east", "deploy/clusters/gpu-west"]
    assert last_line(full) == "ok: 0 errors, 1 warning in 4 workloads"


def test_uncommitted_and_untracked_changes_count(repo: Path, builds: Path) -> None:
    # The working tree against the merge base: what a developer runs before pushing.
    policy = repo / "deploy/clusters/gpu-east/network/fabric.yaml"
    policy.write_text(policy.read_text() + "# reviewed\n")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert built(builds) == ["deploy/clusters/gpu-east"], err
    assert "(gpu-east), 1 of 2 kustomize roots built)" in last_line(out)


def test_nothing_relevant_changed_is_ok_and_says_so(repo: Path, builds: Path) -> None:
    (repo / "README.md").write_text("the platform repo, now documented\n")
    (repo / "notes.txt").write_text("untracked\n")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert (code, out, err) == (
        0, "ok: nothing to check since main (2 changed files, none read by this check)\n", "")
    assert built(builds) == []  # and TG006 nothing-analysed did not fire: nothing was due

    code, out, _ = check("inventory.yaml", "deploy/clusters", "--changed-since", "HEAD", "--format", "json")
    assert code == 0
    assert json.loads(out)["summary"] == {
        "errors": 0, "warnings": 0,
        "changedSince": {"ref": "HEAD", "checked": "nothing", "detail": "2 changed files, none read by this check"}}


def test_a_changed_inventory_checks_everything_and_says_so_on_stderr(repo: Path, builds: Path) -> None:
    edit(repo / "inventory.yaml", "name: acme-ml", "name: acme-ml  # renamed soon")
    commit_all(repo, "comment")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert built(builds) == ["deploy/clusters/gpu-east", "deploy/clusters/gpu-west"]
    assert err == ("topogate: --changed-since main: the inventory changed, and it describes every "
                   "cluster: checking everything\n")
    assert last_line(out).endswith("in 4 workloads (--changed-since main: everything checked: the "
                                   "inventory changed, and it describes every cluster)")


@pytest.mark.parametrize("ref, why", [
    ("no-such-branch", "'no-such-branch' is not a commit here; fetch it first"),
    ("--output=x", "'--output=x' is not a git ref"),
])
def test_an_unknown_ref_checks_everything(repo: Path, builds: Path, ref: str, why: str) -> None:
    code, out, err = check("inventory.yaml", "deploy/clusters", f"--changed-since={ref}")
    assert built(builds) == ["deploy/clusters/gpu-east", "deploy/clusters/gpu-west"]
    assert err.startswith(f"topogate: --changed-since {ref}: {why}") and err.endswith(": checking everything\n")
    assert "in 4 workloads" in last_line(out)
    assert not (repo / "x").exists()  # the ref never reached git as an option


def test_outside_a_git_repository_checks_everything(tmp_path: Path, builds: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    r = tmp_path / "plain"
    shutil.copytree(MULTI, r)
    writer.write_tree(r / "deploy", render_tree(load_inventory(str(r / "inventory.yaml")), str(r / "deploy")))
    monkeypatch.chdir(r)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # pytest's tmp may sit in a repo
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert "is not in a git work tree" in err and err.endswith("checking everything\n")
    assert len(built(builds)) == 2


def test_a_plain_manifest_selects_its_cluster(repo: Path, builds: Path) -> None:
    extra = repo / "extra" / "clusters" / "gpu-west"
    extra.mkdir(parents=True)
    (extra / "policy.yaml").write_text(
        "apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: extra, namespace: vision}\n"
        "spec:\n  endpointSelector: {matchLabels: {role: driver}}\n  ingress: [{fromEndpoints: [{}]}]\n")
    commit_all(repo, "main with extra")
    git(repo, "branch", "-f", "main")
    code, out, _ = check("inventory.yaml", "deploy/clusters", "extra", "--changed-since", "main")
    assert last_line(out) == "ok: nothing to check since main (no file changed)"
    edit(extra / "policy.yaml", "name: extra", "name: extra2")
    code, out, err = check("inventory.yaml", "deploy/clusters", "extra", "--changed-since", "main")
    assert built(builds) == ["deploy/clusters/gpu-west"], err
    assert "(gpu-west), 1 of 2 kustomize roots built)" in last_line(out)


def test_a_job_the_inventory_places_in_an_unchanged_cluster_widens_the_read(repo: Path, builds: Path) -> None:
    # llama-ft is gpu-east's; a copy of it under clusters/gpu-west/ would be judged without
    # gpu-east's policies if only gpu-west were read.
    extra = repo / "extra" / "clusters" / "gpu-west"
    extra.mkdir(parents=True)
    (extra / "job.yaml").write_text((repo / "bases/llama-ft/job.yaml").read_text())
    git(repo, "add", "-N", "extra")  # a new file is read once git knows of it (intent to add)
    code, out, err = check("inventory.yaml", "deploy/clusters", "extra", "--changed-since", "main")
    # gpu-west first (narrowed), then everything once the read did not hold together
    assert built(builds) == ["deploy/clusters/gpu-east", "deploy/clusters/gpu-west", "deploy/clusters/gpu-west"]
    suffix = (" (--changed-since main: everything checked: PyTorchJob/ml-team/llama-ft is among cluster "
              "gpu-west's manifests but the inventory places it in cluster gpu-east, which did not change)")
    assert last_line(out).endswith(suffix)
    assert out.replace(suffix, "") == check("inventory.yaml", "deploy/clusters", "extra")[1]
    assert err == ("topogate: --changed-since main: PyTorchJob/ml-team/llama-ft is among cluster gpu-west's "
                   "manifests but the inventory places it in cluster gpu-east, which did not change: "
                   "checking everything\n")


def test_a_change_no_cluster_can_claim_checks_everything(repo: Path, builds: Path) -> None:
    shared = repo / "shared"
    shared.mkdir()
    (shared / "ccnp.yaml").write_text(
        "apiVersion: cilium.io/v2\nkind: CiliumClusterwideNetworkPolicy\nmetadata: {name: all}\n"
        "spec:\n  endpointSelector: {}\n  egress: [{toEntities: [cluster]}]\n")
    git(repo, "add", "-N", "shared")  # a new file is read once git knows of it (intent to add)
    code, out, err = check("inventory.yaml", "deploy/clusters", "shared", "--changed-since", "main")
    assert err == ("topogate: --changed-since main: shared/ccnp.yaml changed (itself) and is under no "
                   "clusters/<name>/ directory, so its cluster is unknown: checking everything\n")
    assert len(built(builds)) == 2


def test_an_unreadable_unchanged_root_checks_everything_and_reports_it_as_the_full_check_does(
        repo: Path, builds: Path) -> None:
    (repo / "deploy/clusters/gpu-east/kustomization.yaml").write_text("resources: [https://example.com/x]\n")
    commit_all(repo, "broken on main")
    git(repo, "branch", "-f", "main")
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    # The remote root is one finding (never fetched, never built); the other cluster is checked.
    assert code == 1 and built(builds) == ["deploy/clusters/gpu-west"]
    assert ("deploy/clusters/gpu-east/kustomization.yaml:1:13: error TG009 remote-root: deploy/clusters/gpu-east "
            "was not built") in out and "resources entry 'https://example.com/x' is remote" in out
    assert "checking everything" in err
    full = check("inventory.yaml", "deploy/clusters")
    assert full[0] == code and full[1].rsplit("\n\n", 1)[0] == out.rsplit("\n\n", 1)[0]  # as without the flag


def test_without_paths_the_generated_tree_is_narrowed_too(repo: Path, builds: Path) -> None:
    edit(repo / "bases/llama-ft/job.yaml", "# A base that", "# Still a base that")
    code, out, err = check("inventory.yaml", "--changed-since", "main")
    assert err == ""
    assert "PyTorchJob/ml-team/llama-ft" in out and "resnet" not in out
    roots = [b for b in built(builds) if "/clusters/gpu-" in b and "/argocd/" not in b and "/flux/" not in b]
    assert [r.rsplit("/", 1)[-1] for r in roots] == ["gpu-east"]
    assert "1 of 2 clusters changed (gpu-east)" in last_line(out)


def test_live_and_changed_since_do_not_mix(repo: Path) -> None:
    code, _, err = check("inventory.yaml", "--live", "--changed-since", "main")
    assert code == 2 and "--changed-since narrows a check of files" in err


# --- the git layer ---


def test_changed_files_sees_edits_deletions_renames_and_new_files(repo: Path) -> None:
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")
    (repo / "README.md").unlink()
    git(repo, "mv", "bases/gpt-sft/job.yaml", "bases/gpt-sft/trainjob.yaml")
    (repo / "new.yaml").write_text("a: 1\n")
    commit_all(repo, "some")
    (repo / "untracked.yaml").write_text("b: 2\n")
    top, base, files = changed_files("main", str(repo))
    real = os.path.realpath(repo)
    assert top == real and base == git(repo, "rev-parse", "main").strip()
    assert [os.path.relpath(f, real) for f in files] == [
        "README.md", "bases/gpt-sft/job.yaml", "bases/gpt-sft/trainjob.yaml", "bases/resnet/job.yaml",
        "new.yaml", "untracked.yaml"]


def test_changed_files_is_against_the_merge_base(repo: Path) -> None:
    # main moved on after the branch: its new commit is not this branch's change.
    git(repo, "checkout", "-q", "main")
    (repo / "on-main.yaml").write_text("a: 1\n")
    commit_all(repo, "main moves")
    git(repo, "checkout", "-q", "change")
    (repo / "on-branch.yaml").write_text("a: 1\n")
    commit_all(repo, "branch")
    assert [os.path.basename(f) for f in changed_files("main", str(repo))[2]] == ["on-branch.yaml"]


def test_a_shallow_clone_without_the_ref_is_unknown(repo: Path, tmp_path: Path) -> None:
    for i in range(3):
        (repo / f"f{i}.yaml").write_text("a: 1\n")
        commit_all(repo, f"c{i}")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "1", "--branch", "change", f"file://{repo}", str(clone)],
                   check=True, capture_output=True, env={**os.environ, **GIT_ENV})
    with pytest.raises(GitUnknown, match="shallow clone: fetch REF"):
        changed_files("main~0", str(clone))
    sha = git(repo, "rev-parse", "main").strip()
    with pytest.raises(GitUnknown, match="shallow"):
        changed_files(sha, str(clone))


# --- the selection, pure ---


def _unit(key: str, cluster: str | None, *files: str, built: bool = True) -> UnitReads:
    return UnitReads(key, key, cluster, frozenset(files), built)


UNITS = [_unit("clusters/a", "a", "/r/clusters/a/k.yaml", "/r/bases/j1/job.yaml"),
         _unit("clusters/b", "b", "/r/clusters/b/k.yaml", "/r/bases/j2/job.yaml", "/r/shared/c.yaml"),
         _unit("clusters/c", "c", "/r/clusters/c/k.yaml", "/r/shared/c.yaml"),
         _unit("policies/p.yaml", None, "/r/policies/p.yaml", built=False)]


def test_select_keeps_the_touched_clusters_and_the_units_of_no_cluster() -> None:
    sel = select("main", ["/r/bases/j2/job.yaml", "/r/docs/x.md"], UNITS, "/r/inv.yaml", 3)
    assert (sel.clusters, sorted(sel.keep), sel.built, sel.roots, sel.relevant) == (
        ("b",), ["clusters/b", "policies/p.yaml"], 1, 3, 1)
    assert sel.summary() == "1 of 3 clusters changed (b), 1 of 3 kustomize roots built"
    # a file two trees read touches both
    assert select("main", ["/r/shared/c.yaml"], UNITS, "/r/inv.yaml", 3).clusters == ("b", "c")


def test_select_falls_back_for_the_inventory_and_for_units_of_no_cluster() -> None:
    sel = select("main", ["/r/inv.yaml"], UNITS, "/r/inv.yaml", 3)
    assert sel.everything and len(sel.keep) == 4 and sel.note().endswith("checking everything")
    sel = select("main", ["/r/policies/p.yaml"], UNITS, "/r/inv.yaml", 3)
    assert sel.everything and "policies/p.yaml changed (itself)" in sel.why


def test_select_with_nothing_read_changed_keeps_nothing() -> None:
    sel = select("main", ["/r/README.md"], UNITS, "/r/inv.yaml", 3)
    assert sel.nothing and sel.keep == frozenset() and sel.summary() == "1 changed file, none read by this check"
    assert select("main", [], UNITS, "/r/inv.yaml", 3).summary() == "no file changed"


def test_unit_cluster_follows_the_generated_layout() -> None:
    assert unit_cluster("out/clusters/a/workloads/ns/j", ["a", "b"], None) == "a"
    assert unit_cluster("out/clusters/z", ["a", "b"], None) is None  # not an inventory cluster
    assert unit_cluster("jobs/j.yaml", ["a"], None) == "a"  # the only cluster
    assert unit_cluster("jobs/j.yaml", ["a", "b"], "b") == "b"


def test_escaped_names_the_first_reason() -> None:
    sel = ChangeSelection("main", clusters=("a",))
    assert escaped(sel, [("Job/x/y", None, "b"), ("Job/x/z", "a", "a")], ["Job/x/z"], ["Job/x/z"]) == ""
    assert "cluster b, which did not change" in escaped(sel, [("Job/x/y", "a", "b")], [], [])
    assert "Job/x/w, a workload of a changed cluster" in escaped(sel, [], ["Job/x/w"], [])


# --- what a kustomization root reads ---


def test_files_read_follows_every_field_kustomize_reads(tmp_path: Path) -> None:
    from topogate.check.narrow import _Unknown, files_read
    from topogate.safeio.repopaths import Roots

    r = tmp_path / "r"
    (r / ".git").mkdir(parents=True)
    files = {
        "shared/base/kustomization.yaml": "resources: [job.yaml]\n",
        "shared/base/job.yaml": "kind: Job\n",
        "shared/comp/kustomization.yaml": "kind: Component\npatches: [{path: p.yaml}]\n",
        "shared/comp/p.yaml": "kind: Job\n",
        "shared/app.env": "A=1\n",
        "root/conf.txt": "x\n",
        "root/unread.yaml": "kind: Job\n",  # in the root's directory, named by nothing
        "root/kustomization.yaml": (
            "resources: [../shared/base]\ncomponents: [../shared/comp]\n"
            "configMapGenerator:\n- name: c\n  files: [key=conf.txt]\n  envs: [../shared/app.env]\n"),
    }
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    got = files_read(r / "root", Roots((r,)))
    assert sorted(os.path.relpath(f, r) for f in got) == sorted(set(files) - {"root/unread.yaml"})

    (r / "root/kustomization.yaml").write_text("resources: [../../outside.yaml]\n")
    (tmp_path / "outside.yaml").write_text("kind: Job\n")
    with pytest.raises(_Unknown):  # what check would refuse to read is not followed either
        files_read(r / "root", Roots((r,)))
    (r / "root/kustomization.yaml").write_text("helmCharts: [{name: x}]\n")
    with pytest.raises(_Unknown, match="helm"):
        files_read(r / "root", Roots((r,)))



def test_files_read_resolves_dot_dot_from_a_symlinked_base_as_kustomize_does(tmp_path: Path) -> None:
    # kustomize reads a base from its real directory: `../x` inside a symlinked base is next to
    # the link's target, not next to the link. Read lexically, the root would seem not to read
    # the file that changed, and the narrowed check would skip the root that builds it.
    from topogate.check.narrow import files_read
    from topogate.safeio.repopaths import Roots

    r = tmp_path / "r"
    (r / ".git").mkdir(parents=True)
    files = {
        "vendor/team/base/kustomization.yaml": "resources: [../common]\n",
        "vendor/team/common/kustomization.yaml": "resources: [cm.yaml]\n",
        "vendor/team/common/cm.yaml": "kind: ConfigMap\n",
        "root/kustomization.yaml": "resources: [../linked]\n",
        # where `linked/../common` points when read as text: kustomize builds the other one
        "common/kustomization.yaml": "resources: [cm.yaml]\n",
        "common/cm.yaml": "kind: ConfigMap\n",
    }
    for rel, text in files.items():
        (r / rel).parent.mkdir(parents=True, exist_ok=True)
        (r / rel).write_text(text)
    (r / "linked").symlink_to(r / "vendor" / "team" / "base", target_is_directory=True)
    got = files_read(r / "root", Roots((r,)))
    assert sorted(os.path.relpath(f, r) for f in got) == [
        "root/kustomization.yaml", "vendor/team/base/kustomization.yaml",
        "vendor/team/common/cm.yaml", "vendor/team/common/kustomization.yaml"]


def test_nothing_analysed_is_for_paths_without_a_job_not_for_an_unchanged_tree(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Pod templates of no job: a full check fails with TG006; unchanged, there is nothing to
    # check; changed, the narrowed check analyses them and TG006 fires as in a full check.
    r = tmp_path / "lab"
    shutil.copytree(REPO / "fixtures" / "lab", r)
    (r / "jobs").mkdir()
    (r / "jobs" / "workers.yaml").write_text(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: workers, namespace: ml-demo}\nspec:\n"
        "  selector: {matchLabels: {app: w}}\n  template:\n    metadata: {labels: {app: w}}\n"
        "    spec: {containers: [{name: w, image: busybox}]}\n")
    git(r, "init", "-q", "-b", "main")
    commit_all(r, "main")
    monkeypatch.chdir(r)
    code, full, _ = check("inventory.yaml", "jobs")
    assert code == 1 and "TG006" in full
    assert check("inventory.yaml", "jobs", "--changed-since", "main") == (
        0, "ok: nothing to check since main (no file changed)\n", "")
    edit(r / "jobs/workers.yaml", "image: busybox", "image: busybox:1.37")
    code, out, err = check("inventory.yaml", "jobs", "--changed-since", "main")
    assert code == 1 and "TG006" in out and err == ""
    assert last_line(out).endswith("(--changed-since main: 1 of 1 cluster changed (lab))"), out


def test_a_workload_of_a_changed_cluster_kept_elsewhere_widens_the_read(repo: Path, builds: Path) -> None:
    # resnet (gpu-west) also sits, unchanged, under clusters/gpu-east/; gpu-west's root stops
    # listing it. A full check still analyses it in gpu-west: so must this one.
    extra = repo / "extra" / "clusters" / "gpu-east"
    extra.mkdir(parents=True)
    (extra / "resnet.yaml").write_text((repo / "bases/resnet/job.yaml").read_text())
    commit_all(repo, "main with the copy")
    git(repo, "branch", "-f", "main")
    edit(repo / "deploy/clusters/gpu-west/kustomization.yaml", "- workloads/vision/resnet\n", "")
    code, out, err = check("inventory.yaml", "deploy/clusters", "extra", "--changed-since", "main")
    assert err == ("topogate: --changed-since main: JobSet/vision/resnet, a workload of a changed cluster, "
                   "is not among that cluster's manifests: checking everything\n")
    assert built(builds) == ["deploy/clusters/gpu-east", "deploy/clusters/gpu-west", "deploy/clusters/gpu-west"]
    assert "JobSet/vision/resnet (cluster gpu-west)" in out


# --- the walk, shared with a forked child ---


def _roots(tmp: Path, n: int, bad: Sequence[int] = ()) -> list[Path]:
    """n cluster roots, each two overlays on bases of their own; those in `bad` name a remote base."""
    out = []
    for c in range(n):
        root = tmp / "clusters" / f"c{c}"
        for j in range(2):
            base = tmp / "bases" / f"c{c}-j{j}"
            base.mkdir(parents=True)
            (base / "kustomization.yaml").write_text("resources: [job.yaml]\n")
            (base / "job.yaml").write_text("kind: ConfigMap\n")
            ov = root / f"j{j}"
            ov.mkdir(parents=True)
            (ov / "kustomization.yaml").write_text(f"resources: [../../../bases/c{c}-j{j}, cnp.yaml]\n")
            (ov / "cnp.yaml").write_text("kind: ConfigMap\n")
        remote = ", https://example.com/x" if c in bad else ""
        (root / "kustomization.yaml").write_text(f"resources: [j0, j1{remote}]\n")
        out.append(root)
    return out


def _walks(tmp: Path, n: int, bad: Sequence[int] = ()) -> tuple[object, object]:
    from topogate.check import narrow
    from topogate.safeio.repopaths import Roots, walk

    _roots(tmp, n, bad)
    answers = []
    for share in (False, True):
        roots = Roots.of([str(tmp)])
        units = list(walk(str(tmp / "clusters"), roots, []))
        dirs: dict[str, object] = {}
        reads, why = narrow.walk_units(units, roots, dirs, share=share)  # type: ignore[arg-type]
        answers.append((reads, why, dirs))
    return answers[0], answers[1]


@pytest.mark.parametrize("bad", [(), (3,), (2, 5), (0, 1)], ids=["clean", "child-fails", "both-fail", "first"])
def test_the_shared_walk_answers_as_the_serial_one(tmp_path: Path, bad: tuple[int, ...],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from topogate.check import narrow

    forks: list[int] = []
    real_start = narrow.Child.start

    def start(work: object) -> object:
        child = real_start(work)  # type: ignore[arg-type]
        forks.append(child.pid)  # type: ignore[union-attr]
        return child

    monkeypatch.setattr(narrow.Child, "start", start)
    serial, shared = _walks(tmp_path, 6, bad)
    assert forks, "six roots: the walk was shared"
    assert shared[:2] == serial[:2]  # type: ignore[index]
    reads, why, dirs = serial  # type: ignore[misc]
    if not why:  # after a failure everything is checked and the directories are not used
        assert shared[2] == dirs  # type: ignore[index]
    if bad:  # the first failing unit in order names itself, as the serial walk does
        assert why.startswith(f"cannot tell what {tmp_path}/clusters/c{bad[0]} reads")
        assert len(reads) == bad[0]  # type: ignore[arg-type]
    else:
        assert why == "" and len(reads) == 6  # type: ignore[arg-type]
    with pytest.raises(ProcessLookupError):
        os.kill(forks[0], 0)  # the child was reaped


def test_a_child_that_fails_or_hangs_leaves_the_walk_to_the_parent(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from topogate.check import narrow

    parent = os.getpid()
    real = narrow.files_read

    def files_read(*args: object) -> object:
        if os.getpid() != parent:
            raise RuntimeError("the child breaks")
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(narrow, "files_read", files_read)
    serial, shared = _walks(tmp_path / "fails", 6)
    assert shared == serial and len(serial[0]) == 6  # type: ignore[arg-type]

    def hangs(*args: object) -> object:
        if os.getpid() != parent:
            time.sleep(60)
        return real(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(narrow, "files_read", hangs)
    monkeypatch.setattr(narrow, "CHILD_WAIT", 0.5)
    started = time.monotonic()
    serial, shared = _walks(tmp_path / "hangs", 6)
    assert shared == serial and len(serial[0]) == 6  # type: ignore[arg-type]
    assert time.monotonic() - started < 20  # killed at its deadline, not waited for


# --- what the inventory's load reads again ---


def bases_read(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The bases the inventory's loader reads, as the inventory writes them, in order."""
    from topogate.inventory import workloads

    read: list[str] = []
    real = workloads.read_base

    def spy(chk: object, path: object, rel: str) -> object:
        read.append(rel)
        return real(chk, path, rel)  # type: ignore[arg-type]

    monkeypatch.setattr(workloads, "read_base", spy)
    return read


def test_a_narrowed_run_reads_again_only_the_bases_its_clusters_need(
        repo: Path, builds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    read = bases_read(monkeypatch)
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")  # gpu-west's
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert (code, err) == (0, ""), out + err
    # gpu-west's two workloads; gpu-east's bases were walked through its root, unchanged
    assert sorted(read) == ["bases/gpt-sft", "bases/resnet"]
    read.clear()
    full = check("inventory.yaml", "deploy/clusters/gpu-west")[1]  # gpu-west alone, every base read
    assert sorted(read) == ["bases/bert-mpi", "bases/gpt-sft", "bases/llama-ft", "bases/resnet"]
    assert out.rsplit("\n", 2)[0] == full.rsplit("\n", 2)[0]  # the same report, but for its last line


def test_a_base_no_checked_path_reads_is_read_and_its_problem_reported_as_without_the_flag(
        repo: Path, builds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Only gpu-west's root is checked; gpu-east's llama-ft base breaks. The walk never met that
    # base, so nothing says it is unchanged: the loader reads it and the run fails as a full one.
    read = bases_read(monkeypatch)
    edit(repo / "bases/llama-ft/job.yaml", "kind: PyTorchJob", "kind: [PyTorchJob")
    code, out, err = check("inventory.yaml", "deploy/clusters/gpu-west", "--changed-since", "main")
    assert "bases/llama-ft" in read
    assert code == 2 and "TG001" in out and "bases/llama-ft/job.yaml" in out, out + err
    full = check("inventory.yaml", "deploy/clusters/gpu-west")
    assert (full[0], full[1]) == (code, out)


def test_bases_to_read_follows_the_walk_through_every_directory(tmp_path: Path) -> None:
    from topogate.check.narrow import Narrowing

    n = Narrowing("main", str(tmp_path / "inventory.yaml"), ["east", "west"], None, ["deploy"])
    n.selection = ChangeSelection("main", clusters=("west",))
    real = os.path.realpath(tmp_path)
    base, common = f"{real}/bases/a", f"{real}/common"
    n.dirs = {base: (frozenset({f"{base}/kustomization.yaml", f"{base}/job.yaml"}), (common,)),
              common: (frozenset({f"{common}/kustomization.yaml", f"{common}/labels.yaml"}), ())}
    wanted = n.bases_to_read()
    assert wanted is not None
    assert wanted("west", "bases/a")  # a checked cluster's workload: always
    assert not wanted("east", "bases/a")  # walked, and nothing it reads changed
    assert wanted("east", "bases/b")  # never walked: cannot tell
    n.changed = frozenset({f"{common}/labels.yaml"})  # a file a directory below it reads
    assert n.bases_to_read()("east", "bases/a")  # type: ignore[misc]
    n.changed = frozenset()
    del n.dirs[common]  # a directory below it the walk did not finish
    assert n.bases_to_read()("east", "bases/a")  # type: ignore[misc]
    n.selection = ChangeSelection("main", True, "inventory changed")
    assert n.bases_to_read() is None  # everything checked: every base read


# --- the one build a change needs starts before the inventory is read ---


def test_the_changed_root_is_building_while_the_inventory_loads(
        repo: Path, builds: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The narrowed run reads only the cluster names ahead (cluster_names), so kubectl runs
    while the inventory and every base are loaded: the build log already names the root when
    the loader is entered. The loader waits up to 20 s for it; a serial run never gets there."""
    from topogate.check import run as check_run
    from topogate.sources import manifests

    if (os.cpu_count() or 1) == 1:
        pytest.skip("one CPU: builds run when their output is read, so nothing can overlap")
    assert manifests._Builds().workers > 1
    seen: list[list[str]] = []
    real_load = check_run.load_inventory

    def load(path: str, *args: object) -> object:
        for _ in range(200):
            if builds.read_text().strip():
                break
            time.sleep(0.1)
        seen.append(built(builds))
        return real_load(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(check_run, "load_inventory", load)
    edit(repo / "bases/resnet/job.yaml", "resnet:3.1", "resnet:3.2")
    code, out, err = check("inventory.yaml", "deploy/clusters", "--changed-since", "main")
    assert code == 0 and err == "", out + err
    assert seen == [["deploy/clusters/gpu-west"]]  # building before the inventory was read
    assert built(builds) == ["deploy/clusters/gpu-west"]  # and only once


def test_cluster_names_reads_ahead_only_what_it_can_tell(tmp_path: Path) -> None:
    from topogate.check.narrow import cluster_names

    def names(text: str) -> tuple[str, ...] | None:
        f = tmp_path / "inv.yaml"
        f.write_text(text)
        return cluster_names(str(f))

    assert cluster_names(str(MULTI / "inventory.yaml")) == ("gpu-east", "gpu-west")
    assert names("workloads: [{name: w, base: x}]\nclusters:\n- {zones: [a], name: c1}\n- name: c2\n") == (
        "c1", "c2")  # any key order, flow or block
    # what the loader alone can judge: no early start, the run narrows after the load
    assert names("- a\n- b\n") is None  # not a mapping
    assert names("kind: Inventory\n") is None  # no clusters
    assert names("base: &c {name: c1}\nclusters: [*c]\n") is None  # an alias
    assert names("clusters:\n- zones: [a]\n") is None  # a cluster without a name
    assert names("clusters: {c1: {}}\n") is None  # not a list
    assert names("clusters: [{name: c1}\n") is None  # does not parse
    assert cluster_names(str(tmp_path / "missing.yaml")) is None


def test_names_read_ahead_that_the_inventory_does_not_hold_drop_the_narrowing() -> None:
    from topogate.check.narrow import Narrowing

    inv = load_inventory(str(MULTI / "inventory.yaml"))
    assert Narrowing("main", "inventory.yaml", ("gpu-east", "gpu-west"), None).bind(inv)
    assert not Narrowing("main", "inventory.yaml", ("gpu-east",), None).bind(inv)
    assert not Narrowing("main", "inventory.yaml", ("gpu-west", "gpu-east"), None).bind(inv)
