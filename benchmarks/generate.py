"""Benchmark `topogate generate` against the floor: dumping the same documents with libyaml.

Synthetic inventory: 20 clusters x 6 zones (3 network zones each), 5,000 workloads spread over
the clusters, a mix of PyTorchJob, MPIJob, JobSet and TrainJob, half pinned and half following,
with bases that already carry labels, tolerations and affinity terms. Built as model objects
(no loader) so the figure is about the generators and the writer.

Measured in one run, best of --repeat:
- topogate: render_tree (generate + serialise) and writer.write_tree into a temp dir;
- floor:    the same OutputFile documents, precomputed, dumped with yaml.CSafeDumper and written
            to a temp dir, one file each.
The ratio topogate/floor must be at most 3. Peak memory: tracemalloc peak of one extra, untimed
render_tree, and the process's maximum RSS.

Usage: python benchmarks/generate.py [--workloads N] [--repeat R]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from topogate import kinds, writer  # noqa: E402
from topogate.generators import render_files, render_tree  # noqa: E402
from topogate.inventory.model import (  # noqa: E402
    Cluster,
    EgressRule,
    Inventory,
    Metrics,
    NetworkZone,
    Pool,
    PortSpec,
    ReplicaGroup,
    Taint,
    Workload,
    Zone,
)

KIND_CYCLE = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob")


def _template(gpus: int) -> dict[str, Any]:
    return {"metadata": {"labels": {"team": "ml"}},
            "spec": {"tolerations": [{"key": "spot", "operator": "Exists"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [
                             {"key": "capacity-type", "operator": "In", "values": ["on-demand"]}]}]}}},
                     "containers": [{"name": "main", "image": "ghcr.io/acme/train:1",
                                     "env": [{"name": "NCCL_DEBUG", "value": "INFO"}],
                                     "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}}


def _job(kind: str, name: str) -> dict[str, Any]:
    api = kinds.KINDS[kind].api_version
    md = {"name": name}
    if kind == "PyTorchJob":
        spec: dict[str, Any] = {"pytorchReplicaSpecs": {
            "Master": {"replicas": 1, "template": _template(1)},
            "Worker": {"replicas": 3, "template": _template(1)}}}
    elif kind == "MPIJob":
        spec = {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": _template(0)},
                                    "Worker": {"replicas": 2, "template": _template(2)}}}
    elif kind == "JobSet":
        spec = {"replicatedJobs": [
            {"name": n, "replicas": 1, "template": {"spec": {"parallelism": 2, "template": _template(1)}}}
            for n in ("driver", "workers")]}
    else:
        spec = {"runtimeRef": {"name": "torch-distributed"},
                "trainer": {"numNodes": 2, "resourcesPerNode": {"limits": {"nvidia.com/gpu": 1}}}}
    return {"apiVersion": api, "kind": kind, "metadata": md, "spec": spec}


def synthetic(n_clusters: int = 20, n_zones: int = 6, n_workloads: int = 5000,
              root: str = "/bench/repo") -> Inventory:
    clusters = []
    for ci in range(n_clusters):
        cname = f"c{ci:02d}"
        zones = tuple(
            Zone(f"{cname}-z{zi}", (
                Pool("gpu", 8, 8, (("node-type", "gpu"),),
                     (Taint("nvidia.com/gpu", "NoSchedule", "present"),)),
                Pool("cpu", 4, 0, (("node-type", "cpu"),)),
            )) for zi in range(n_zones))
        nzs = tuple(NetworkZone(f"nz{k}", (zones[2 * k].name, zones[2 * k + 1].name))
                    for k in range(n_zones // 2))
        clusters.append(Cluster(cname, "aws", "us-east-1", zones=zones, network_zones=nzs))
    workloads = []
    for wi in range(n_workloads):
        c = clusters[wi % n_clusters]
        kind = KIND_CYCLE[wi % len(KIND_CYCLE)]
        name = f"job-{wi:05d}"
        job = _job(kind, name)
        nz = c.network_zones[wi % len(c.network_zones)]
        follow = wi % 2 == 1
        groups = tuple(ReplicaGroup(g.name, g.pods, g.gpus_per_pod) for g in kinds.replica_groups(job))
        egress = (EgressRule(("s3.us-east-1.amazonaws.com",), (), (PortSpec(443),)),) if wi % 3 == 0 else ()
        workloads.append(Workload(
            name, f"team-{wi % 25}", c.name, kind, f"bases/{name}", nz.name,
            "follow" if follow else "pin", None if follow else nz.zones[0],
            Metrics(9090) if wi % 5 == 0 else None, egress, groups,
            f"{root}/bases/{name}", (job,)))
    return Inventory("bench", f"{root}/inventory.yaml", "0" * 64, tuple(clusters),
                     tuple(sorted(workloads, key=lambda w: (w.cluster, w.namespace, w.name))))


def run_topogate(inv: Inventory, out: Path) -> int:
    files = render_tree(inv, str(out))
    writer.write_tree(out, files)
    return len(files)


def run_floor(docs: list[tuple[str, tuple[Any, ...], str | None]], out: Path) -> int:
    made: set[Path] = set()
    for rel, ds, raw in docs:
        target = out / rel
        if target.parent not in made:
            target.parent.mkdir(parents=True, exist_ok=True)
            made.add(target.parent)
        # The few non-YAML files (a dashboard JSON) are written as they are in both runs.
        text = raw if raw is not None else yaml.dump_all(
            list(ds), Dumper=yaml.CSafeDumper, sort_keys=False, explicit_start=len(ds) > 1, width=4096)
        with open(target, "w") as fh:
            fh.write(text)
    return len(docs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--clusters", type=int, default=20)
    ap.add_argument("--zones", type=int, default=6)
    ap.add_argument("--workloads", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()

    inv = synthetic(args.clusters, args.zones, args.workloads)
    scratch = Path(tempfile.mkdtemp(prefix="topogate-bench-"))
    try:
        # The floor dumps exactly the documents topogate writes (precomputed, not timed).
        docs = [(f.path, f.docs, f.text) for f in render_files(inv, str(scratch / "tg"))]
        t_tg, t_floor = [], []
        n_files = 0
        for r in range(args.repeat):
            for which in (("floor", "tg") if r % 2 else ("tg", "floor")):
                out = scratch / f"{which}-{r}"
                t0 = time.perf_counter()
                if which == "tg":
                    n_files = run_topogate(inv, out)
                    t_tg.append(time.perf_counter() - t0)
                else:
                    run_floor(docs, out)
                    t_floor.append(time.perf_counter() - t0)
                shutil.rmtree(out)
        size = sum(len(b) for b in render_tree(inv, str(scratch / "tg")).values())
        tracemalloc.start()
        render_tree(inv, str(scratch / "tg"))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    rss_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    best_tg, best_floor = min(t_tg), min(t_floor)
    ratio = best_tg / best_floor
    print(f"inventory: {args.clusters} clusters x {args.zones} zones, {args.workloads} workloads")
    print(f"output:    {n_files} files, {size / 1e6:.1f} MB")
    print(f"topogate:  {best_tg:.2f} s (render + atomic write; runs: {', '.join(f'{t:.2f}' for t in t_tg)})")
    print(f"floor:     {best_floor:.2f} s (CSafeDumper + write; runs: {', '.join(f'{t:.2f}' for t in t_floor)})")
    print(f"ratio:     {ratio:.2f} (must be <= 3)")
    print(f"memory:    render_tree tracemalloc peak {peak / 1e6:.0f} MB; process max RSS {rss_kb / 1e3:.0f} MB")
    print(f"cpus:      {os.cpu_count()}")
    if ratio > 3:
        sys.exit(1)


if __name__ == "__main__":
    main()
