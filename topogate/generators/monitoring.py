"""Prometheus rules and a Grafana dashboard that make the split-job incident visible in minutes.

The incident behind topogate looked healthy from every single tool: all pods Running, the
scheduler happy, Cilium doing exactly what its policies said. It showed only as GPUs at 40%.
The symptom becomes obvious once three facts sit in one place: which zone each pod of a training
job runs in, how busy its GPUs are, and whether its traffic is being dropped by policy. This
module records exactly those three joins and alerts on them, per cluster:

    OUT/monitoring/<cluster>/kustomization.yaml      the PrometheusRule + a configMapGenerator
    OUT/monitoring/<cluster>/prometheusrule.yaml     recording rules + alerts
    OUT/monitoring/<cluster>/dashboards/topogate.json  the Grafana dashboard (its own file, so a
                                                     diff of the dashboard reads as JSON, not as
                                                     one escaped string inside YAML)

Per cluster, because the zone label (a per-cluster inventory setting) is baked into the
kube-state-metrics label name, and the managed namespaces differ per cluster.

Series the rules read (what must be scraped):
- kube-state-metrics `kube_pod_info`, `kube_pod_status_phase`, and `kube_node_labels` /
  `kube_pod_labels`. Since kube-state-metrics v2 the last two carry NO labels unless allowed:
  run it with `--metric-labels-allowlist=nodes=[<zoneLabel>],pods=[topogate.dev/workload,
  topogate.dev/network-zone]`. `metric_labels_allowlist()` returns the exact flag value.
- DCGM exporter `DCGM_FI_PROF_GR_ENGINE_ACTIVE`, else `DCGM_FI_DEV_GPU_UTIL` (monitoring_egress),
  with Kubernetes pod mapping on (the default in the GPU operator); its `namespace`/`pod` labels
  name the pod using the GPU. With `honorLabels: true`
  on its ServiceMonitor they arrive as they are; with `honorLabels: false` (the
  prometheus-operator default) Prometheus keeps the exporter pod's own `namespace`/`pod` and
  renames the GPU's to `exported_namespace`/`exported_pod`. The GPU rules read both: a series
  with `exported_pod` takes its namespace and pod from the `exported_*` labels (`monitoring_egress.dcgm()`).
- Optional, for the inter-zone cost: Kubecost or the eBPF exporter (monitoring_egress).
- Hubble `hubble_drop_total` with pod context:
  `drop:labelsContext=source_namespace,source_pod,destination_namespace,destination_pod`.
  Both Cilium reasons count as "dropped by policy": POLICY_DENIED (no allow rule matched) and
  POLICY_DENY (an explicit deny rule matched), because the network layer may use either.

Two kinds of drop, two severities. The incident is a drop BETWEEN two pods of the same
training job (a worker cannot reach its master): the job cannot train, so
`TopogateTrainingTrafficDropped` (critical) fires only on `..._intra_policy_drops`, where both
the source and the destination pod carry the same job label in the same namespace. A job pod
whose egress to the internet, or to a service outside the job, is denied is usually the policy
doing its work (the job's CNP allows nothing undeclared), but may also be a dependency missing
from the inventory: `TopogateTrainingPodTrafficDropped` (warning, 5m) says so, and stays quiet
while the critical alert covers the same job.

Label names: the training job is `training_job`, never `job`. `job` is the label Prometheus
itself puts on every scraped series (the scrape job), so a rule that reused it would either be
overwritten or silently merge unrelated series. Every join first aggregates `by (...)` the labels
it needs, which also drops the scrape labels (`job`, `instance`) that differ between exporters and
would otherwise make `on (...)` matches many-to-many when kube-state-metrics runs with replicas.

Rules are evaluated in order inside one group, so later rules read earlier results at the same
timestamp (Prometheus and `promtool test rules` both guarantee this).
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml

from topogate.core.labels import MANAGED_BY_LABEL, NETWORK_ZONE_LABEL, WORKLOAD_LABEL
from topogate.generators import monitoring_egress as egress
from topogate.generators.base import OutputFile, header, inv_label
from topogate.generators.yamlout import Dumper
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.kustomization import KUSTOMIZE_API

NAMESPACE = "monitoring"  # where the PrometheusRule and the dashboard ConfigMap go
IDLE_GPU_PERCENT = 50  # "GPUs of a running job idle": the incident ran at 40%
IDLE_FOR = "15m"
SPLIT_FOR = "1m"  # a split job is wrong from its first second; 1m only absorbs a rescheduling
DROPS_FOR = "1m"
OTHER_DROPS_FOR = "5m"  # a denied egress may be the policy working as intended: wait longer
DASHBOARD_UID_PREFIX = "topogate-"

# The series the recording rules produce, in rule order (tests and the dashboard use this list).
RECORDED = (
    "topogate:node_zone:info",
    "topogate:pod_zone:info",
    "topogate:pod_workload:info",
    "topogate:training_pod_zone:info",
    "topogate:training_job_pods:count",
    "topogate:training_job_zones:count",
    egress.GPU_BUSY,
    "topogate:training_job_zone_gpu_util:avg",
    "topogate:training_job_gpu_util:avg",
    "topogate:zone_gpu_util:avg",
    "topogate:training_job_policy_drops:rate5m",
    "topogate:training_job_intra_policy_drops:rate5m",
    egress.JOB_BYTES,
    egress.JOB_USD,
)
# Series an exporter (or Prometheus itself) provides, read by the rules or the dashboard.
EXPORTED = (
    "kube_node_labels",
    "kube_pod_info",
    "kube_pod_labels",
    "kube_pod_status_phase",
    *egress.EXPORTED,
    "hubble_drop_total",
    "ALERTS",
)
ALERTS = ("TopogateTrainingJobSpansZones", "TopogateTrainingGPUsIdle", "TopogateTrainingTrafficDropped",
          "TopogateTrainingPodTrafficDropped", "TopogateTrainingJobInterZoneCost")
POLICY_DROP_REASONS = ("POLICY_DENIED", "POLICY_DENY")


class _BlockDumper(Dumper):  # type: ignore[misc, valid-type]
    """The shared dumper, except that multi-line strings (PromQL) come out as literal blocks.

    A reviewer reads a rule change in a PR diff; the default double-quoted style with `\\n`
    escapes would put a whole expression on one unreadable line.
    """


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str)


def _dump_blocks(doc: Any) -> str:
    text = yaml.dump(doc, Dumper=_BlockDumper, sort_keys=False, default_flow_style=False,
                     width=4096, allow_unicode=True)
    # Same document as the shared serialiser writes; only the scalar style differs (tested).
    return str(text)


_KSM_INVALID = re.compile(r"[^a-zA-Z0-9_]")
_KSM_CAPS = re.compile(r"([a-z0-9])([A-Z])")


def ksm_label(key: str) -> str:
    """The Prometheus label kube-state-metrics exposes for a Kubernetes label key.

    Exactly kube-state-metrics' `labelName("label", key)` (internal/store/utils.go):
    `SanitizeLabelName` replaces every character outside `[a-zA-Z0-9_]` with `_`, then
    `toSnakeCase` puts `_` between a lower-case letter or digit and the capital that follows it
    (regexp `([a-z0-9])([A-Z])` -> `${1}_${2}`, non-overlapping, left to right, as Go and Python
    both scan) and lower-cases the whole name: `example.com/AvailabilityZone` becomes
    `label_example_com_availability_zone`, `zoneID` becomes `label_zone_id`. (Two allow-listed
    keys that map to the same name get `_conflictN` suffixes; topogate allow-lists one zone label
    and two of its own, which cannot collide.)
    """
    return "label_" + _KSM_CAPS.sub(r"\1_\2", _KSM_INVALID.sub("_", key)).lower()


def metric_labels_allowlist(inv: Inventory) -> str:
    """The kube-state-metrics `--metric-labels-allowlist` value these rules need."""
    zone_labels = sorted({c.zone_label for c in inv.clusters})
    return f"nodes=[{','.join(zone_labels)}],pods=[{WORKLOAD_LABEL},{NETWORK_ZONE_LABEL}]"


def _namespaces(inv: Inventory, cluster: Cluster) -> list[str]:
    return sorted({w.namespace for w in inv.workloads_of(cluster.name)})


def rule_groups(inv: Inventory, cluster: Cluster) -> list[dict[str, Any]]:
    """The PrometheusRule `spec.groups` for one cluster (also the plain Prometheus rules file)."""
    recording = (_zone_rules(cluster) + _gpu_rules() + _drop_rules(_namespaces(inv, cluster))
                 + egress.egress_rules(cluster))
    return [
        {"name": "topogate.recording", "rules": recording},
        {"name": "topogate.alerts", "rules": _alert_rules(inv, cluster)},
    ]


def _zone_rules(cluster: Cluster) -> list[dict[str, Any]]:
    """Recording rules placing nodes, pods and training jobs in zones, and counting a job's zones."""
    zl = ksm_label(cluster.zone_label)
    wl = ksm_label(WORKLOAD_LABEL)
    nzl = ksm_label(NETWORK_ZONE_LABEL)
    return [
        {"record": "topogate:node_zone:info",
         "expr": (f'max by (cluster, node, zone) (label_replace(kube_node_labels{{{zl}!=""}}, '
                  f'"zone", "$1", "{zl}", "(.+)"))')},
        {"record": "topogate:pod_zone:info",
         "expr": ("max by (cluster, namespace, pod, node, zone) (\n"
                  '  max by (cluster, namespace, pod, node) (kube_pod_info{node!=""})\n'
                  "  * on (cluster, node) group_left (zone) topogate:node_zone:info\n"
                  ")")},
        {"record": "topogate:pod_workload:info",
         "expr": ("max by (cluster, namespace, pod, training_job, network_zone) (\n"
                  "  label_replace(label_replace(\n"
                  f'    kube_pod_labels{{{wl}!=""}},\n'
                  f'    "training_job", "$1", "{wl}", "(.+)"),\n'
                  f'    "network_zone", "$1", "{nzl}", "(.*)")\n'
                  ")")},
        # Running pods only: finished pods of an earlier attempt must not count as a split.
        {"record": "topogate:training_pod_zone:info",
         "expr": ("topogate:pod_workload:info\n"
                  "* on (cluster, namespace, pod) group_left (node, zone) topogate:pod_zone:info\n"
                  "* on (cluster, namespace, pod) group_left ()\n"
                  '  (max by (cluster, namespace, pod) (kube_pod_status_phase{phase="Running"}) == 1)')},
        {"record": "topogate:training_job_pods:count",
         "expr": ("count by (cluster, namespace, training_job, network_zone, zone) "
                  "(topogate:training_pod_zone:info)")},
        {"record": "topogate:training_job_zones:count",
         "expr": ("count by (cluster, namespace, training_job) (\n"
                  "  count by (cluster, namespace, training_job, zone) (topogate:training_pod_zone:info)\n"
                  ")")},
    ]


def _gpu_rules() -> list[dict[str, Any]]:
    """Recording rules: how busy each GPU is (monitoring_egress.gpu_busy_rule), averaged per job
    and zone, per job, and per zone."""
    gpu = egress.GPU_BUSY
    return [
        egress.gpu_busy_rule(),
        {"record": "topogate:training_job_zone_gpu_util:avg",
         "expr": ("avg by (cluster, namespace, training_job, zone) (\n"
                  f"  {gpu}\n"
                  "  * on (cluster, namespace, pod) group_left (training_job, zone) "
                  "topogate:training_pod_zone:info\n"
                  ")")},
        {"record": "topogate:training_job_gpu_util:avg",
         "expr": ("avg by (cluster, namespace, training_job) (\n"
                  f"  {gpu}\n"
                  "  * on (cluster, namespace, pod) group_left (training_job) "
                  "topogate:training_pod_zone:info\n"
                  ")")},
        {"record": "topogate:zone_gpu_util:avg",
         "expr": ("avg by (cluster, zone) (\n"
                  f"  {gpu}\n"
                  "  * on (cluster, namespace, pod) group_left (zone) topogate:training_pod_zone:info\n"
                  ")")},
    ]


def _side_drops(side: str, reasons: str, match: str) -> str:
    """Policy drops per training job, seen from one side (`source` or `destination`) of a flow."""
    return (
        "sum by (cluster, namespace, training_job) (\n"
        "  label_replace(label_replace(\n"
        f"    sum by (cluster, {side}_namespace, {side}_pod) (\n"
        f'      rate(hubble_drop_total{{reason=~"{reasons}"{match}}}[5m])),\n'
        f'    "namespace", "$1", "{side}_namespace", "(.+)"),\n'
        f'    "pod", "$1", "{side}_pod", "(.+)")\n'
        "  * on (cluster, namespace, pod) group_left (training_job) topogate:pod_workload:info\n"
        ")"
    )


def _drop_rules(namespaces: list[str]) -> list[dict[str, Any]]:
    """Recording rules for Cilium policy drops touching training pods, and those inside one job."""
    # Only drops that touch a namespace the inventory manages; the join with the workload label
    # below narrows further to training pods. With no workloads there is nothing to narrow.
    ns_match = f', destination_namespace=~"{"|".join(namespaces)}"' if namespaces else ""
    src_match = f', source_namespace=~"{"|".join(namespaces)}"' if namespaces else ""
    reasons = "|".join(POLICY_DROP_REASONS)
    both_match = ns_match + src_match
    job_key = 'label_join(topogate:pod_workload:info, "job_key", "/", "namespace", "training_job")'
    return [
        # Two rules, one series name: drops towards a training pod and drops from one. The
        # `side` label keeps them apart; the alert takes the larger of the two.
        {"record": "topogate:training_job_policy_drops:rate5m",
         "expr": _side_drops("destination", reasons, ns_match), "labels": {"side": "destination"}},
        {"record": "topogate:training_job_policy_drops:rate5m",
         "expr": _side_drops("source", reasons, src_match), "labels": {"side": "source"}},
        # Drops between two pods of the SAME job (the incident: a worker cannot reach its
        # master). The source pod's job, as `job_key` = "<namespace>/<job>", is carried over to
        # the destination pod and must match there too, so both ends are in one job and one
        # namespace. One drop is one series here, so a plain sum counts it once.
        {"record": "topogate:training_job_intra_policy_drops:rate5m",
         "expr": ("sum by (cluster, namespace, training_job) (\n"
                  "  label_replace(label_replace(\n"
                  "    label_replace(label_replace(\n"
                  "      sum by (cluster, source_namespace, source_pod, destination_namespace, "
                  "destination_pod) (\n"
                  f'        rate(hubble_drop_total{{reason=~"{reasons}"{both_match}}}[5m])),\n'
                  '      "namespace", "$1", "source_namespace", "(.+)"),\n'
                  '      "pod", "$1", "source_pod", "(.+)")\n'
                  "    * on (cluster, namespace, pod) group_left (training_job, job_key)\n"
                  f"      {job_key},\n"
                  # (.*), not (.+): a destination outside the cluster (world) has no pod;
                  # its empty labels must clear the source's, never leave them matching.
                  '    "namespace", "$1", "destination_namespace", "(.*)"),\n'
                  '    "pod", "$1", "destination_pod", "(.*)")\n'
                  "  * on (cluster, namespace, pod, job_key) group_left ()\n"
                  f"    {job_key}\n"
                  ")")},
    ]


def _alert_rules(inv: Inventory, cluster: Cluster) -> list[dict[str, Any]]:
    """The five alerts: a job split across zones, its GPUs idle, its traffic dropped by policy,
    and what its traffic between zones costs."""
    explain = f"topogate explain {inv_label(inv)} {{{{ $labels.namespace }}}}/{{{{ $labels.training_job }}}}"
    rules = [
        {"alert": "TopogateTrainingJobSpansZones",
         "expr": "topogate:training_job_zones:count > 1",
         "for": SPLIT_FOR,
         "labels": {"severity": "critical", "cluster": cluster.name},
         "annotations": {
             "summary": "Training job {{ $labels.namespace }}/{{ $labels.training_job }} runs in "
                        "{{ $value }} zones.",
             "description": "The pods of one distributed training job run in more than one zone. "
                            "Every all-reduce pays cross-zone latency and inter-AZ egress, and a "
                            "network policy that separates the zones blocks it outright. Pin the "
                            "job to one zone (placement: pin) or make it follow its coordinator "
                            "(placement: follow), then restart it.",
         }},
        {"alert": "TopogateTrainingGPUsIdle",
         "expr": f"topogate:training_job_gpu_util:avg < {IDLE_GPU_PERCENT}",
         "for": IDLE_FOR,
         "labels": {"severity": "warning", "cluster": cluster.name},
         "annotations": {
             "summary": "GPUs of running training job {{ $labels.namespace }}/"
                        "{{ $labels.training_job }} average {{ $value | humanize }}% utilisation.",
             "description": f"All pods are Running but their GPUs have been below "
                            f"{IDLE_GPU_PERCENT}% for {IDLE_FOR}: the job is waiting on its "
                            "network. Look at topogate:training_job_pods:count for a split "
                            "across zones and at topogate:training_job_policy_drops:rate5m.",
         }},
        {"alert": "TopogateTrainingTrafficDropped",
         # Only traffic between two pods of the same job: that is what stops training.
         "expr": "topogate:training_job_intra_policy_drops:rate5m > 0",
         "for": DROPS_FOR,
         "labels": {"severity": "critical", "cluster": cluster.name},
         "annotations": {
             "summary": "Cilium drops traffic between the pods of training job {{ $labels.namespace }}/"
                        "{{ $labels.training_job }} by policy ({{ $value | humanize }} drops/s).",
             "description": "A network policy denies traffic between two pods of this job: it "
                            "cannot train. If the job spans zones, its members are on both sides "
                            "of a network-zone boundary: co-locate the job; otherwise run "
                            "topogate check on the policies in the PR that changed them.",
         }},
        {"alert": "TopogateTrainingPodTrafficDropped",
         # Any other policy drop to or from a job pod (egress to the internet, a service outside
         # the job). max over the two sides; quiet while the critical alert covers the job.
         "expr": ("max by (cluster, namespace, training_job) (topogate:training_job_policy_drops:rate5m) > 0\n"
                  "unless on (cluster, namespace, training_job) "
                  "(topogate:training_job_intra_policy_drops:rate5m > 0)"),
         "for": OTHER_DROPS_FOR,
         "labels": {"severity": "warning", "cluster": cluster.name},
         "annotations": {
             "summary": "Cilium drops traffic to or from pods of training job {{ $labels.namespace }}/"
                        "{{ $labels.training_job }} by policy ({{ $value | humanize }} drops/s).",
             "description": "A network policy denies traffic between this job's pods and something "
                            "outside the job (the internet, another service). The job's policy "
                            "allows only what the inventory declares: if the job needs it, declare "
                            "it (egress fqdns/cidrs) and regenerate; otherwise this is the policy "
                            "doing its work.",
         }},
        egress.egress_alert(cluster),
    ]
    for r in rules:
        # The series' own `cluster` where they carry one (rules evaluated centrally, Thanos or
        # Mimir), else the inventory's name: a static label would overwrite the series' value.
        r["labels"]["cluster"] = ("{{ with $labels.cluster }}{{ . }}{{ else }}"
                                  f"{cluster.name}{{{{ end }}}}")
        # runbook_url is the key Alertmanager, Grafana and PagerDuty turn into a link; the
        # command that explains the job travels beside it
        r["annotations"]["topogate_explain"] = explain
        if inv.runbook_url:
            r["annotations"]["runbook_url"] = f"{inv.runbook_url}#{r['alert'].lower()}"
    return rules


def _target(expr: str, legend: str, ref: str = "A") -> dict[str, Any]:
    return {"datasource": {"type": "prometheus", "uid": "${datasource}"},
            "expr": expr, "legendFormat": legend, "refId": ref}


def _panel(pid: int, title: str, kind: str, grid: tuple[int, int, int, int], targets: list[dict[str, Any]],
           description: str, unit: str = "short", extra: dict[str, Any] | None = None) -> dict[str, Any]:
    x, y, w, h = grid
    p: dict[str, Any] = {
        "id": pid, "type": kind, "title": title, "description": description,
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": unit}, "overrides": []},
        "targets": targets,
    }
    if extra:
        p.update(extra)
    return p


def dashboard(inv: Inventory, cluster: Cluster) -> dict[str, Any]:
    """The Grafana dashboard for one cluster: one row per question the incident raised."""
    # `cluster` where the series carry it (Thanos, Mimir, a central Prometheus); =~".*" also
    # matches series without it, so one Prometheus per cluster sees everything.
    sel = 'cluster=~"$cluster", namespace=~"$namespace", training_job=~"$training_job"'
    panels = [
        _panel(1, "Zones per training job", "stat", (0, 0, 8, 6),
               [_target(f"topogate:training_job_zones:count{{{sel}}}", "{{namespace}}/{{training_job}}")],
               "More than 1 means the job is split across zones (alert TopogateTrainingJobSpansZones).",
               extra={"fieldConfig": {"defaults": {"unit": "short", "thresholds": {
                   "mode": "absolute", "steps": [{"color": "green", "value": None},
                                                 {"color": "red", "value": 2}]}}, "overrides": []}}),
        _panel(2, "Running pods per zone", "timeseries", (8, 0, 16, 6),
               [_target(f"topogate:training_job_pods:count{{{sel}}}",
                        "{{namespace}}/{{training_job}} {{zone}} ({{network_zone}})")],
               "Where each job's running pods are, by zone and by the network zone they were given."),
        _panel(3, "GPU utilisation per training job", "timeseries", (0, 6, 12, 8),
               [_target(f"topogate:training_job_gpu_util:avg{{{sel}}}", "{{namespace}}/{{training_job}}")],
               f"Below {IDLE_GPU_PERCENT}% for {IDLE_FOR} fires TopogateTrainingGPUsIdle.", unit="percent"),
        _panel(4, "GPU utilisation per job and zone", "timeseries", (12, 6, 12, 8),
               [_target(f"topogate:training_job_zone_gpu_util:avg{{{sel}}}",
                        "{{namespace}}/{{training_job}} {{zone}}")],
               "A split job shows two lines, both low.", unit="percent"),
        _panel(5, "GPU utilisation of training pods per zone", "timeseries", (0, 14, 12, 8),
               [_target('topogate:zone_gpu_util:avg{cluster=~"$cluster"}', "{{zone}}")],
               "All managed training pods, averaged per zone.", unit="percent"),
        _panel(6, "Training traffic dropped by policy (within the job)", "timeseries", (12, 14, 12, 8),
               [_target(f"topogate:training_job_intra_policy_drops:rate5m{{{sel}}}",
                        "{{namespace}}/{{training_job}}")],
               "Packets/s Cilium dropped between two pods of the same job (POLICY_DENIED, POLICY_DENY): "
               "alert TopogateTrainingTrafficDropped.", unit="pps"),
        _panel(7, "All Cilium drops by reason", "timeseries", (0, 22, 12, 8),
               [_target('sum by (reason) (rate(hubble_drop_total{cluster=~"$cluster"}[5m]))',
                        "{{reason}}")],
               "Context for panel 6: every drop Hubble sees, managed or not.", unit="pps"),
        _panel(8, "Firing topogate alerts", "table", (12, 22, 12, 8),
               [_target('ALERTS{alertname=~"Topogate.*", alertstate="firing", cluster=~"$cluster"}',
                        "{{alertname}}")],
               "Alerts from the generated PrometheusRule."),
        _panel(9, "Traffic to or from training pods dropped by policy", "timeseries", (0, 30, 24, 8),
               [_target(f"topogate:training_job_policy_drops:rate5m{{{sel}}}",
                        "{{namespace}}/{{training_job}} ({{side}})")],
               "Every policy drop where a job pod is the source or the destination, the other end "
               "anywhere (alert TopogateTrainingPodTrafficDropped when it is outside the job).",
               unit="pps"),
        egress.egress_panel(10, (0, 38, 24, 8), sel),
    ]

    def variable(name: str, query: str) -> dict[str, Any]:
        return {"name": name, "label": name, "type": "query",
                "datasource": {"type": "prometheus", "uid": "${datasource}"},
                "query": {"query": query, "refId": name}, "definition": query,
                "includeAll": True, "multi": True, "allValue": ".*", "refresh": 2, "sort": 1,
                "current": {"selected": True, "text": ["All"], "value": ["$__all"]}}

    return {
        "uid": f"{DASHBOARD_UID_PREFIX}{cluster.name}"[:40],
        "title": f"topogate: training jobs and zones ({cluster.name})",
        # JSON has no comments: the "generated by" header travels in the description.
        "description": header(inv).lstrip("# ").rstrip("\n"),
        "tags": ["topogate", "gpu", "cilium"],
        "editable": False,
        "schemaVersion": 39,
        "time": {"from": "now-6h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [
            {"name": "datasource", "label": "Prometheus", "type": "datasource", "query": "prometheus",
             "current": {}},
            variable("cluster", "label_values(topogate:pod_workload:info, cluster)"),
            variable("namespace", 'label_values(topogate:pod_workload:info{cluster=~"$cluster"}, '
                                  "namespace)"),
            variable("training_job", "label_values(topogate:pod_workload:info"
                                     '{cluster=~"$cluster", namespace=~"$namespace"}, training_job)'),
        ]},
        "panels": panels,
    }


def render(inv: Inventory) -> list[OutputFile]:
    files: list[OutputFile] = []
    for cluster in sorted(inv.clusters, key=lambda c: c.name):
        base = f"monitoring/{cluster.name}"
        rule = {
            "apiVersion": "monitoring.coreos.com/v1",
            "kind": "PrometheusRule",
            "metadata": {
                "name": "topogate",
                "namespace": NAMESPACE,
                "labels": {MANAGED_BY_LABEL: "topogate", "app.kubernetes.io/part-of": "topogate"},
                "annotations": {
                    "topogate.dev/kube-state-metrics-allowlist": metric_labels_allowlist(inv),
                },
            },
            "spec": {"groups": rule_groups(inv, cluster)},
        }
        kustomization = {
            "apiVersion": KUSTOMIZE_API,
            "kind": "Kustomization",
            "namespace": NAMESPACE,
            "resources": ["prometheusrule.yaml"],
            # The Grafana sidecar loads every ConfigMap labelled grafana_dashboard=1. A fixed name
            # (no hash suffix) so an edit replaces the dashboard instead of adding a second one.
            "configMapGenerator": [{
                "name": "topogate-dashboard",
                "files": ["dashboards/topogate.json"],
                "options": {"disableNameSuffixHash": True,
                            "labels": {"grafana_dashboard": "1", MANAGED_BY_LABEL: "topogate"}},
            }],
        }
        files.append(OutputFile(f"{base}/kustomization.yaml", (kustomization,), source=cluster.pos))
        files.append(OutputFile(f"{base}/prometheusrule.yaml", (rule,), text=_dump_blocks(rule),
                                source=cluster.pos))
        files.append(OutputFile(f"{base}/dashboards/topogate.json",
                                text=json.dumps(dashboard(inv, cluster), indent=2, ensure_ascii=False) + "\n",
                                source=cluster.pos))
    return files
