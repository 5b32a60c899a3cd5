"""docs/adopting.md, run: its console blocks and its diffs, in page order, in one copy of
fixtures/adopt (a git repository of its own).

Each console block runs in a bash session at the repository's root and must print what the
page shows (exact blocks; abridged ones as a selection, tests/docs/test_docs.py's rules); each
```diff block is applied with `git apply`, as a reader would make the edit. The walk is the
adoption the page describes, so the claims it rests on are asserted here too: the first check
fails on real findings only, the baseline turns them into counted ones, the two-owner finding
names both roots, after adoption nothing is baselined and nothing fails, the recorded FQDN
flows are decided by their names, and a one-rule change is one row of `diff`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
from conftest import REPO
from test_docs import _FENCE, _MARK, Block, _env, _rewrite, _subsequence

PAGE = "docs/adopting.md"
FIXTURE = REPO / "fixtures" / "adopt"
GIT_ID = {"GIT_AUTHOR_NAME": "ci", "GIT_AUTHOR_EMAIL": "ci@example.com", "GIT_COMMITTER_NAME": "ci",
          "GIT_COMMITTER_EMAIL": "ci@example.com", "GIT_CONFIG_NOSYSTEM": "1"}


@dataclass(frozen=True)
class Edit:
    """A ```diff block: the edit the reader makes."""
    start: int
    text: str


def steps(page: str = PAGE) -> list[Block | Edit]:
    lines = (REPO / page).read_text().splitlines()
    out: list[Block | Edit] = []
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        j = lines.index(m.group(1), i + 1)
        body = tuple(lines[i + 1:j])
        prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
        if m.group(2) == "diff":
            out.append(Edit(i + 1, "\n".join(body) + "\n"))
        elif not m.group(2) and body and body[0].startswith("$ "):
            out.append(Block(page, i + 1, j, body, prev.strip() == "<!-- abridged -->"))
        i = j + 1
    return out


def _git(repo: Path, *args: str, stdin: str | None = None) -> None:
    subprocess.run(["git", *args], cwd=repo, input=stdin, check=True, capture_output=True, text=True,
                   env={**_env(), **GIT_ID}, timeout=60)


def _run(block: Block, repo: Path) -> list[list[str]]:
    script = "rc=0\n" + "".join(f"printf '%s\\n' '{_MARK}'; (exit $rc); {cmd} 2>&1; rc=$?\n"
                                 for cmd, _ in block.commands)
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-c", script], cwd=repo, env={**_env(), **GIT_ID},
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
    parts = proc.stdout.split(_MARK + "\n")[1:]
    assert len(parts) == len(block.commands), (block.where(), proc.stdout, proc.stderr)
    return [p.rstrip("\n").split("\n") if p.rstrip("\n") else [] for p in parts]


@pytest.fixture(scope="module")
def walk(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
         ) -> tuple[Path, dict[str, list[str]], list[str]]:
    """Run the page. ({first command of a block + '#n' for its n-th command: output}, problems)."""
    update = bool(request.config.getoption("--update-golden"))
    repo = tmp_path_factory.mktemp("adopt") / "platform"
    shutil.copytree(FIXTURE, repo, symlinks=True)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "before topogate")
    outputs: dict[str, list[str]] = {}
    problems: list[str] = []
    for step in steps():
        if isinstance(step, Edit):
            proc = subprocess.run(["git", "apply", "--whitespace=nowarn", "-"], cwd=repo, input=step.text,
                                  capture_output=True, text=True, env=_env(), timeout=60)
            if proc.returncode:
                problems.append(f"{PAGE}:{step.start}: the diff does not apply: {proc.stderr.strip()}")
            continue
        real = _run(step, repo)
        for n, ((cmd, _), out) in enumerate(zip(step.commands, real, strict=True)):
            outputs[f"{cmd}#{step.start}.{n}"] = out
        if step.abridged:
            for (cmd, shown), out in zip(step.commands, real, strict=True):
                missing = _subsequence(shown, out)
                if missing is not None:
                    problems.append(f"{step.where()}: `{cmd}` no longer prints {missing!r} (an abridged "
                                    "block: edit it by hand)\n" + "\n".join(out))
            continue
        actual = [ln for (cmd, _), out in zip(step.commands, real, strict=True) for ln in [f"$ {cmd}", *out]]
        if actual != list(step.lines):
            if update:
                _rewrite(step, actual)
            else:
                problems.append(f"{step.where()} is stale: run pytest --update-golden and review\n"
                                + "\n".join(actual))
    return repo, outputs, problems


def _out(outputs: dict[str, list[str]], command: str, nth: int = 0) -> list[str]:
    """The output of the nth run of `command` on the page."""
    runs = [v for k, v in outputs.items() if k.rsplit("#", 1)[0] == command]
    return runs[nth]


def test_the_page_is_what_the_commands_print(walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    _, _, problems = walk
    assert not problems, "\n\n".join(problems)


def test_the_first_check_fails_on_real_findings_only(walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    _, outputs, _ = walk
    first = _out(outputs, "topogate check")
    rules = sorted({m.group(1) for ln in first if (m := re.search(r" error (TG\d+) ", ln))})
    # what the repository does: team policies across the zones, jobs that can split. No finding
    # of the inventory being misread (a pool the GPU-model selector does not fit, a file twice).
    assert rules == ["TG102", "TG107", "TG112"], first
    assert "MPIJob/vision/vision-bert can be split" in "\n".join(first)
    assert not any("llm-finetune can be split" in ln for ln in first)
    assert first[-1].startswith("FAIL: ")


def test_the_baseline_holds_today_and_the_adoption_empties_it(
        walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    repo, outputs, _ = walk
    errors = int(re.search(r"FAIL: (\d+) errors", _out(outputs, "topogate check")[-1]).group(1))  # type: ignore[union-attr]
    baselined = _out(outputs, "topogate check | tail -n 5")
    assert baselined[-1] == f"ok: 0 errors, 0 warnings, {errors} baselined in 4 workloads"
    adopted = _out(outputs, "git add -A && topogate check", 1)
    assert adopted[-1] == "ok: 0 errors, 0 warnings in 4 workloads"
    assert f"{errors} entries no finding matches any more" in "\n".join(adopted)
    data = json.loads((repo / ".topogate-baseline.json").read_text())
    assert data["findings"] == []


def test_two_owners_name_both_roots(walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    _, outputs, _ = walk
    both = "\n".join(_out(outputs, "git add -A && topogate check", 0))
    # every job: the team's Application and topogate's both apply it
    for job, team in (("PyTorchJob/llm/llm-finetune", "teams/llm/overlays/prod"), ("MPIJob/vision/vision-bert", "teams/vision"),
                      ("JobSet/research/research-sweep", "teams/research"), ("TrainJob/eval/eval-nightly", "teams/eval")):
        assert re.search(rf"TG007 duplicate-object: {job} is rendered by two kustomization roots, "
                         rf"{team} and deploy/argocd/clusters/ml-prod", both), both


def test_fqdn_flows_are_decided_by_their_names(walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    _, outputs, _ = walk
    before = "\n".join(_out(outputs, "topogate replay flows/recorded.jsonl"))
    # the two S3 flows are allowed by the inventory's fqdns (by name, the address is Amazon's);
    # only the package index is denied, and the suggestion is its name
    assert "observed but denied by the tree: 1" in before and "amazonaws.com" not in before
    suggested = "\n".join(_out(outputs, "topogate replay flows/recorded.jsonl --suggest"))
    assert 'fqdns: ["files.pythonhosted.org"]' in suggested and "/32" not in suggested
    after = _out(outputs, "topogate generate -o deploy -q && topogate replay flows/recorded.jsonl | head -n 2")
    assert after[-1] == "observed but denied by the tree: 0"


def test_one_rule_is_one_row_and_fails_the_world_class(walk: tuple[Path, dict[str, list[str]], list[str]]) -> None:
    _, outputs, _ = walk
    rows = [ln for ln in _out(outputs, "git add -A && topogate diff --base HEAD") if ln.lstrip().startswith("OPENED")]
    assert rows == ["  OPENED  world -> llm/PyTorchJob/llm-finetune/Master  6006/TCP"]
    assert _out(outputs, "topogate diff --base HEAD --fail-on opened-from-world > /dev/null; echo $?") == ["1"]


def test_the_fixture_is_shaped_like_a_platform_repository() -> None:
    # Not the existing fixtures' shape: an app of apps, team Applications, the four job kinds.
    kinds = set()
    for p in sorted(FIXTURE.rglob("*.yaml")):
        kinds |= set(re.findall(r"^kind: (\w+)$", p.read_text(), re.M))
    assert {"Application", "PyTorchJob", "MPIJob", "JobSet", "TrainJob", "ClusterTrainingRuntime",
            "CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy"} <= kinds
    assert "nvidia.com/gpu.product" in (FIXTURE / "teams/llm/base/pytorchjob.yaml").read_text()
    assert os.path.isfile(FIXTURE / "flows" / "recorded.jsonl")
