"""End-to-end benchmark: the CLI as users run it, on a repository written to disk.

For each size (default 500, 2,000 and 10,000 jobs) a synthetic repository is written to a temp
directory: 10 clusters of 3 zones (a GPU network zone per zone and a general one), N PyTorchJobs
of 8 pods (1 Master + 7 Workers, 1 GPU each), each with a kustomize base of its own
(`bases/<job>/kustomization.yaml` + `pytorchjob.yaml`), and an inventory naming them all. Then,
each step in a fresh process and each against a floor measured in the same run on the same files:

- read:     `load_inventory` (timed inside the process)  vs  `yaml.load(..., CSafeLoader)` over the
            inventory and every base file (limit 3x);
- generate: `topogate generate INV -o OUT` (wall)  vs  the same documents (read beforehand, not
            timed) dumped with CSafeDumper and written one file each (limit 1.5x);
- check:    `topogate check INV --rendered OUT OUT/clusters` (wall)  vs  `kubectl kustomize` of
            the same cluster roots, one after another, + CSafeLoader of their output (limit 1.2x);
- changed:  the pull-request gate after a change to one job's base: the repository committed
            with git, one base edited, `topogate check INV OUT/clusters --changed-since main`
            (wall)  vs  `kubectl kustomize` of that job's cluster root + CSafeLoader of its output
            (limit 5x: the inventory and every kustomization file are still read once, to know
            what changed; docs/cli.md; from 10,000 jobs 1.5x, where the build dominates);
- growth:   the time of each CLI step for 10x the jobs, from the smallest and largest size run,
            scaled as t_large/t_small to the power log(10)/log(large/small), beside the floor's
            own (limit 11x, raised by as much as the floor grows past 10x: growth_limit);
- peak RSS of every process (from wait4, per child), and its CPU time with the children it
            waited for (kubectl), and its ratio to the floor's: on check, the difference is about
            topogate's own work. From 10,000 jobs the peak RSS of check is held to 2x its floor's;
- waited:   on check and changed, the share of topogate's wall spent waiting for the output of
            a kustomize build it needed next (the rest is topogate's own work, or kubectl's
            left to finish after it: a regression shows on one side or the other).

Exit status 1 when any ratio is over its limit, so `make bench` fails. The machine is noisy:
only ratios measured in one run mean anything.

    python benchmarks/e2e.py [--sizes 500,2000,10000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

CLUSTERS = 10
ZONES = 3
WORKERS = 7
LIMITS = {"read": 3.0, "generate": 1.5, "check": 1.2, "changed": 5.0}
# At scale the fixed costs (interpreter start, the walk of every kustomization file) are small
# beside the one build a change needs, so the gate must come close to it: from this many jobs
# `changed` is held to SCALE_LIMITS, and peak RSS of `check` to RSS_LIMITS times its floor's.
AT_SCALE = 10_000
SCALE_LIMITS = {"changed": 1.5}
RSS_LIMITS = {"check": 2.0}
GROWTH_LIMIT = 11.0
ROOT = Path(__file__).resolve().parents[1]


# --- the synthetic repository -----------------------------------------------------------------

def inventory(jobs: int) -> str:
    lines = ["apiVersion: topogate.dev/v1alpha1", "kind: Inventory", "metadata:", "  name: bench",
             "clusters:"]
    for c in range(CLUSTERS):
        lines += [f"- name: c{c}", "  provider: aws", "  region: us-east-1", "  zones:"]
        for z in range(ZONES):
            lines += [f"  - name: c{c}-z{z}", "    pools:",
                      "    - name: gpu", "      nodes: 400", "      gpusPerNode: 8",
                      "      labels: {node-type: gpu}",
                      "      taints: [{key: gpu, value: present, effect: NoSchedule}]",
                      "    - {name: cpu, nodes: 10, labels: {node-type: cpu}}"]
        lines.append("  networkZones:")
        lines += [f"  - {{name: gpu-{z}, zones: [c{c}-z{z}]}}" for z in range(ZONES)]
    lines.append("workloads:")
    for j in range(jobs):
        lines += [f"- name: job-{j}", f"  namespace: team-{j % 20}", f"  cluster: c{j % CLUSTERS}",
                  "  kind: PyTorchJob", f"  base: bases/job-{j}", f"  networkZone: gpu-{j % ZONES}",
                  "  placement: pin"]
    return "\n".join(lines) + "\n"


def _replica(role: str, replicas: int) -> str:
    return f"""    {role}:
      replicas: {replicas}
      restartPolicy: OnFailure
      template:
        spec:
          containers:
          - name: pytorch
            image: ghcr.io/example/trainer:1.0
            command: [torchrun, --nnodes=8, train.py]
            resources:
              limits:
                nvidia.com/gpu: 1
"""


def job(j: int) -> str:
    return (f"apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata:\n  name: job-{j}\nspec:\n"
            "  pytorchReplicaSpecs:\n" + _replica("Master", 1) + _replica("Worker", WORKERS))


KUSTOMIZATION = ("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
                 "resources:\n- pytorchjob.yaml\n")


def build_repo(root: Path, jobs: int) -> None:
    (root / ".git").mkdir(parents=True)  # the repository root, as the loader finds it
    (root / "inventory.yaml").write_text(inventory(jobs))
    for j in range(jobs):
        d = root / "bases" / f"job-{j}"
        d.mkdir(parents=True)
        (d / "kustomization.yaml").write_text(KUSTOMIZATION)
        (d / "pytorchjob.yaml").write_text(job(j))


# --- measuring --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    seconds: float  # the figure compared (wall, or the in-process timer when printed)
    rss_mib: float
    stdout: str
    # CPU seconds (user + system) of the process and every child it waited for (kubectl): on
    # the check step, topogate's minus the floor's is about topogate's own work, which is what
    # concurrency cannot hide on a machine whose CPUs kubectl already keeps busy.
    cpu: float = 0.0
    # Seconds the process spent waiting for kustomize output it needed next (`WAITED` on
    # stderr, from CLI_WAITED); None where not measured. What is left of the wall is topogate's.
    waited: float | None = None


def run(argv: list[str], cwd: Path, timed_inside: bool = False) -> Run:
    """Run argv in a fresh process; wall time and that child's own peak RSS (wait4).

    With timed_inside the child prints `SECONDS x` and that is the figure (a floor or a
    library call measured without interpreter start-up)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": "0", "CI": "true"}
    # Dirty pages of the previous step (the repository just written, the tree just generated)
    # are flushed first, so neither side pays the other's writeback.
    os.sync()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=out, stderr=err, text=True)
        # wait4, not Popen.wait: it gives this child's own peak RSS
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}):\n{stderr[-2000:]}")
    secs = wall
    if timed_inside:
        secs = float(next(x for x in stdout.splitlines() if x.startswith("SECONDS")).split()[1])
    # topogate ends with os._exit (core.gctune): no atexit hook runs, so each wait prints the sum
    waited = next((float(x.split()[1]) for x in reversed(stderr.splitlines()) if x.startswith("WAITED ")), None)
    return Run(secs, usage.ru_maxrss / 1024, stdout, usage.ru_utime + usage.ru_stime, waited)


def py(code: str, *args: str) -> list[str]:
    return [sys.executable, "-c", code, *args]


READ = """
import sys, time
from topogate.inventory.loader import load_inventory
t = time.perf_counter()
inv = load_inventory(sys.argv[1])
print('SECONDS', time.perf_counter() - t)
print(len(inv.workloads))
"""

READ_FLOOR = """
import sys, time, pathlib, yaml
root = pathlib.Path(sys.argv[1])
t = time.perf_counter()
n = 0
for f in [root / 'inventory.yaml', *sorted((root / 'bases').rglob('*.yaml'))]:
    with open(f, encoding='utf-8') as fh:
        n += sum(1 for _ in yaml.load_all(fh.read(), Loader=yaml.CSafeLoader))
print('SECONDS', time.perf_counter() - t)
print(n)
"""

DUMP_FLOOR = """
import sys, time, pathlib, json, yaml
src, dst = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
docs = []
for f in sorted(p for p in src.rglob('*') if p.is_file()):
    text = f.read_text()
    rel = f.relative_to(src)
    docs.append((rel, json.loads(text) if f.suffix == '.json' else
                 list(yaml.load_all(text, Loader=yaml.CSafeLoader))))
t = time.perf_counter()
for rel, d in docs:
    out = dst / rel
    out.parent.mkdir(parents=True, exist_ok=True)
    text = (json.dumps(d, indent=2, sort_keys=True) if rel.suffix == '.json' else
            yaml.dump_all(d, Dumper=yaml.CSafeDumper, sort_keys=False))
    out.write_text(text)
print('SECONDS', time.perf_counter() - t)
print(len(docs))
"""

BUILD_FLOOR = """
import os, subprocess, sys, time, pathlib, yaml
kubectl = os.path.join(os.path.dirname(sys.executable), 'kubectl')
roots = sorted(p for p in pathlib.Path(sys.argv[1]).iterdir() if p.is_dir())
t = time.perf_counter()
n = 0
for r in roots:
    text = subprocess.run([kubectl, 'kustomize', str(r)], capture_output=True, text=True,
                          check=True).stdout
    n += sum(1 for _ in yaml.load_all(text, Loader=yaml.CSafeLoader))
print('SECONDS', time.perf_counter() - t)
print(n)
"""


ONE_BUILD_FLOOR = """
import os, subprocess, sys, time, yaml
kubectl = os.path.join(os.path.dirname(sys.executable), 'kubectl')
t = time.perf_counter()
text = subprocess.run([kubectl, 'kustomize', sys.argv[1]], capture_output=True, text=True,
                      check=True).stdout
n = sum(1 for _ in yaml.load_all(text, Loader=yaml.CSafeLoader))
print('SECONDS', time.perf_counter() - t)
print(n)
"""

GIT_ENV = {"GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}


def change_one_job(root: Path, jobs: int) -> Path:
    """Commit the repository on main, branch, and edit one job's base (not timed); the job's
    cluster root, which is what the narrowed check must build."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True,
                       env={**os.environ, **GIT_ENV})

    shutil.rmtree(root / ".git")  # the bare marker build_repo made
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "main")
    git("checkout", "-qb", "change")
    j = jobs // 2 + 7
    base = root / "bases" / f"job-{j}" / "pytorchjob.yaml"
    base.write_text(base.read_text().replace("trainer:1.0", "trainer:1.1"))
    return root / "out" / "clusters" / f"c{j % CLUSTERS}"


def scaled_growth(t_small: float, t_large: float, factor: float) -> float:
    """t_large / t_small for `factor` times the jobs, scaled to 10x the jobs."""
    return float((t_large / t_small) ** (math.log(10) / math.log(factor)))


def growth_limit(floor_growth: float) -> float:
    """GROWTH_LIMIT for 10x the jobs, raised by as much as the floor itself grows past 10x.

    The floors are the least the same bytes cost, and on this machine they grow faster than
    the jobs (kubectl kustomize of one root is superlinear in its resources; reading 20,000
    files or building a heap of 1 GB costs more per item than 1,000 files or 50 MB): topogate
    cannot grow less than the work it hands to kubectl. What the limit keeps out is topogate's
    own superlinearity: growth of more than 1.1x the floor's for each 10x."""
    return GROWTH_LIMIT * max(1.0, floor_growth / 10.0)


def limit_for(step: str, jobs: int) -> float:
    """The time ratio `step` is held to at this size."""
    return SCALE_LIMITS.get(step, LIMITS[step]) if jobs >= AT_SCALE else LIMITS[step]


def rss_limit_for(step: str, jobs: int) -> float | None:
    """The peak-RSS ratio `step` is held to at this size (None: not held)."""
    return RSS_LIMITS.get(step) if jobs >= AT_SCALE else None


def topogate(*args: str) -> list[str]:
    return [sys.executable, "-m", "topogate.cli", *args]


# The CLI as `topogate` runs it, timing each wait for a kustomize build's output (the builds
# run side by side in kubectl children; the wait is where the process had nothing else to do).
# Instrumentation of the benchmark only: it wraps one method and changes no answer. It runs as
# a file named `topogate`, as the console script does: the command line tells itself from a
# program that calls `main` in-process by that (topogate.core.gctune.one_shot), and only the
# command line skips the last cyclic collection and the heap's teardown at exit. Run with
# `python -c`, check took 0.5-0.7 s longer at 2,000 jobs than `topogate check` itself.
CLI_WAITED = """
import sys, time
from topogate.sources import manifests
waited = [0.0]
real = manifests._Builds.result
def result(self, d):
    t = time.perf_counter()
    try:
        return real(self, d)
    finally:
        waited[0] += time.perf_counter() - t
        print('WAITED', waited[0], file=sys.stderr, flush=True)  # the last line counts
manifests._Builds.result = result
from topogate.cli import main
main(sys.argv[1:], prog_name='topogate')
"""


def topogate_waited(tmp: Path, *args: str) -> list[str]:
    script = tmp / "bin" / "topogate"
    if not script.exists():
        script.parent.mkdir(exist_ok=True)
        script.write_text(CLI_WAITED)
    return [sys.executable, str(script), *args]


def best(pairs: list[tuple[Run, Run]]) -> tuple[Run, Run]:
    """The fastest of each side over the repetitions (the least disturbed by the machine's
    other work), with the highest peak RSS seen."""
    def side(runs: list[Run]) -> Run:
        fastest = min(runs, key=lambda r: r.seconds)
        return Run(fastest.seconds, max(r.rss_mib for r in runs), fastest.stdout, fastest.cpu, fastest.waited)
    return side([a for a, _ in pairs]), side([b for _, b in pairs])


def measure(jobs: int, keep: Path | None, repeat: int = 1) -> dict[str, tuple[Run, Run]]:
    tmp = Path(tempfile.mkdtemp(prefix="topogate-e2e-"))
    try:
        root = tmp / "repo"
        build_repo(root, jobs)
        res: dict[str, tuple[Run, Run]] = {}
        times = range(repeat)
        res["read"] = best([(run(py(READ, "inventory.yaml"), root, True),
                             run(py(READ_FLOOR, str(root)), root, True)) for _ in times])

        def generate() -> tuple[Run, Run]:
            for d in (root / "out", tmp / "floor-out"):  # both sides write a fresh tree
                shutil.rmtree(d, ignore_errors=True)
            return (run(topogate("generate", "inventory.yaml", "-o", "out"), root),
                    run(py(DUMP_FLOOR, str(root / "out"), str(tmp / "floor-out")), root, True))

        res["generate"] = best([generate() for _ in times])
        res["check"] = best([
            (run(topogate_waited(tmp, "check", "inventory.yaml", "--rendered", "out", "out/clusters"), root),
             run(py(BUILD_FLOOR, str(root / "out" / "clusters")), root, True)) for _ in times])
        cluster_root = change_one_job(root, jobs)
        res["changed"] = best([
            (run(topogate_waited(tmp, "check", "inventory.yaml", "out/clusters", "--changed-since", "main"), root),
             run(py(ONE_BUILD_FLOOR, str(cluster_root)), root, True)) for _ in times])
        if keep:
            shutil.copytree(root, keep / f"repo-{jobs}", dirs_exist_ok=True)
        return res
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--sizes", default="500,2000,10000",
                    help="comma-separated job counts (default 500,2000,10000); e.g. --sizes 200 "
                         "for a quick run")
    ap.add_argument("--keep", type=Path, help="copy each synthetic repository here")
    ap.add_argument("--repeat", type=int, default=3,
                    help="runs of each side per step, alternating; the fastest of each counts "
                         "(default 3)")
    args = ap.parse_args()
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    print(f"python {' '.join(sys.argv)}; {os.cpu_count()} CPUs; best of {max(1, args.repeat)}; load average "
          f"{os.getloadavg()[0]:.1f} at start", flush=True)
    over: list[str] = []
    results: dict[int, dict[str, tuple[Run, Run]]] = {}
    print(f"{'jobs':>6} {'step':<9} {'topogate':>9} {'floor':>8} {'ratio':>6} {'limit':>6} "
          f"{'RSS MiB':>8} {'floor RSS':>9} {'CPU s':>7} {'floor CPU':>9} {'CPU ratio':>9} {'waited':>7}")
    for n in sizes:
        results[n] = r = measure(n, args.keep, max(1, args.repeat))
        for step, (ours, floor) in r.items():
            ratio = ours.seconds / floor.seconds if floor.seconds > 0 else math.inf
            limit = limit_for(step, n)
            flag = "" if ratio <= limit else "  OVER"
            if flag:
                over.append(f"{step} at {n} jobs: {ratio:.2f}x > {limit}x")
            rss_limit = rss_limit_for(step, n)
            rss_ratio = ours.rss_mib / floor.rss_mib if floor.rss_mib > 0 else math.inf
            if rss_limit is not None and rss_ratio > rss_limit:
                flag += "  RSS OVER"
                over.append(f"{step} peak RSS at {n} jobs: {rss_ratio:.2f}x the floor's > {rss_limit}x")
            cpu_ratio = ours.cpu / floor.cpu if floor.cpu > 0 else math.inf
            waited = "" if ours.waited is None else f"{ours.waited / ours.seconds:.0%}"
            print(f"{n:>6} {step:<9} {ours.seconds:>8.2f}s {floor.seconds:>7.2f}s {ratio:>6.2f} "
                  f"{limit:>6.1f} {ours.rss_mib:>8.0f} {floor.rss_mib:>9.0f} {ours.cpu:>7.2f} "
                  f"{floor.cpu:>9.2f} {cpu_ratio:>9.2f} {waited:>7}{flag}", flush=True)
        for step in ("check", "changed"):
            last = r[step][0].stdout.strip().splitlines()[-1:]
            print(f"{'':>6} {step} said: {last[0] if last else '(nothing)'}", flush=True)
    if len(sizes) > 1:
        small, large = sizes[0], sizes[-1]
        for step in LIMITS:
            grew, floor_grew = (scaled_growth(results[small][step][i].seconds,
                                         results[large][step][i].seconds, large / small)
                           for i in (0, 1))
            limit = growth_limit(floor_grew)
            flag = "" if grew <= limit else "  OVER"
            if flag:
                over.append(f"{step} growth for 10x jobs: {grew:.1f}x > {limit:.1f}x")
            print(f"growth {step:<9} {small} -> {large} jobs, for 10x jobs: topogate {grew:.1f}x, "
                  f"floor {floor_grew:.1f}x, limit {limit:.1f}x{flag}")
    print(f"load average {os.getloadavg()[0]:.1f} at the end")
    for line in over:
        print(f"OVER LIMIT: {line}", file=sys.stderr)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
