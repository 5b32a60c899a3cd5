"""Hostile inputs named on the command line: the inventory, the files of its bases and
`--from-file` snapshots go through the limits every manifest has (issue 21, item 2): only
regular files, at most TOPOGATE_MAX_FILE_MB, only inside their repository. Each refusal is exit
2 and one line naming the file, fast; a regression (a FIFO waited on, /dev/zero read) runs in a
child with a timeout and an address-space limit, so it fails instead of taking the machine."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest
from conftest import TOPOGATE
from hostile_support import make_repo

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "fixtures" / "live" / "eks-nodes.json"
SECRET = "s3cr3t-do-not-print-0xC0FFEE"


def _limit() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def run(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """topogate ARGS in a child: a hang is a TimeoutExpired, a runaway read a MemoryError."""
    proc = subprocess.run([*TOPOGATE, *args], cwd=cwd, capture_output=True,
                          text=True, timeout=60, preexec_fn=_limit,
                          env={**os.environ, **(env or {})})
    return proc.returncode, proc.stdout, proc.stderr


def refused(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    code, out, err = run(cwd, *args, env=env)
    assert "Traceback" not in err, err
    assert code == 2, (code, out, err)
    # `check` reports an unreadable inventory as its finding TG001 on stdout, the rest on stderr
    lines = [ln for ln in (err or out).strip().splitlines() if ln.strip()]
    return "\n".join(lines)


# The commands that read the inventory: each must refuse a hostile one the same way.
COMMANDS = [
    ("generate", "inventory.yaml", "-o", "out"),
    ("generate", "inventory.yaml", "-o", "out", "--check"),
    ("check", "inventory.yaml"),
    ("explain", "inventory.yaml", "train"),
    ("drift", "inventory.yaml", "--from-file", str(SNAPSHOT)),
]


def _replace_inventory(repo: Path, how: str, outside: Path) -> None:
    inv = repo / "inventory.yaml"
    inv.unlink()
    if how == "dev-zero":
        inv.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(inv)
    elif how == "outside":
        outside.write_text(f"apiVersion: {SECRET}\nkind: [\n")
        inv.symlink_to(outside)


@pytest.mark.parametrize("how", ["dev-zero", "fifo", "outside"])
@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a[:1] + a[3:]))
def test_hostile_inventory_is_refused_by_every_command(tmp_path: Path, how: str,
                                                       args: tuple[str, ...]) -> None:
    repo = make_repo(tmp_path)
    _replace_inventory(repo, how, tmp_path / "elsewhere.yaml")
    err = refused(repo, *args)
    assert err.startswith("inventory.yaml:1:1: "), err
    assert SECRET not in err
    assert {"dev-zero": "outside the repository", "fifo": "FIFO",
            "outside": "outside the repository"}[how] in err
    assert not (repo / "out").exists()


def test_audit_refuses_an_inventory_outside_the_repository(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    _replace_inventory(repo, "outside", tmp_path / "elsewhere.yaml")
    err = refused(repo, "audit", "egress", "inventory.yaml", env={"AWS_ACCESS_KEY_ID": "x"})
    assert "inventory.yaml:1:1: " in err and "outside the repository" in err
    assert SECRET not in err


def test_inventory_over_the_file_limit_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    inv = repo / "inventory.yaml"
    inv.write_text(inv.read_text() + "#" * (2 << 20) + "\n")
    err = refused(repo, "generate", "inventory.yaml", "-o", "out", env={"TOPOGATE_MAX_FILE_MB": "1"})
    assert err.startswith("inventory.yaml:1:1: larger than 1 MB, the file limit"), err


def test_base_kustomization_symlinked_outside_is_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    kfile = repo / "bases" / "train" / "kustomization.yaml"
    (tmp_path / "elsewhere.yaml").write_text(kfile.read_text() + f"# {SECRET}\nx: [\n")
    kfile.unlink()
    kfile.symlink_to(tmp_path / "elsewhere.yaml")
    err = refused(repo, "generate", "inventory.yaml", "-o", "out")
    assert err.startswith("bases/train/kustomization.yaml:1:1: cannot read a base manifest: "), err
    assert "outside the repository" in err and SECRET not in err


def test_base_file_that_is_a_fifo_is_refused_not_waited_on(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    job = repo / "bases" / "train" / "pytorchjob.yaml"
    job.unlink()
    os.mkfifo(job)
    err = refused(repo, "generate", "inventory.yaml", "-o", "out")
    assert "resource 'pytorchjob.yaml' of base 'bases/train' is a FIFO" in err, err


@pytest.mark.parametrize("how", ["dev-zero", "fifo", "outside", "too-large"])
@pytest.mark.parametrize("command", ["drift", "check"])
def test_hostile_snapshot_is_refused(tmp_path: Path, how: str, command: str) -> None:
    repo = make_repo(tmp_path)
    snap = repo / "nodes.json"
    env = {}
    if how == "dev-zero":
        snap.symlink_to("/dev/zero")
    elif how == "fifo":
        os.mkfifo(snap)
    elif how == "outside":
        (tmp_path / "elsewhere.json").write_text(f'{{"kind": "{SECRET}", ')
        snap.symlink_to(tmp_path / "elsewhere.json")
    else:
        snap.write_text(SNAPSHOT.read_text() + " " * (2 << 20))
        env = {"TOPOGATE_MAX_FILE_MB": "1"}
    live = ("--live",) if command == "check" else ()
    err = refused(repo, command, "inventory.yaml", *live, "--from-file", "nodes.json", env=env)
    assert "nodes.json:1:1: " in err, err
    assert SECRET not in err
    assert {"dev-zero": "outside the repository", "fifo": "FIFO", "outside": "outside the repository",
            "too-large": "larger than 1 MB"}[how] in err


def test_snapshot_alias_bomb_and_deep_json_are_refused(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    bomb = ["kind: List", 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]']
    bomb += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 10)]
    bomb += ["items: *a9"]
    (repo / "bomb.yaml").write_text("\n".join(bomb) + "\n")
    err = refused(repo, "drift", "inventory.yaml", "--from-file", "bomb.yaml")
    assert "bomb.yaml:" in err and "alias bomb" in err, err
    (repo / "deep.json").write_text('{"kind": "List", "items": ' + "[" * 10_000 + "]" * 10_000 + "}")
    err = refused(repo, "drift", "inventory.yaml", "--from-file", "deep.json")
    assert err.count("\n") == 0 and "deep.json:1:1: nested" in err, err


# --- item 7: a base's build is checked like check's own builds: nothing remote is fetched ---


class _Recorder:
    """An HTTP server on 127.0.0.1 that serves a ConfigMap and records every request: the
    test's evidence that nothing was fetched."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.paths: list[str] = []
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:  # noqa: N802 - http.server's naming
                rec.paths.append(self.path)
                body = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: fetched}\n"
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                return

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("args", [("generate", "inventory.yaml", "-o", "out", "--check"),
                                  ("generate", "inventory.yaml", "-o", "out"),
                                  ("check", "inventory.yaml")], ids=" ".join)
def test_remote_resource_one_level_below_a_base_is_never_fetched(tmp_path: Path,
                                                                 args: tuple[str, ...]) -> None:
    rec = _Recorder()
    try:
        repo = make_repo(tmp_path)
        base = repo / "bases" / "train"
        (base / "extra").mkdir()
        (base / "extra" / "kustomization.yaml").write_text(f"resources:\n- {rec.url}/x.yaml\n")
        (base / "kustomization.yaml").write_text("resources:\n- pytorchjob.yaml\n- extra\n")
        code, out, err = run(repo, *args)
        assert rec.paths == [], f"fetched {rec.paths}"
        assert "Traceback" not in err
        assert code == 2, (out, err)
        assert "is remote" in err + out and "extra/kustomization.yaml:2:" in err + out, err + out
    finally:
        rec.close()


# --- item 10: what lands in a generated object is held to the target CRD at load time ---

LONG_FQDN = ".".join(["a" * 60] * 5)  # 304 characters: past the CRD's maxLength 255


@pytest.mark.parametrize("fqdn", ["x..y", LONG_FQDN, "a" * 64 + ".io", ".x.io", "x.io."])
def test_egress_fqdn_the_cilium_crd_refuses_is_refused_at_its_line(tmp_path: Path, fqdn: str) -> None:
    repo = make_repo(tmp_path)
    inv = repo / "inventory.yaml"
    text = inv.read_text()
    assert "  base: bases/train\n" in text
    inv.write_text(text.replace("  base: bases/train\n", "  base: bases/train\n  egress:\n"
                                f"  - fqdns: [ok.example.com, \"{fqdn}\"]\n    ports: [{{port: 443}}]\n"))
    err = refused(repo, "generate", "inventory.yaml", "-o", "out")
    line = text[:text.index("  base: bases/train\n")].count("\n") + 3
    assert err.startswith(f"inventory.yaml:{line}:"), err
    assert not (repo / "out").exists()


def _fqdn_schema() -> dict[str, object]:
    from topogate.inventory.schema import inventory_schema

    found: list[dict[str, object]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            fq = node.get("fqdns")
            if isinstance(fq, dict) and "items" in fq:
                found.append(fq["items"])
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(inventory_schema())
    assert found
    return found[0]


# Cilium's toFQDNs matchName (cilium.io/v2 CRD): pattern and maxLength
CRD_MATCH_NAME = r"^([-a-zA-Z0-9_]+[.]?)+$"


@pytest.mark.parametrize("name", [".".join(["a" * 63] * 3 + ["b" * 61]), "a", "x-y.z", "0.example"])
def test_every_fqdn_the_schema_accepts_the_crd_takes(name: str) -> None:
    import re

    import jsonschema

    jsonschema.validate(name, _fqdn_schema())
    assert re.fullmatch(CRD_MATCH_NAME, name) and len(name) <= 255
    jsonschema.validate("*." + name[2:] if len(name) > 2 else "*.x", _fqdn_schema())


# --- item 19: a large base without aliases is no alias bomb ---


def test_a_base_with_a_110000_key_configmap_and_no_alias_is_read(tmp_path: Path) -> None:
    repo = make_repo(tmp_path)
    base = repo / "bases" / "train"
    keys = "".join(f"  k{i}: v{i}\n" for i in range(110_000))
    (base / "big.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n" + keys)
    (base / "kustomization.yaml").write_text("resources:\n- pytorchjob.yaml\n- big.yaml\n")
    assert (base / "big.yaml").stat().st_size > 1_300_000
    code, out, err = run(repo, "generate", "inventory.yaml", "-o", "out", "--check")
    assert "alias bomb" not in err, err
    assert code in (0, 1), err  # 1: OUT does not exist yet, so every file differs


# --- item 14: a kubeconfig is code: no example passes one from the repository ---


def test_no_example_passes_a_kubeconfig_from_the_repository() -> None:
    import re

    uses = []
    for f in sorted((ROOT / "examples").rglob("*")):
        if f.is_file() and f.suffix in (".yml", ".yaml", ".sh", ".md"):
            for m in re.finditer(r"(--kubeconfig[ =]|KUBECONFIG[=:]\s*)(\S+)", f.read_text()):
                uses.append((f.name, m.group(2).strip("\"'")))
    assert uses, "the examples show where the kubeconfig comes from"
    for name, value in uses:
        assert value.startswith(("$RUNNER_TEMP", "${RUNNER_TEMP", "\"$RUNNER_TEMP", "~")), (
            f"{name}: kubeconfig {value} may be a file of the checkout")
        assert "GITHUB_WORKSPACE" not in value and not value.startswith(("./", "."))


# --- item 17: markdown output carries no link or code span from the pull request ---


def test_markdown_escapes_links_and_backticks_from_file_names() -> None:
    from topogate.report.markdown import cell, where

    class F:
        file = "deploy/[click here](https://evil.example)/`x`_*y*.yaml"
        line = 3
        object = "o"

    shown = where(F())  # type: ignore[arg-type]
    assert "[" not in shown and "](" not in shown and "`" not in shown and "*" not in shown
    assert "&#91;click here&#93;(https://evil.example)" in shown
    assert "[" not in cell("see [docs](http://x)")
