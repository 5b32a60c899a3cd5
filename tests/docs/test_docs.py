"""Docs that cannot go stale: every console block is real output, every relative link resolves.

A console block is a fenced block without a language whose first line starts with `$ `. Its
`$ ` lines are run, in order, in one bash session (cwd: a scratch directory holding a copy of
this checkout's fixtures, so relative paths read as in the repository root), and each
command's output (stdout, then stderr) must be the lines that follow it, exactly. A block right
after an `<!-- abridged -->` comment shows a selection: its output lines must appear in the real
output in the same order, and a `...` line stands for lines left out.

`pytest --update-golden` rewrites the exact blocks with what the commands print now (review the
diff); abridged ones are edited by hand. CONSOLE_BLOCKS lists the blocks each page must have, so
a block that disappears fails too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO, kubectl

PAGES = ["README.md", *sorted(p.relative_to(REPO).as_posix() for p in (REPO / "docs").glob("*.md")),
         "examples/README.md", "benchmarks/README.md"]

# (page, first command) of every console block, in page order.
CONSOLE_BLOCKS: dict[str, list[str]] = {
    "README.md": [
        "topogate generate fixtures/lab/inventory.yaml -o out",
        "topogate check fixtures/lab/inventory.yaml fixtures/incident/broken",
        "topogate explain fixtures/lab/inventory.yaml train fixtures/incident/broken --format mermaid",
        "topogate explain fixtures/multi/inventory.yaml llama-ft --format mermaid",
        "topogate rules",
        "topogate trace fixtures/trace/lab-zone-label --from ml-demo/Deployment/gpu-workers --to "
        "ml-demo/Deployment/coordinator --port 23456",
        "git init -q -b main && git add -A && git -c user.name=ci -c user.email=ci@example.com commit -qm base",
        "topogate replay fixtures/flows/incident-fixed.jsonl fixtures/lab/inventory.yaml fixtures/incident/fixed",
    ],
    "docs/inventory.md": [
        "topogate schema -o .topogate/inventory.schema.json",
    ],
    "docs/replay.md": [
        "topogate replay fixtures/flows/incident-fixed.jsonl fixtures/lab/inventory.yaml fixtures/incident/fixed",
    ],
    "docs/cli.md": [
        "topogate generate fixtures/multi/inventory.yaml -o deploy > /dev/null",
    ],
    "docs/adopting.md": [
        "topogate check",
        "topogate baseline",
        "topogate generate -o deploy -q",
        "git rm -rq teams/llm/overlays platform/policies/teams.yaml apps/vision-bert.yaml apps/research.yaml "
        "apps/eval.yaml",
        "topogate baseline",
        "topogate replay flows/recorded.jsonl",
        "topogate generate -o deploy -q && topogate replay flows/recorded.jsonl | head -n 2",
        "git add -A && topogate diff --base HEAD",
    ],
    "docs/diff.md": [
        "git init -q -b main && git add -A && git -c user.name=ci -c user.email=ci@example.com commit -qm base",
    ],
    "docs/audit.md": [
        "topogate audit egress fixtures/audit/inventory.yaml --start 2026-11-24 --end 2026-11-27 fixtures/audit/bases",
    ],
    "docs/gitops.md": [
        "topogate generate fixtures/multi/inventory.yaml -o deploy > /dev/null",
        "topogate check fixtures/lab/inventory.yaml fixtures/incident/broken --format github",
        "topogate check fixtures/lab/inventory.yaml fixtures/incident/broken --format markdown",
        "topogate generate fixtures/lab/inventory.yaml -o deploy > /dev/null",
        "topogate check fixtures/gitops-flux/inventory.yaml fixtures/gitops-flux/clusters",
        "mkdir -p staging/clusters/west && sed 's/TRAIN_ZONE: zone-c/TRAIN_ZONE: zone-x/' "
        "fixtures/gitops-flux/clusters/west/flux.yaml > staging/clusters/west/flux.yaml",
        "topogate check fixtures/gitops-argocd/inventory.yaml fixtures/gitops-argocd/argocd --format github",
    ],
    "docs/trace.md": [
        "topogate trace fixtures/trace/lab --from ml-demo/Deployment/gpu-workers --to "
        "ml-demo/Deployment/coordinator --port 23456",
        "topogate trace fixtures/trace/lab-zone-label --from ml-demo/Deployment/gpu-workers --to "
        "ml-demo/Deployment/coordinator --port 23456",
        "topogate trace fixtures/trace/lab-zone-label --from ml-demo/Deployment/gpu-workers --to "
        "ml-demo/Deployment/coordinator",
        "topogate trace fixtures/trace/lab-pytorchjob/fixed --from ml-demo/PyTorchJob/train/Worker "
        "--to ml-demo/PyTorchJob/train/Master --port rendezvous",
    ],
}

# Pages that are one walk: each block runs where the one before left the repository, with the
# page's diffs applied between them; the named test runs them in order.
WALKTHROUGHS = {"docs/adopting.md": "tests/docs/test_adopting.py"}

# Blocks whose commands need a service this test does not start; the named test checks them.
CHECKED_ELSEWHERE = {
    ("docs/audit.md", "topogate audit egress"):
        "tests/audit/test_audit_moto.py renders it against moto_server (test_docs_sample_report_...)",
}

_FENCE = re.compile(r"^(`{3,})(\S*)[ \t]*$")
_MARK = "@@topogate-docs-command-7f3c@@"


@dataclass(frozen=True)
class Block:
    page: str
    start: int  # 0-based line index of the first body line
    end: int  # 0-based index of the closing fence
    lines: tuple[str, ...]
    abridged: bool

    @property
    def commands(self) -> list[tuple[str, list[str]]]:
        """(command, expected output lines) in order."""
        out: list[tuple[str, list[str]]] = []
        for ln in self.lines:
            if ln.startswith("$ "):
                out.append((ln[2:], []))
            else:
                out[-1][1].append(ln)
        return out

    def where(self) -> str:
        return f"{self.page}:{self.start}"


def console_blocks(page: str) -> list[Block]:
    lines = (REPO / page).read_text().splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang = m.group(1), m.group(2)
        j = next((k for k in range(i + 1, len(lines)) if lines[k] == fence), len(lines))
        body = tuple(lines[i + 1:j])
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        if not lang and body and body[0].startswith("$ "):
            blocks.append(Block(page, i + 1, j, body, prev.strip() == "<!-- abridged -->"))
        i = j + 1
    return blocks


def _env() -> dict[str, str]:
    bindir = os.path.dirname(sys.executable)
    path = os.pathsep.join([bindir, os.path.dirname(kubectl()), "/usr/local/bin", "/usr/bin", "/bin"])
    env = {"PATH": path, "HOME": os.environ.get("HOME", "/tmp"), "LC_ALL": "C.UTF-8", "NO_COLOR": "1",
           "COLUMNS": "100"}
    if "PYTHONPATH" in os.environ:  # a worktree run exercises that tree in the subprocesses too
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def run_block(block: Block, tmp: Path) -> list[list[str]]:
    """Each command's output lines, run in one bash session in `tmp`."""
    # A copy, not a symlink: tools print resolved paths, which must read as in the repository.
    shutil.copytree(REPO / "fixtures", tmp / "fixtures", symlinks=True)
    # `(exit $rc)` hands each command's status to the next line, so `$ echo $?` shows it.
    script = "rc=0\n" + "".join(f"printf '%s\\n' '{_MARK}'; (exit $rc); {cmd} 2>&1; rc=$?\n"
                                 for cmd, _ in block.commands)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=tmp, env=_env(),
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    parts = proc.stdout.split(_MARK + "\n")[1:]
    assert len(parts) == len(block.commands), (block.where(), proc.stdout, proc.stderr)
    return [p.rstrip("\n").split("\n") if p.rstrip("\n") else [] for p in parts]


def _subsequence(shown: list[str], real: list[str]) -> str | None:
    """None when every shown line (but `...`) appears in `real` in order; else the first that does not."""
    it = iter(real)
    for ln in shown:
        if ln.strip() == "...":
            continue
        if not any(r == ln for r in it):
            return ln
    return None


ALL = [(page, b) for page in PAGES if (REPO / page).exists() for b in console_blocks(page)]


def test_every_expected_console_block_is_there() -> None:
    found: dict[str, list[str]] = {}
    for page, b in ALL:
        found.setdefault(page, []).append(b.commands[0][0])
    assert found == CONSOLE_BLOCKS


@pytest.mark.parametrize("block", [b for p, b in ALL if p not in WALKTHROUGHS], ids=lambda b: b.where())
def test_console_block_is_real_output(block: Block, tmp_path: Path, update_golden: bool) -> None:
    first = block.commands[0][0]
    if any(block.page == p and first.startswith(c) for p, c in CHECKED_ELSEWHERE):
        return
    outputs = run_block(block, tmp_path)
    if block.abridged:
        for (cmd, shown), real in zip(block.commands, outputs, strict=True):
            missing = _subsequence(shown, real)
            assert missing is None, (f"{block.where()}: `{cmd}` no longer prints {missing!r} "
                                     "(an abridged block: edit it by hand)\n" + "\n".join(real))
        return
    actual = [ln for (cmd, _), out in zip(block.commands, outputs, strict=True) for ln in [f"$ {cmd}", *out]]
    if update_golden and actual != list(block.lines):
        _rewrite(block, actual)
        return
    assert actual == list(block.lines), f"{block.where()} is stale: run pytest --update-golden and review"


def _rewrite(block: Block, actual: list[str]) -> None:
    path = REPO / block.page
    lines = path.read_text().splitlines(keepends=True)
    # Locate the block again by content: an earlier rewrite in this run may have moved it.
    old = [ln + "\n" for ln in block.lines]
    for i in range(len(lines)):
        if lines[i:i + len(old)] == old:
            lines[i:i + len(old)] = [ln + "\n" for ln in actual]
            tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}")
            tmp.write_text("".join(lines))
            os.replace(tmp, path)
            return
    raise AssertionError(f"{block.where()}: block not found again for rewriting")


_EXCERPT = re.compile(r"^<!-- excerpt: (\S+) -->$")


def excerpts(page: str) -> list[tuple[str, list[str]]]:
    """(file, shown lines) of every fenced block right after an `<!-- excerpt: FILE -->` line."""
    lines = (REPO / page).read_text().splitlines()
    out: list[tuple[str, list[str]]] = []
    for i, ln in enumerate(lines[:-1]):
        m = _EXCERPT.match(ln)
        if m:
            fm = _FENCE.match(lines[i + 1])
            assert fm, f"{page}:{i + 1}: an excerpt comment must be followed by a fenced block"
            end = lines.index(fm.group(1), i + 2)
            out.append((m.group(1), lines[i + 2:end]))
    return out


@pytest.mark.parametrize("page", [p for p in PAGES if (REPO / p).exists() and excerpts(p)])
def test_file_excerpts_are_in_the_file(page: str) -> None:
    # A generated file shown in the docs is an excerpt of its golden copy, so the golden update
    # that changes the file fails here until the page follows.
    for file, shown in excerpts(page):
        missing = _subsequence(shown, (REPO / file).read_text().splitlines())
        assert missing is None, f"{page}: {file} no longer has {missing!r}"


def test_argocd_wave_table_is_what_kustomize_builds(tmp_path: Path) -> None:
    from conftest import kustomize_build

    from topogate.generators import render_tree
    from topogate.sources.inventory import load_inventory
    from topogate.tree import writer

    doc = (REPO / "docs" / "gitops.md").read_text()
    m = re.search(r"sorted by wave:\n\n```\n(.*?)```\n", doc, re.S)
    assert m, "docs/gitops.md lost its sync-wave table"
    out = tmp_path / "deploy"
    writer.write_tree(out, render_tree(load_inventory(str(REPO / "fixtures/multi/inventory.yaml")), str(out)))
    rows = []
    for o in kustomize_build(out / "argocd" / "clusters" / "gpu-east"):
        md = o["metadata"]
        wave = int(md.get("annotations", {}).get("argocd.argoproj.io/sync-wave", "0"))
        rows.append((wave, o["kind"], md.get("namespace", "-"), md["name"]))
    table = "".join(f"wave {w:>2}  {k:<32} {ns:<8} {n}".rstrip() + "\n" for w, k, ns, n in sorted(rows))
    assert m.group(1) == table


def test_readme_audit_sample_is_part_of_the_tested_one() -> None:
    # README shows one cluster of the audit report; docs/audit.md holds the whole report, which
    # tests/audit/test_audit_moto.py renders against moto_server.
    readme = (REPO / "README.md").read_text()
    m = re.search(r"```\n(gpu-east  aws us-east-1 .*?)```\n", readme, re.S)
    assert m, "README lost its audit sample"
    assert m.group(1) in (REPO / "docs" / "audit.md").read_text()


# --- links ---

_LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


def _anchors(md: Path) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens."""
    out: set[str] = set()
    in_code = False
    for ln in md.read_text().splitlines():
        if _FENCE.match(ln):
            in_code = not in_code
        if not in_code and ln.startswith("#"):
            title = ln.lstrip("#").strip().lower()
            out.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return out


def _links(page: str) -> list[str]:
    text = re.sub(r"(?ms)^(`{3,}).*?^\1[ \t]*$", "", (REPO / page).read_text())  # not inside code
    return [u for u in _LINK.findall(text) if not re.match(r"[a-z]+:", u)]


@pytest.mark.parametrize("page", [p for p in PAGES if (REPO / p).exists()])
def test_relative_links_resolve(page: str) -> None:
    broken: list[str] = []
    for url in _links(page):
        target, _, anchor = url.partition("#")
        path = (REPO / page).parent / target if target else REPO / page
        if not path.exists() or REPO.resolve() not in path.resolve().parents and path.resolve() != REPO.resolve():
            broken.append(f"{url}: no such file in the repository")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{url}: no heading #{anchor} in {target or page}")
    assert broken == [], f"{page}: {broken}"


def test_rule_docs_name_files_generate_writes() -> None:
    # docs/rules.md (from the rule docstrings) names generated files as `out/...`: each must be a
    # file `topogate generate fixtures/lab/inventory.yaml -o out` really writes.
    text = (REPO / "docs" / "rules.md").read_text()
    named = set(re.findall(r"`out/([\w./-]+)`", text))
    assert named, "docs/rules.md names no generated file any more: drop this test or fix the regex"
    lab = REPO / "fixtures" / "golden" / "lab"
    assert sorted(p for p in named if not (lab / p).is_file()) == []
