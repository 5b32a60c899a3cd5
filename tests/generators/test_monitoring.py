"""Prometheus rules and the Grafana dashboard, checked with the real promtool.

- `promtool check rules` on the generated groups of every cluster of both examples;
- `promtool test rules` with fixtures/monitoring/incident.test.yaml: the incident (a PyTorchJob
  split over two zones, GPUs at 40%, Worker -> Master dropped by policy) fires the three
  critical/idle alerts, and the fix (one zone, 85%, no drops) clears them; a healthy job whose
  egress to the world and to another job is dropped fires only the warning, never the critical
  drop alert, with DCGM scraped under honorLabels false; a mutated expectation must make
  promtool fail, so the test cannot pass by promtool ignoring it;
- `promtool test rules` with fixtures/monitoring/zone-label.test.yaml: a zone label with
  capitals, named as kube-state-metrics names it;
- no rule and no alert uses the label `job` for the training job;
- every dashboard expression parses (promtool) and names only series the rules record or an
  exporter provides.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import FIXTURES, REPO, crd_errors, kustomize_build

from topogate.generators import monitoring
from topogate.generators.base import serialise
from topogate.inventory.model import Inventory
from topogate.sources.inventory import load_inventory

INCIDENT = FIXTURES / "monitoring" / "incident.test.yaml"
ZONE_LABEL = FIXTURES / "monitoring" / "zone-label.test.yaml"
# Prometheus itself adds `job` to every scraped series; the training job must never use it.
RESERVED = {"job", "instance"}


def promtool() -> str:
    """$PROMTOOL, else the one `make test` extracts into .venv, else promtool on PATH."""
    env = os.environ.get("PROMTOOL")
    if env:
        return env
    beside = REPO / ".venv" / "bin" / "promtool"
    exe = str(beside) if beside.is_file() else shutil.which("promtool")
    if exe is None:
        pytest.fail("promtool not found: `make test` extracts it from Debian's prometheus package "
                    "into .venv; or set PROMTOOL=/path/to/promtool")
    return exe


def _run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([promtool(), *args], cwd=cwd, capture_output=True, text=True, timeout=120)


def _inv(case: str) -> Inventory:
    return load_inventory(str(FIXTURES / case / "inventory.yaml"))


def _rules_file(inv: Inventory, cluster: str, directory: Path) -> Path:
    """spec.groups of the generated PrometheusRule, as the plain rules file promtool reads."""
    files = {f.path: f for f in monitoring.render(inv)}
    rule = files[f"monitoring/{cluster}/prometheusrule.yaml"].docs[0]
    assert rule["kind"] == "PrometheusRule"
    p = directory / "rules.yaml"
    p.write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}, sort_keys=False))
    return p


@pytest.mark.parametrize("case", ["lab", "multi"])
def test_promtool_check_rules(case: str, tmp_path: Path) -> None:
    inv = _inv(case)
    for c in inv.clusters:
        d = tmp_path / c.name
        d.mkdir()
        _rules_file(inv, c.name, d)
        proc = _run("check", "rules", "rules.yaml", cwd=d)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        # drops and inter-zone bytes: two rules, one name each
        n = len(monitoring.RECORDED) + 2 + len(monitoring.ALERTS)
        assert f"SUCCESS: {n} rules found" in proc.stdout, proc.stdout


def test_promtool_incident_fires_and_clears(tmp_path: Path) -> None:
    _rules_file(_inv("lab"), "lab", tmp_path)
    shutil.copy(INCIDENT, tmp_path / "incident.test.yaml")
    proc = _run("test", "rules", "incident.test.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS" in proc.stdout
    # The fixture covers each alert both firing and cleared.
    spec = yaml.safe_load(INCIDENT.read_text())
    cases = [c for t in spec["tests"] for c in t["alert_rule_test"]]
    for alert in monitoring.ALERTS:
        assert any(c["alertname"] == alert and c["exp_alerts"] for c in cases), f"{alert} never fires"
        assert any(c["alertname"] == alert and c["exp_alerts"] == [] and c["eval_time"] == "60m"
                   for c in cases), f"{alert} never shown cleared"


@pytest.mark.parametrize("alert", monitoring.ALERTS)
def test_promtool_catches_a_wrong_expectation(alert: str, tmp_path: Path) -> None:
    # Claim the alert is silent during the incident: promtool must disagree.
    _rules_file(_inv("lab"), "lab", tmp_path)
    spec = yaml.safe_load(INCIDENT.read_text())
    for t in spec["tests"]:
        for c in t["alert_rule_test"]:
            if c["alertname"] == alert and c["eval_time"] == "20m":
                c["exp_alerts"] = []
    (tmp_path / "wrong.test.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    proc = _run("test", "rules", "wrong.test.yaml", cwd=tmp_path)
    assert proc.returncode != 0
    assert alert in proc.stdout + proc.stderr


def _label_lists(expr: str) -> list[str]:
    """Label names in by/without/on/ignoring/group_left/group_right clauses and label_replace targets."""
    names: list[str] = []
    for m in re.finditer(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
        names += [n.strip() for n in m.group(1).split(",") if n.strip()]
    names += re.findall(r'label_replace\([^"]*"([a-zA-Z_][a-zA-Z0-9_]*)"', expr)
    return names


def test_no_rule_uses_the_scrape_job_label() -> None:
    for case in ("lab", "multi"):
        inv = _inv(case)
        for c in inv.clusters:
            for g in monitoring.rule_groups(inv, c):
                for r in g["rules"]:
                    used = set(_label_lists(r["expr"])) | set(r.get("labels", {}))
                    assert not used & RESERVED, (r.get("record") or r.get("alert"), used & RESERVED)
                    if "alert" in r:
                        assert "training_job" in r["annotations"]["summary"]
    # and the test's own parser sees what it should
    assert "training_job" in _label_lists(monitoring.rule_groups(_inv("lab"), _inv("lab").clusters[0])[0]
                                          ["rules"][2]["expr"])


def test_recorded_series_are_what_the_module_says() -> None:
    inv = _inv("multi")
    for c in inv.clusters:
        recorded = [r["record"] for g in monitoring.rule_groups(inv, c) for r in g["rules"] if "record" in r]
        assert tuple(dict.fromkeys(recorded)) == monitoring.RECORDED


_PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless",
                 "offset", "bool", "inf", "nan"}


def series_names(expr: str) -> set[str]:
    """Metric names an expression selects: identifiers that are not functions, keywords,
    label names (inside {...} or grouping clauses), strings, or durations."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)           # strings
    e = re.sub(r"\{[^}]*\}", "", e)                          # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                         # range/subquery durations
    e = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    names = set()
    for m in re.finditer(r"[a-zA-Z_:][a-zA-Z0-9_:]*", e):
        word = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("(") or word.lower() in _PROMQL_WORDS:
            continue
        names.add(word)
    return names


def test_series_names_parser() -> None:
    assert series_names('sum by (a, b) (rate(x_total{job="j"}[5m])) * on (a) group_left (c) y:z') == {
        "x_total", "y:z"}
    assert series_names('label_values(topogate:pod_workload:info{namespace=~"$namespace"}, training_job)') \
        == {"topogate:pod_workload:info", "training_job"}


def _dashboard(case: str, cluster: str) -> dict[str, Any]:
    inv = _inv(case)
    files = {f.path: f for f in monitoring.render(inv)}
    text = files[f"monitoring/{cluster}/dashboards/topogate.json"].text
    assert text is not None
    return dict(json.loads(text))


def _panel_exprs(dash: dict[str, Any]) -> list[str]:
    return [t["expr"] for p in dash["panels"] for t in p["targets"]]


def test_dashboard_series_exist() -> None:
    known = set(monitoring.RECORDED) | set(monitoring.EXPORTED)
    dash = _dashboard("multi", "gpu-east")
    exprs = _panel_exprs(dash)
    assert len(exprs) == len(dash["panels"]) >= 6
    for expr in exprs:
        names = series_names(expr)
        assert names, expr
        assert names <= known, (expr, names - known)
    # Template variables: label_values(<series>, <label>).
    for v in dash["templating"]["list"]:
        if v["type"] == "query":
            m = re.fullmatch(r"label_values\((.*),\s*([a-zA-Z_]+)\)", v["query"]["query"])
            assert m, v["query"]
            assert series_names(m.group(1)) <= known
    # The panels cover the three alerts' series.
    used = set().union(*(series_names(e) for e in exprs))
    assert {"topogate:training_job_zones:count", "topogate:training_job_gpu_util:avg",
            "topogate:training_job_policy_drops:rate5m"} <= used


def test_dashboard_expressions_parse(tmp_path: Path) -> None:
    # promtool parses PromQL; wrap each panel expression as a recording rule after replacing
    # Grafana's template variables with what Grafana substitutes for "All" (.*).
    dash = _dashboard("lab", "lab")
    rules = [{"record": f"dashboard:panel_{i}", "expr": e.replace("$namespace", ".*").replace("$training_job", ".*")}
             for i, e in enumerate(_panel_exprs(dash))]
    (tmp_path / "dash.yaml").write_text(yaml.safe_dump({"groups": [{"name": "d", "rules": rules}]}))
    proc = _run("check", "rules", "dash.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_monitoring_tree_builds(tmp_path: Path) -> None:
    inv = _inv("lab")
    out = tmp_path / "monitoring"
    for f in monitoring.render(inv):
        p = tmp_path / f.path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(serialise(inv, f))
    objs = kustomize_build(out / "lab")
    rule = next(o for o in objs if o["kind"] == "PrometheusRule")
    assert crd_errors(rule) == []
    cm = next(o for o in objs if o["kind"] == "ConfigMap")
    assert cm["metadata"]["name"] == "topogate-dashboard"
    assert cm["metadata"]["namespace"] == monitoring.NAMESPACE
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    dash = json.loads(cm["data"]["topogate.json"])
    assert dash["uid"] == "topogate-lab" and dash["panels"]
    assert dash["description"] == "generated by topogate from inventory.yaml, do not edit"


def test_kube_state_metrics_allowlist() -> None:
    assert monitoring.ksm_label("topology.kubernetes.io/zone") == "label_topology_kubernetes_io_zone"
    assert monitoring.ksm_label("topogate.dev/network-zone") == "label_topogate_dev_network_zone"
    assert monitoring.metric_labels_allowlist(_inv("lab")) == (
        "nodes=[topology.kubernetes.io/zone],pods=[topogate.dev/workload,topogate.dev/network-zone]")


def test_ksm_label_is_kube_state_metrics_own_sanitisation() -> None:
    # kube-state-metrics internal/store/utils.go: labelName = prefix + "_" +
    # toSnakeCase(SanitizeLabelName(key)); SanitizeLabelName: [^a-zA-Z0-9_] -> "_"; toSnakeCase:
    # ([a-z0-9])([A-Z]) -> "${1}_${2}" (non-overlapping), then lower-case.
    cases = {
        "topology.example.com/AvailabilityZone": "label_topology_example_com_availability_zone",
        "example.com/zoneID": "label_example_com_zone_id",
        "Zone": "label_zone",  # a capital at the start gets no "_"
        "ABCZone": "label_abczone",  # nor one after another capital
        "a1B2C": "label_a1_b2_c",
        "x/Y": "label_x_y",  # "_" is not [a-z0-9]: no second "_"
        "aBC": "label_a_bc",  # the match consumes "aB"; "BC" is not a match
        "eks.amazonaws.com/capacityType": "label_eks_amazonaws_com_capacity_type",
    }
    for key, name in cases.items():
        assert monitoring.ksm_label(key) == name, key


def test_promtool_capitalised_zone_label(tmp_path: Path) -> None:
    # The rules must read the label kube-state-metrics really exposes for a custom zoneLabel
    # with capitals; with plain "invalid chars -> _" they would read label_..._AvailabilityZone,
    # see no zone at all, and never fire.
    inv = _inv("lab")
    lab = dataclasses.replace(inv.clusters[0], zone_label="topology.example.com/AvailabilityZone")
    inv = dataclasses.replace(inv, clusters=(lab,))
    _rules_file(inv, "lab", tmp_path)
    shutil.copy(ZONE_LABEL, tmp_path / "zone-label.test.yaml")
    proc = _run("test", "rules", "zone-label.test.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "label_topology_example_com_availability_zone" in (tmp_path / "rules.yaml").read_text()


def test_critical_drop_alert_needs_both_ends_in_one_job() -> None:
    # The critical alert reads only drops between two pods of one job; the other drops of job
    # pods have their own warning. (promtool proves the behaviour: incident.test.yaml, test 2.)
    inv = _inv("lab")
    rules = {r.get("alert") or r["record"] + str(r.get("labels", {})): r
             for g in monitoring.rule_groups(inv, inv.clusters[0]) for r in g["rules"]}
    assert rules["TopogateTrainingTrafficDropped"]["expr"] == \
        "topogate:training_job_intra_policy_drops:rate5m > 0"
    assert rules["TopogateTrainingTrafficDropped"]["labels"]["severity"] == "critical"
    assert rules["TopogateTrainingPodTrafficDropped"]["labels"]["severity"] == "warning"
    spec = yaml.safe_load(INCIDENT.read_text())
    healthy = spec["tests"][1]
    assert any("source_pod=\"train-worker-0\"}" in s["series"] and "destination" not in s["series"]
               for s in healthy["input_series"]), "test 2 lost its job-to-world drop"
    assert {"eval_time": "20m", "alertname": "TopogateTrainingTrafficDropped", "exp_alerts": []} \
        in healthy["alert_rule_test"]


def test_gpu_rules_read_dcgm_with_and_without_honor_labels() -> None:
    inv = _inv("lab")
    for g in monitoring.rule_groups(inv, inv.clusters[0]):
        for r in g["rules"]:
            if "DCGM_FI_DEV_GPU_UTIL" in r["expr"]:
                assert 'exported_pod!=""' in r["expr"] and 'exported_pod=""' in r["expr"], r["record"]
    # promtool: incident.test.yaml test 1 scrapes DCGM with honorLabels true, test 2 with false.
    spec = yaml.safe_load(INCIDENT.read_text())
    dcgm = [[s["series"] for s in t["input_series"] if s["series"].startswith("DCGM")] for t in spec["tests"]]
    assert not any("exported_pod" in s for s in dcgm[0])
    assert all('namespace="gpu-operator"' in s for s in dcgm[1])


def test_rules_follow_the_clusters_zone_label_and_namespaces() -> None:
    inv = _inv("multi")
    east = next(c for c in inv.clusters if c.name == "gpu-east")
    exprs = "\n".join(r["expr"] for g in monitoring.rule_groups(inv, east) for r in g["rules"])
    assert monitoring.ksm_label(east.zone_label) in exprs
    assert 'destination_namespace=~"ml-team"' in exprs
    west = next(c for c in inv.clusters if c.name == "gpu-west")
    exprs = "\n".join(r["expr"] for g in monitoring.rule_groups(inv, west) for r in g["rules"])
    assert 'destination_namespace=~"llm|vision"' in exprs


def test_block_style_dump_is_the_same_document() -> None:
    # The rules file uses literal blocks for multi-line PromQL; the data must not change.
    import yaml as _yaml

    from topogate.generators.base import dump_yaml
    from topogate.generators.monitoring import _dump_blocks

    doc = {"expr": "sum by (zone) (\n  up\n)\n", "labels": {"severity": "critical"}, "n": 3}
    assert _yaml.safe_load(_dump_blocks(doc)) == _yaml.safe_load(dump_yaml([doc])) == doc
    assert "expr: |" in _dump_blocks(doc)


EGRESS = FIXTURES / "monitoring" / "egress.test.yaml"


def test_promtool_clusters_kept_apart_gpu_prof_field_and_both_egress_exporters(tmp_path: Path) -> None:
    """Two clusters' series in one Prometheus; DCGM's PROF field preferred over GPU_UTIL, which
    fills in where PROF is absent; Kubecost, OBI and Beyla inter-zone bytes priced per job."""
    _rules_file(_inv("lab"), "lab", tmp_path)
    shutil.copy(EGRESS, tmp_path / "egress.test.yaml")
    proc = _run("test", "rules", "egress.test.yaml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # and promtool would notice a merged cluster, or GPU_UTIL read where PROF exists
    spec = yaml.safe_load(EGRESS.read_text())
    for expr, wrong in (("topogate:training_job_zones:count", 3),
                        ("topogate:training_job_gpu_util:avg", 70)):
        bad = yaml.safe_load(EGRESS.read_text())
        case = next(c for c in bad["tests"][0]["promql_expr_test"] if c["expr"] == expr)
        case["exp_samples"] = [{"labels": case["exp_samples"][0]["labels"].replace(
            'cluster="east", ', ""), "value": wrong}]
        (tmp_path / "wrong.test.yaml").write_text(yaml.safe_dump(bad, sort_keys=False))
        assert _run("test", "rules", "wrong.test.yaml", cwd=tmp_path).returncode != 0, expr
    assert spec["tests"][0]["input_series"]


def test_alerts_carry_runbook_url_and_never_runbook() -> None:
    inv = _inv("lab")
    alerts = [r for g in monitoring.rule_groups(inv, inv.clusters[0]) for r in g["rules"] if "alert" in r]
    assert {a["alert"] for a in alerts} == set(monitoring.ALERTS)
    for a in alerts:
        assert "runbook" not in a["annotations"] and "runbook_url" not in a["annotations"]
    with_url = dataclasses.replace(inv, runbook_url="https://wiki.example.com/ml/topogate")
    for a in (r for g in monitoring.rule_groups(with_url, inv.clusters[0]) for r in g["rules"]
              if "alert" in r):
        assert a["annotations"]["runbook_url"] == \
            f"https://wiki.example.com/ml/topogate#{a['alert'].lower()}"


def test_every_rule_keeps_the_cluster_label_and_the_dashboard_filters_on_it() -> None:
    inv = _inv("multi")
    c = inv.clusters[0]
    for g in monitoring.rule_groups(inv, c):
        for r in g["rules"]:
            for m in re.finditer(r"\b(by|on)\s*\(([^)]*)\)", r["expr"]):
                assert "cluster" in m.group(2), (r.get("record") or r.get("alert"), m.group(0))
    board = monitoring.dashboard(inv, c)
    names = [v["name"] for v in board["templating"]["list"]]
    assert names[:2] == ["datasource", "cluster"]
    for p in board["panels"]:
        for t in p["targets"]:
            if t["expr"].startswith("topogate:"):
                assert 'cluster=~"$cluster"' in t["expr"], p["title"]
