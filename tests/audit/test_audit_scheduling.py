"""The scheduled-use examples: the nightly GitHub workflow and the in-cluster CronJob.

The workflow is parsed and its steps checked; then its own audit and verdict scripts are run
with bash against moto_server, so the example is known to do what it says.
"""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogate.audit.egress import default_window
from topogate.core.exitcodes import ExitCode

pytest.register_assert_rewrite("audit_support")
pytest_plugins = ["audit_support"]
from audit_support import AUDIT_FIXTURES, REPO, Moto, page, result  # noqa: E402
from conftest import invoke  # noqa: E402

WORKFLOW = REPO / "examples" / "github-workflows" / "nightly-egress-audit.yml"
CRONJOB = REPO / "examples" / "cronjob-egress-audit.yaml"


def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as a boolean
    return dict(data)


def steps() -> list[dict[str, Any]]:
    return list(workflow()["jobs"]["audit"]["steps"])


def step_using(prefix: str) -> dict[str, Any]:
    return next(s for s in steps() if str(s.get("uses", "")).startswith(prefix))


def step_named(word: str) -> dict[str, Any]:
    return next(s for s in steps() if word in str(s.get("name", "")))


def test_workflow_is_scheduled_and_uses_oidc_not_keys() -> None:
    wf = workflow()
    assert wf["on"]["schedule"][0]["cron"].split()[2:] == ["*", "*", "*"]  # nightly
    assert "workflow_dispatch" in wf["on"]
    assert wf["permissions"] == {"contents": "read", "id-token": "write"}
    creds = step_using("aws-actions/configure-aws-credentials@")
    assert creds["with"]["role-to-assume"].startswith("arn:aws:iam::")
    assert "aws-access-key-id" not in creds["with"]
    assert "secrets." not in WORKFLOW.read_text()
    order = [s.get("uses", s.get("name")) for s in steps()]
    assert order.index(creds["uses"]) < order.index(step_named("markdown")["name"])


def test_workflow_reports_markdown_uploads_json_and_fails_over_budget() -> None:
    audit = step_named("markdown")
    assert "topogate audit egress" in audit["run"] and "--format markdown" in audit["run"]
    assert "$GITHUB_STEP_SUMMARY" in audit["run"]
    as_json = step_named("JSON")
    assert "--format json" in as_json["run"] and "egress-audit.json" in as_json["run"]
    upload = step_using("actions/upload-artifact@")
    assert "egress-audit.json" in upload["with"]["path"] and upload["if"] == "always()"
    verdict = step_named("over budget")
    assert verdict["if"] == "steps.audit.outputs.rc != '0'"
    for s in steps():
        if "run" in s:
            subprocess.run(["bash", "-n"], input=s["run"], text=True, check=True)


def _run_step(script: str, tmp_path: Path, rc: str = "") -> tuple[int, Path, Path]:
    summary, output = tmp_path / "summary.md", tmp_path / "output"
    env = dict(os.environ)
    env.update(GITHUB_STEP_SUMMARY=str(summary), GITHUB_OUTPUT=str(output),
               INVENTORY=str(AUDIT_FIXTURES / "inventory.yaml"),
               MANIFESTS=str(AUDIT_FIXTURES / "bases"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}")
    script = script.replace("${{ steps.audit.outputs.rc }}", rc)
    proc = subprocess.run(["bash", "-c", script], env=env, cwd=tmp_path, text=True,
                          capture_output=True, timeout=120)
    return proc.returncode, summary, output


def test_workflow_scripts_run_against_moto(moto_ce: Moto, tmp_path: Path) -> None:
    key = "topogate.dev/cluster"
    # The step uses the default window, and a day outside the window is a malformed answer.
    first, end = default_window(dt.date.today())
    days = [(first + dt.timedelta(days=i)).isoformat() for i in range((end - first).days)]
    moto_ce.seed(page([result(days[0], [(f"{key}$gpu-east", "DataTransfer-Regional-Bytes",
                                         "7.50", "750")])] + [result(d, []) for d in days[1:]]))
    code, summary, output = _run_step(step_named("markdown")["run"], tmp_path)
    assert code == 0  # the step records the verdict; a later step fails the run
    assert summary.read_text().startswith("## ❌ Inter-AZ egress audit: OVER BUDGET")
    assert output.read_text().strip() == "rc=1"
    code, _, _ = _run_step(step_named("over budget")["run"], tmp_path, rc="1")
    assert code == 1
    code, _, _ = _run_step(step_named("over budget")["run"], tmp_path, rc="75")
    assert code == 75


def cronjob_docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(CRONJOB.read_text()) if d]


def test_cronjob_and_service_account_validate_against_kubernetes_schema() -> None:
    import kubernetes_validate

    docs = cronjob_docs()
    assert [d["kind"] for d in docs] == ["ServiceAccount", "CronJob"]
    for d in docs:
        kubernetes_validate.validate(d, "1.37.0", strict=True)


def test_cronjob_uses_irsa_and_the_audit_exit_codes() -> None:
    sa, cj = cronjob_docs()
    assert sa["metadata"]["annotations"]["eks.amazonaws.com/role-arn"].startswith("arn:aws:iam::")
    job = cj["spec"]["jobTemplate"]["spec"]
    pod = job["template"]["spec"]
    assert pod["serviceAccountName"] == sa["metadata"]["name"]
    assert sa["metadata"]["namespace"] == cj["metadata"]["namespace"]
    (container,) = pod["containers"]
    assert container["args"][:2] == ["audit", "egress"]
    assert not any(e["name"].startswith("AWS_SECRET") or e["name"] == "AWS_ACCESS_KEY_ID"
                   for e in container.get("env", []))
    # Permanent failures fail the Job at once; only 75 (temporary) is retried.
    permanent = set(job["podFailurePolicy"]["rules"][0]["onExitCodes"]["values"])
    assert permanent == {ExitCode.OVER_BUDGET, ExitCode.BAD_INVOCATION, ExitCode.ACCESS_DENIED,
                         ExitCode.CONFIG}
    assert ExitCode.TEMPORARY not in permanent


def test_cronjob_has_a_writable_tmp_on_a_read_only_root() -> None:
    _, cj = cronjob_docs()
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert "emptyDir" in volumes[mounts["/tmp"]]


def test_cronjob_documents_the_image_it_needs() -> None:
    text = CRONJOB.read_text()
    assert "placeholder" in text and "no published topogate image" in text
    assert "kubectl is needed only" in text and "cause not analysed" in text


def test_cronjob_args_audit_with_only_the_inventory_mounted(moto_ce: Moto, tmp_path: Path) -> None:
    """The CronJob's own args, with its mount replaced by a directory holding only the
    inventory (as the ConfigMap does): the cost is audited, the cause is not."""
    _, cj = cronjob_docs()
    pod = cj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "inventory"]
    mounted = tmp_path / "mount"
    mounted.mkdir()
    (mounted / "inventory.yaml").write_text((AUDIT_FIXTURES / "inventory.yaml").read_text())
    args = [a.replace(mount["mountPath"], str(mounted)) for a in container["args"]]
    key = "topogate.dev/cluster"
    moto_ce.seed(page([result("2026-11-24", [(f"{key}$gpu-east", "DataTransfer-Regional-Bytes",
                                              "7.50", "750")])]))
    res = invoke(*args, "--start", "2026-11-24", "--end", "2026-11-25")
    assert res.exit_code == ExitCode.OVER_BUDGET, res.stderr
    assert "Verdict: OVER BUDGET: gpu-east" in res.stdout
    (line,) = res.stderr.strip().splitlines()
    assert line.startswith("topogate audit: cause not analysed: ")


def test_workflow_checks_drift_with_a_role_not_a_stored_kubeconfig() -> None:
    drift = workflow()["jobs"]["drift"]
    creds = [s for s in drift["steps"] if str(s.get("uses", "")).startswith("aws-actions/configure-aws-credentials@")]
    assert creds and creds[0]["with"]["role-to-assume"].startswith("arn:aws:iam::")
    runs = [s["run"] for s in drift["steps"] if "run" in s]
    assert any("aws eks update-kubeconfig" in r for r in runs)
    (check,) = [r for r in runs if r.startswith("topogate drift")]
    assert "--kubeconfig" in check and "--format github" in check
    for r in runs:
        subprocess.run(["bash", "-n"], input=r, text=True, check=True)
