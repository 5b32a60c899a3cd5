"""`check --changed-since` and the files a builtin transformer config reads (issue 21, item 3).

A PatchTransformer config listed under `transformers:` names a patch file; a pull request that
changes only that patch must be checked, not answered "ok: nothing to check", and the patch is
read under the same guards as every file kustomize reads. Real git, real kubectl kustomize.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from conftest import git
from hostile_support import LAB, invoke

HARMLESS = "- op: add\n  path: /metadata/annotations\n  value: {reviewed: \"yes\"}\n"
STRIPS = ("- op: remove\n  path: /spec/pytorchReplicaSpecs/Worker/template/spec/affinity\n"
          "- op: remove\n  path: /spec/pytorchReplicaSpecs/Worker/template/spec/tolerations\n")



@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The lab, its generated tree and an overlay whose PatchTransformer config names
    patch.yaml, committed on main; HEAD on a branch."""
    r = tmp_path / "repo"
    shutil.copytree(LAB, r)
    monkeypatch.chdir(r)
    assert invoke("generate", "inventory.yaml", "-o", "deploy")[0] == 0
    (r / "overlay").mkdir()
    (r / "overlay/kustomization.yaml").write_text(
        "resources:\n- ../deploy/clusters/lab\ntransformers:\n- patcher.yaml\n")
    (r / "overlay/patcher.yaml").write_text(
        "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: strip}\npath: patch.yaml\n"
        "target: {kind: PyTorchJob}\n")
    (r / "overlay/patch.yaml").write_text(HARMLESS)
    git(r, "init", "-q", "-b", "main")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "main")
    git(r, "checkout", "-qb", "change")
    return r


def test_a_change_to_a_transformer_configs_patch_is_checked(repo: Path) -> None:
    (repo / "overlay/patch.yaml").write_text(STRIPS)
    git(repo, "commit", "-qam", "strip the placement")
    full = invoke("check", "inventory.yaml", "overlay")
    narrowed = invoke("check", "inventory.yaml", "overlay", "--changed-since", "main")
    assert full[0] == 1 and "FAIL: 1 error" in full[1], full
    assert "nothing to check" not in narrowed[1], narrowed
    assert narrowed[0] == 1 and "FAIL: 1 error" in narrowed[1], narrowed


@pytest.mark.parametrize("how", ["fifo", "outside", "dot-git"])
def test_a_transformer_configs_patch_is_read_under_the_guards(repo: Path, tmp_path: Path,
                                                              how: str) -> None:
    patch = repo / "overlay/patch.yaml"
    patch.unlink()
    if how == "fifo":
        os.mkfifo(patch)
    elif how == "outside":
        (tmp_path / "elsewhere.yaml").write_text(STRIPS)
        patch.symlink_to(tmp_path / "elsewhere.yaml")
    else:
        (repo / "overlay/patcher.yaml").write_text(
            "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: strip}\n"
            "path: ../.git/config\ntarget: {kind: PyTorchJob}\n")
    if how != "fifo":  # git cannot track a FIFO: it is refused as untracked, never opened
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "hostile")
    for extra in ((), ("--changed-since", "main")):
        code, out, err = invoke("check", "inventory.yaml", "overlay", *extra)
        assert code == 2, (out, err)
        text = out + err
        assert "patch" in text or ".git" in text, text
        want = {"fifo": ("FIFO", "not tracked by git"), "outside": ("outside the repository",),
                "dot-git": (".git",)}[how]
        assert any(w in text for w in want), text


@pytest.mark.parametrize("spelling", ["Path", "PATH", "pAtH"])
def test_a_patch_named_under_another_spelling_is_not_nothing_to_check(repo: Path, spelling: str) -> None:
    """kustomize reads `Path:` as `path:` (Go's JSON decoder folds case): a PR that changes only
    the patch file it names was "nothing to check" (exit 0) while kustomize applied it. Now the
    spelling is refused at its line, narrowed or not."""
    (repo / "overlay/kustomization.yaml").write_text(
        f"resources:\n- ../deploy/clusters/lab\npatches:\n- {spelling}: patch.yaml\n  target: {{kind: PyTorchJob}}\n")
    git(repo, "commit", "-qam", "a patch")
    git(repo, "branch", "-f", "main")
    (repo / "overlay/patch.yaml").write_text(STRIPS)
    git(repo, "commit", "-qam", "strip the placement")
    full = invoke("check", "inventory.yaml", "overlay")
    narrowed = invoke("check", "inventory.yaml", "overlay", "--changed-since", "main")
    for code, out, err in (full, narrowed):
        assert code == 2, (code, out, err)
        assert f"overlay/kustomization.yaml:4:3: kustomize reads `{spelling}` as `path`" in out + err
        assert "nothing to check" not in out + err
