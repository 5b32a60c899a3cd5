"""docs/live.md shows real output, and the examples grant exactly what the live commands read."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from conftest import invoke

from topogate.cli.app import drift
from topogate.live.client import JOB_RESOURCES, NODES, PODS, POLICY_RESOURCES

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "live.md"


def _blocks() -> list[tuple[str, str]]:
    out = []
    for chunk in DOC.read_text().split("```console\n$ ")[1:]:
        command, rest = chunk.split("\n", 1)
        out.append((command, rest.split("```", 1)[0]))
    return out


def test_docs_show_real_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run every console block from a scratch directory that sees the repository's fixtures."""
    (tmp_path / "fixtures").symlink_to(ROOT / "fixtures")
    monkeypatch.chdir(tmp_path)
    blocks = _blocks()
    assert [b[0].split()[1] for b in blocks] == ["import", "drift", "drift", "check"]
    for command, shown in blocks:
        res = invoke(*command.split()[1:])
        if res.exception is not None and not isinstance(res.exception, SystemExit):
            raise res.exception
        output, status = shown.split("$ echo $?\n", 1)
        assert res.output == output, command
        assert status.strip() == str(res.exit_code), command
    written = (tmp_path / "inventory.yaml").read_text()
    shown_yaml = DOC.read_text().split("```yaml\n", 1)[1].split("```", 1)[0]
    # the schema line is relative to where the file is written; the doc writes it at the root
    first, rest = written.split("\n", 1)
    assert first.startswith("# yaml-language-server: $schema=")
    assert first.endswith(".topogate/inventory.schema.json")
    assert shown_yaml == "# yaml-language-server: $schema=.topogate/inventory.schema.json\n" + rest


def _docs(name: str) -> list[dict[str, object]]:
    return [d for d in yaml.safe_load_all((ROOT / "examples" / name).read_text()) if d]


def test_the_cluster_role_is_exactly_the_lists_the_commands_make() -> None:
    (role,) = [d for d in _docs("rbac-topogate-live.yaml") if d["kind"] == "ClusterRole"]
    granted = set()
    for rule in role["rules"]:  # type: ignore[index]
        assert rule["verbs"] == ["list"], rule
        granted |= {(g, r) for g in rule["apiGroups"] for r in rule["resources"]}
    read = {(r.group, r.plural) for r in (NODES, PODS, *POLICY_RESOURCES, *JOB_RESOURCES)}
    assert granted == read


@pytest.mark.parametrize("name", ["rbac-topogate-live.yaml", "cronjob-drift.yaml"])
def test_examples_are_valid_kubernetes(name: str) -> None:
    import copy

    import kubernetes_validate

    docs = _docs(name)
    assert docs, f"examples/{name} holds no object to validate"
    for d in docs:
        kubernetes_validate.validate(d, "1.37.0", strict=True)  # raises on an invalid object
    # The same validation refuses a field the API server does not know: the loop above can fail.
    broken = copy.deepcopy(docs[0])
    broken["metadata"]["labelz"] = {"typo": "x"}  # type: ignore[index]
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, "1.37.0", strict=True)


def test_the_cronjob_runs_drift_with_options_drift_has() -> None:
    (cron,) = _docs("cronjob-drift.yaml")
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]  # type: ignore[index]
    (container,) = pod["containers"]
    args = container["args"]
    assert args[0] == "drift"
    options = {o for p in drift.params for o in getattr(p, "opts", [])}
    assert {a for a in args[1:] if a.startswith("--")} <= options
    assert pod["serviceAccountName"] == "topogate-live"
    (sa,) = [d for d in _docs("rbac-topogate-live.yaml") if d["kind"] == "ServiceAccount"]
    assert sa["metadata"]["namespace"] == cron["metadata"]["namespace"]  # type: ignore[index]
    assert args[1].startswith(container["volumeMounts"][0]["mountPath"] + "/")  # the mounted inventory


def test_the_exit_code_table_is_the_audit_table() -> None:
    from topogate.core.exitcodes import ExitCode

    doc = DOC.read_text()
    for code in ExitCode:
        assert f"\n| {int(code)} | " in doc, int(code)
