"""Benchmark `topogate check` against the floor of merely loading the same YAML.

Builds a synthetic GitOps repo: 20 clusters of 6 zones, N training jobs (a PyTorchJob with 1
Master and 64 Workers, pinned and tolerating like generated output) each with its
CiliumNetworkPolicy, spread over the clusters as plain YAML files under clusters/<name>/. Then,
in the same run, as separate processes so each gets a clean heap:

- floor: `yaml.load_all(..., Loader=yaml.CSafeLoader)` over every file;
- check: `topogate check inventory.yaml clusters/` (the full analysis and every rule).

Reports wall time, the ratio check/floor, and peak RSS of each, at --jobs (default 5,000) and
for growth at 1,000 and 10,000 jobs. The machine is noisy: only ratios measured in one run mean
anything.

    python benchmarks/check.py [--jobs 5000] [--growth]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CLUSTERS = 20
ZONES = 6
WORKERS = 64


def inventory(n_clusters: int) -> str:
    lines = ["apiVersion: topogate.dev/v1alpha1", "kind: Inventory", "metadata: {name: bench}", "clusters:"]
    for c in range(n_clusters):
        lines += [f"- name: c{c}", "  provider: aws", "  region: us-east-1", "  zones:"]
        for z in range(ZONES):
            lines += [f"  - name: c{c}-z{z}", "    pools:",
                      "    - {name: gpu, nodes: 40, gpusPerNode: 8, labels: {node-type: gpu}, "
                      "taints: [{key: gpu, value: present, effect: NoSchedule}]}",
                      "    - {name: cpu, nodes: 10, labels: {node-type: cpu}}"]
        lines.append("  networkZones:")
        for z in range(ZONES):
            lines.append(f"  - {{name: nz{z}, zones: [c{c}-z{z}]}}")
    return "\n".join(lines) + "\n"


def job_docs(c: int, j: int) -> str:
    zone = f"c{c}-z{j % ZONES}"
    name, ns = f"job-{j}", f"team-{j % 50}"
    tpl = f"""      template:
        metadata:
          labels: {{topogate.dev/workload: {name}, topogate.dev/network-zone: nz{j % ZONES}}}
        spec:
          affinity:
            nodeAffinity:
              requiredDuringSchedulingIgnoredDuringExecution:
                nodeSelectorTerms:
                - matchExpressions:
                  - {{key: topology.kubernetes.io/zone, operator: In, values: [{zone}]}}
          tolerations:
          - {{key: gpu, operator: Equal, value: present, effect: NoSchedule}}
          containers:
          - name: pytorch
            image: ghcr.io/example/trainer:1.0
            resources: {{limits: {{nvidia.com/gpu: 1}}}}
"""
    sel = f"{{k8s:topogate.dev/workload: {name}, k8s:topogate.dev/network-zone: nz{j % ZONES}}}"
    return f"""apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {{name: {name}, namespace: {ns}}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
{tpl}    Worker:
      replicas: {WORKERS}
{tpl}---
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {{name: topogate-{name}, namespace: {ns}}}
spec:
  endpointSelector: {{matchLabels: {sel}}}
  ingress:
  - fromEndpoints: [{{matchLabels: {sel}}}]
    toPorts: [{{ports: [{{port: "1", endPort: 65535, protocol: TCP}}]}}]
  egress:
  - toEndpoints: [{{matchLabels: {sel}}}]
    toPorts: [{{ports: [{{port: "1", endPort: 65535, protocol: TCP}}]}}]
  - toEndpoints: [{{matchLabels: {{k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}}}]
    toPorts: [{{ports: [{{port: "53", protocol: UDP}}, {{port: "53", protocol: TCP}}]}}]
"""


def build_repo(root: Path, jobs: int) -> None:
    (root / "inventory.yaml").write_text(inventory(CLUSTERS))
    for j in range(jobs):
        c = j % CLUSTERS
        d = root / "clusters" / f"c{c}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"job-{j}.yaml").write_text(job_docs(c, j))


FLOOR = """
import sys, yaml, pathlib
n = 0
for f in sorted(pathlib.Path(sys.argv[1]).rglob('*.yaml')):
    n += sum(1 for _ in yaml.load_all(f.read_text(), Loader=yaml.CSafeLoader))
print(n)
"""

CHECK = """
import sys
from topogate.check import run_check
o = run_check(sys.argv[1] + '/inventory.yaml', [sys.argv[1] + '/clusters'])
print(len(o.result.jobs), o.result.errors, o.result.warnings)
"""


def measure(code: str, root: Path) -> tuple[float, int, str]:
    """Wall seconds, peak RSS (KiB) and stdout of `python -c code root` in a fresh process."""
    wrapper = (
        "import resource, time, runpy, sys\n"
        "t = time.perf_counter()\n"
        f"exec(compile({code!r}, 'bench', 'exec'))\n"
        "print('WALL', time.perf_counter() - t)\n"
        "print('RSS', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
    )
    out = subprocess.run([sys.executable, "-c", wrapper, str(root)], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONHASHSEED": "0"}).stdout
    lines = out.strip().splitlines()
    wall = float(next(x for x in lines if x.startswith("WALL")).split()[1])
    rss = int(next(x for x in lines if x.startswith("RSS")).split()[1])
    return wall, rss, lines[0]


def run(jobs: int) -> dict[str, float | int | str]:
    with tempfile.TemporaryDirectory(prefix="topogate-bench-") as tmp:
        root = Path(tmp)
        build_repo(root, jobs)
        size = sum(f.stat().st_size for f in root.rglob("*.yaml"))
        floor, floor_rss, n_docs = measure(FLOOR, root)
        check, check_rss, summary = measure(CHECK, root)
    return {"jobs": jobs, "bytes": size, "docs": n_docs, "floor_s": round(floor, 2),
            "check_s": round(check, 2), "ratio": round(check / floor, 2),
            "floor_rss_mib": floor_rss // 1024, "check_rss_mib": check_rss // 1024, "check": summary}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--jobs", type=int, default=5000)
    ap.add_argument("--growth", action="store_true", help="also measure 1,000 and 10,000 jobs")
    args = ap.parse_args()
    sizes = [args.jobs] + ([1000, 10000] if args.growth else [])
    results = [run(n) for n in sizes]
    for r in results:
        print(json.dumps(r))
    if args.growth:
        by = {r["jobs"]: r for r in results}
        t1, t10 = float(by[1000]["check_s"]), float(by[10000]["check_s"])
        print(f"growth 1,000 -> 10,000 jobs: {t10 / t1:.1f}x (near linear is about 10x)")


if __name__ == "__main__":
    time.perf_counter()
    main()
