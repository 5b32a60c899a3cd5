"""No secret of the checkout reaches a report (hostile-input issue, item 1).

`actions/checkout` keeps the job's token in `.git/config` (`http.<url>.extraheader:
AUTHORIZATION: basic ...`), and a CI step may write a credential beside the pull request. A
pull request's kustomization can read a file with `configMapGenerator` (or a builtin generator
or transformer config) and move its content with `replacements` into a `topogate.dev/ignore`
annotation, whose reason `check` quotes. Real git, the real `kubectl kustomize`, the CLI."""

from __future__ import annotations

import base64
import json
import shutil
from pathlib import Path

import pytest
from conftest import git, invoke

from topogate.core import redact
from topogate.safeio import subproc
from topogate.sources.kustomization import _offline_env

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "fixtures" / "lab"
# The shape of an installation token; the basic-auth header carries base64("x-access-token:TOKEN").
TOKEN = "ghs_" + "A1b2C3d4" * 4 + "Zz9Y"
BASIC = base64.b64encode(f"x-access-token:{TOKEN}".encode()).decode()
LEAK = """replacements:
- source: {kind: ConfigMap, name: leak, fieldPath: data.%s}
  targets:
  - select: {kind: PyTorchJob, name: train}
    fieldPaths: ['metadata.annotations.[topogate.dev/ignore]']
    options: {create: true}
"""



@pytest.fixture(autouse=True)
def _fresh_registry() -> None:
    redact.forget()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """fixtures/lab committed in a repository whose .git/config holds a CI token, as
    actions/checkout leaves it."""
    r = tmp_path / "repo"
    shutil.copytree(LAB, r)
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {BASIC}")
    git(r, "add", "-A")
    git(r, "commit", "-qm", "lab")
    monkeypatch.chdir(r)
    return r


def check(*args: str) -> tuple[int, str]:
    res = invoke("check", *args)
    if res.exception is not None and not isinstance(res.exception, SystemExit):
        raise res.exception
    return res.exit_code, res.stdout + res.stderr


def assert_no_secret(text: str) -> None:
    for secret in (TOKEN, BASIC, TOKEN[:-1], TOKEN[1:], BASIC[:-2]):
        assert secret not in text


def test_git_config_is_never_read(checkout: Path) -> None:
    (checkout / "kustomization.yaml").write_text(
        "resources: [bases/train]\nconfigMapGenerator:\n- name: leak\n  files: [.git/config]\n"
        + LEAK % "config")
    git(checkout, "add", "kustomization.yaml")
    code, out = check("inventory.yaml", ".")
    assert code == 2
    assert "kustomization.yaml:4:11: configMapGenerator files entry '.git/config'" in out
    assert "inside a .git directory" in out
    assert_no_secret(out)


@pytest.mark.parametrize("config", [
    # a generator config file listed under `generators:`
    ("generators: [gen.yaml]\n", "gen.yaml",
     "apiVersion: builtin\nkind: ConfigMapGenerator\nmetadata: {name: leak}\nfiles: [.git/config]\n"),
    # a transformer config whose patch is the token's file
    ("transformers: [t.yaml]\n", "t.yaml",
     "apiVersion: builtin\nkind: PatchTransformer\nmetadata: {name: p}\npath: .git/config\n"),
    # the same written inline in the kustomization
    ('transformers:\n- "apiVersion: builtin\\nkind: PatchTransformer\\nmetadata: {name: p}\\npath: .git/HEAD\\n"\n',
     None, None),
])
def test_paths_inside_builtin_configs_are_checked(checkout: Path, config: tuple[str, str | None, str | None]) -> None:
    field, name, text = config
    (checkout / "kustomization.yaml").write_text("resources: [bases/train]\n" + field)
    if name is not None and text is not None:
        (checkout / name).write_text(text)
    git(checkout, "add", "-A")
    code, out = check("inventory.yaml", ".")
    assert code == 2
    assert "inside a .git directory" in out
    assert_no_secret(out)


def test_untracked_files_are_not_read(checkout: Path) -> None:
    # what google-github-actions/auth and similar steps leave in the workspace
    (checkout / "gha-creds-1a2b.env").write_text(f"token={TOKEN}\n")
    (checkout / "kustomization.yaml").write_text(
        "resources: [bases/train]\nconfigMapGenerator:\n- name: leak\n  envs: [gha-creds-1a2b.env]\n"
        + LEAK % "token")
    git(checkout, "add", "kustomization.yaml")
    code, out = check("inventory.yaml", ".")
    assert code == 2
    assert "configMapGenerator envs entry 'gha-creds-1a2b.env' is not tracked by git" in out
    assert_no_secret(out)


def test_untracked_yaml_among_paths_is_skipped_with_a_finding(checkout: Path) -> None:
    (checkout / "extra").mkdir()
    (checkout / "extra" / "settings.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\n")
    git(checkout, "add", "extra/settings.yaml")
    (checkout / "extra" / "kubeconfig.yaml").write_text(
        f"apiVersion: v1\nkind: Config\nusers:\n- name: ci\n  user: {{token: {TOKEN}}}\n")
    code, out = check("inventory.yaml", "bases", "extra", "--format", "json")
    report = json.loads(out[out.index("{"):])
    skipped = [f for f in report["findings"] if f["rule"] == "TG123"]
    assert [f["file"] for f in skipped] == ["extra/kubeconfig.yaml"]
    assert "not read: it is not tracked by git" in skipped[0]["message"]
    assert_no_secret(out)
    # named on its own, the file is an input error, never read either
    code, out = check("inventory.yaml", "extra/kubeconfig.yaml")
    assert code == 2 and "is not tracked by git" in out
    assert_no_secret(out)


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "sarif", "github"])
def test_generated_values_and_credential_shapes_are_redacted(checkout: Path, fmt: str, tmp_path: Path) -> None:
    # A tracked file (committed by the pull request) whose value reaches an ignore reason: the
    # value came out of a generated ConfigMap and is credential-shaped, so it is never echoed.
    (checkout / "note.txt").write_text(f"{TOKEN}\n")
    (checkout / "kustomization.yaml").write_text(
        "resources: [bases/train]\nconfigMapGenerator:\n- name: leak\n  files: [note=note.txt]\n"
        + LEAK % "note")
    git(checkout, "add", "-A")
    out_file = tmp_path / f"report.{fmt}"
    code, out = check("inventory.yaml", ".", "--format", fmt, "-o", str(out_file), "--output-format", fmt)
    assert code == 1, out
    assert "[redacted]" in out
    assert_no_secret(out)
    written = out_file.read_text()
    assert "[redacted]" in written
    assert_no_secret(written)
    if fmt in ("json", "sarif"):
        json.loads(written)  # the replacement keeps the report valid


def test_a_generated_tree_outside_git_is_still_read(checkout: Path) -> None:
    """`topogate generate -o out` in CI writes files git does not track: they carry the
    generated header, so the tree they form is read (the demo's own path)."""
    res = invoke("generate", "inventory.yaml", "-o", "out")
    assert res.exit_code == 0, res.output
    code, out = check("inventory.yaml", "--rendered", "out", "out/clusters/lab", "out/monitoring/lab")
    assert code == 0, out


def test_redact_shapes_and_registered_values() -> None:
    assert redact.redact(f"extraheader = AUTHORIZATION: basic {BASIC}") == "extraheader = AUTHORIZATION:[redacted]"
    assert redact.redact(f"x {BASIC} y") == "x [redacted] y"  # base64 of a token
    for shaped in (TOKEN, "github_pat_" + "x1" * 20, "AKIA" + "ABCDEFGHIJKLMNOP",
                   "gho_" + "q" * 36, "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTYifQ.c2ln"):
        assert redact.redact(f"<{shaped}>") == "<[redacted]>", shaped
    assert redact.redact("aws_secret_access_key = " + "w" * 40) == "aws_secret_access_key[redacted]"
    # ordinary report text is left alone: names, ports, digests, paths
    plain = ("PyTorchJob/ml-team/llama-ft Worker -> Master TCP 23456 at "
             "clusters/gpu-east/workloads/ml-team/llama-ft/kustomization.yaml:3:1 "
             "merge base 6b6f1d8c0a4e2b7f9d1c3e5a7b9d0f2e4c6a8b0d")
    assert redact.redact(plain) == plain
    value = "s3cr3t-value-of-a-config"
    redact.register([f"password: {value}\n"])
    for form in (value, value[1:], value[:-1], base64.b64encode(f"u:{value}".encode()).decode()):
        assert value not in redact.redact(f"a {form} b").replace("[redacted]", ""), form
        assert "[redacted]" in redact.redact(f"a {form} b"), form
    redact.register(["short"])  # under MIN_CHARS: not worth redacting everywhere
    assert redact.redact("short") == "short"


def test_children_get_an_allow_listed_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "w" * 40)
    proc = subproc.run(["env"], _offline_env())
    assert proc.returncode == 0
    names = {line.split("=", 1)[0] for line in proc.stdout.splitlines()}
    assert "PATH" in names and "GIT_ALLOW_PROTOCOL" in names
    assert not names & {"GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY"}


@pytest.mark.parametrize("fmt", ["text", "json", "sarif", "github", "markdown", "junit"])
@pytest.mark.parametrize("spelled", ["Files: [.git/config]", "FILES: [.git/config]", "file\u017f: [.git/config]",
                                     "<<: {files: [.git/config]}"])
def test_git_config_named_under_another_spelling_is_never_read(checkout: Path, fmt: str, spelled: str) -> None:
    """kustomize reads `Files:` (any case, the long s) as `files:` and expands `<<`: the token
    reached every report format while topogate's walk looked for `files:` alone."""
    (checkout / "kustomization.yaml").write_text(
        f"resources: [bases/train]\nconfigMapGenerator:\n- name: leak\n  {spelled}\n" + LEAK % "config")
    git(checkout, "add", "kustomization.yaml")
    code, out = check("inventory.yaml", ".", "--format", fmt)
    assert code == 2, out
    assert "kustomization.yaml:4:3: kustomize" in out
    assert_no_secret(out)
