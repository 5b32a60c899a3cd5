"""The rules behind two questions of the monitoring tree: are a job's GPUs busy, and what does its
traffic between zones cost.

GPU busy. DCGM's `DCGM_FI_PROF_GR_ENGINE_ACTIVE` (a 0-1 ratio: the fraction of time the graphics
engine ran) is the signal NVIDIA recommends; `DCGM_FI_DEV_GPU_UTIL` is the older one NVIDIA
calls outdated, and it stays high while NCCL spins in a hung collective. Per GPU the rule takes
the PROF field where the exporter has it (profiling fields need a datacenter GPU and the
profiling counters enabled) and GPU_UTIL only where it does not.

Inter-zone bytes. Whichever exporter the cluster runs, both kept apart by the `exporter` label:
- Kubecost's network costs daemonset: `kubecost_pod_network_egress_bytes_total` with
  `same_zone="false"`, `same_region="true"`, `internet="false"`, labels `namespace`, `pod_name`;
- OpenTelemetry eBPF Instrumentation `obi_network_inter_zone_bytes_total`, or Beyla's
  `beyla_network_inter_zone_bytes_total`, with the attributes `k8s.src.namespace` and
  `k8s.src.pod.name` selected (Prometheus labels `k8s_src_namespace`, `k8s_src_pod_name`).
Both count bytes a pod SENDS to another zone, joined to its training job by namespace and pod.
The dollars-per-day estimate uses the price table of topogate/core/zoneprices.py: AWS bills the
bytes out of one zone and into the other, so a byte sent costs the price twice.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from topogate.core.zoneprices import PRICES
from topogate.inventory.model import Cluster

PROF_FIELD = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
UTIL_FIELD = "DCGM_FI_DEV_GPU_UTIL"
KUBECOST = "kubecost_pod_network_egress_bytes_total"
OBI = "obi_network_inter_zone_bytes_total"
BEYLA = "beyla_network_inter_zone_bytes_total"
EGRESS_FOR = "15m"
# Without a cluster budget, the per-job alert fires at this estimate.
DEFAULT_JOB_USD_PER_DAY = 10
SECONDS_PER_DAY = 86400
GPU_BUSY = "topogate:gpu_busy:percent"
JOB_BYTES = "topogate:training_job_inter_zone_bytes:rate5m"
JOB_USD = "topogate:training_job_inter_zone_usd_per_day:estimate"
RECORDED = (GPU_BUSY, JOB_BYTES, JOB_USD)
EXPORTED = (PROF_FIELD, UTIL_FIELD, KUBECOST, OBI, BEYLA)
# A GPU is one UUID, or one MIG instance of it.
_GPU = "cluster, UUID, GPU_I_ID"


def dcgm(metric: str) -> str:
    """`metric` with `namespace`/`pod` naming the GPU's pod, whatever honorLabels is.

    honorLabels true: the exporter's own labels, nothing to do. honorLabels false: Prometheus
    renamed them exported_namespace/exported_pod and `namespace`/`pod` name the exporter; take
    them back from the exported_* labels. The two halves are disjoint (exported_pod set or not).
    """
    return ("(\n"
            f"    label_replace(label_replace({metric}{{exported_pod!=\"\"}},\n"
            "      \"namespace\", \"$1\", \"exported_namespace\", \"(.+)\"),\n"
            "      \"pod\", \"$1\", \"exported_pod\", \"(.+)\")\n"
            f"    or {metric}{{exported_pod=\"\"}}\n"
            "  )")


def gpu_busy_rule() -> dict[str, Any]:
    """Percent busy per GPU: the PROF field where present, GPU_UTIL only for GPUs without it."""
    return {"record": GPU_BUSY,
            "expr": (f"100 * {dcgm(PROF_FIELD)}\n"
                     f"or on ({_GPU})\n"
                     f"{dcgm(UTIL_FIELD)}")}


def _price(cluster: Cluster) -> tuple[Decimal, int]:
    """(USD per byte sent, bytes per price unit) for the cluster's provider; 0 if unknown."""
    p = PRICES.get(cluster.provider)
    if p is None:
        return Decimal(0), 10**9
    return p.usd_per_unit * p.billed_sides, p.bytes_per_unit


def egress_rules(cluster: Cluster) -> list[dict[str, Any]]:
    """Inter-zone bytes/s per training job from each exporter, and its dollars-per-day estimate."""
    join = "* on (cluster, namespace, pod) group_left (training_job) topogate:pod_workload:info"
    usd, per_unit = _price(cluster)
    return [
        {"record": JOB_BYTES, "labels": {"exporter": "kubecost"},
         "expr": ("sum by (cluster, namespace, training_job) (\n"
                  "  label_replace(\n"
                  "    sum by (cluster, namespace, pod_name) (rate(" + KUBECOST
                  + '{same_zone="false", same_region="true", internet="false"}[5m])),\n'
                  '    "pod", "$1", "pod_name", "(.+)")\n'
                  f"  {join}\n"
                  ")")},
        {"record": JOB_BYTES, "labels": {"exporter": "obi"},
         "expr": ("sum by (cluster, namespace, training_job) (\n"
                  "  label_replace(label_replace(\n"
                  "    sum by (cluster, k8s_src_namespace, k8s_src_pod_name) (\n"
                  f"      rate({OBI}[5m]) or rate({BEYLA}[5m])),\n"
                  '    "namespace", "$1", "k8s_src_namespace", "(.+)"),\n'
                  '    "pod", "$1", "k8s_src_pod_name", "(.+)")\n'
                  f"  {join}\n"
                  ")")},
        # Two exporters on one cluster measure the same bytes: the larger, never the sum.
        {"record": JOB_USD,
         "expr": (f"max by (cluster, namespace, training_job) ({JOB_BYTES})\n"
                  f"* {SECONDS_PER_DAY} / {per_unit} * {usd}")},
    ]


def egress_alert(cluster: Cluster) -> dict[str, Any]:
    budget = cluster.cost.budget_usd_per_day if cluster.cost and cluster.cost.budget_usd_per_day \
        is not None else DEFAULT_JOB_USD_PER_DAY
    return {
        "alert": "TopogateTrainingJobInterZoneCost",
        "expr": f"{JOB_USD} > {budget:g}",
        "for": EGRESS_FOR,
        "labels": {"severity": "warning", "cluster": cluster.name},
        "annotations": {
            "summary": "Training job {{ $labels.namespace }}/{{ $labels.training_job }} sends "
                       "traffic to other zones at about ${{ $value | printf \"%.2f\" }}/day.",
            "description": f"Measured inter-zone bytes of this job's pods (Kubecost or the eBPF "
                           f"exporter), priced at the list price, exceed ${budget:g}/day (the "
                           "cluster's budget, or the default). A split job pays this on every "
                           "step: see TopogateTrainingJobSpansZones; a job in one zone pays it "
                           "through its doors (a service, storage or DNS in another zone). The "
                           "nightly `topogate audit egress --flow-logs` names the bytes per "
                           "zone pair from VPC Flow Logs.",
        }}


def egress_panel(pid: int, grid: tuple[int, int, int, int], sel: str) -> dict[str, Any]:
    x, y, w, h = grid
    return {
        "id": pid, "type": "timeseries",
        "title": "Inter-zone traffic cost per training job (USD/day, estimate)",
        "description": "Bytes the job's pods send to other zones (Kubecost or the eBPF exporter), "
                       "at the list price: alert TopogateTrainingJobInterZoneCost.",
        "datasource": {"type": "prometheus", "uid": "${datasource}"},
        "gridPos": {"x": x, "y": y, "w": w, "h": h},
        "fieldConfig": {"defaults": {"unit": "currencyUSD"}, "overrides": []},
        "targets": [{"datasource": {"type": "prometheus", "uid": "${datasource}"},
                     "expr": f"{JOB_USD}{{{sel}}}",
                     "legendFormat": "{{namespace}}/{{training_job}}", "refId": "A"}],
    }


__all__ = ["EXPORTED", "RECORDED", "dcgm", "egress_alert", "egress_panel", "egress_rules",
           "gpu_busy_rule"]
