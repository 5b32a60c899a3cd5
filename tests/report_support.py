"""Hand-built maps for the reporter tests: a clean job, a job with a blocked flow that may
split, and findings of every severity, including messages that need escaping."""

from __future__ import annotations

import random
from dataclasses import replace

from topogate.analysis.result import CheckResult, Flow, GroupMap, JobMap, PoolVerdict, RuleInfo
from topogate.core.findings import Finding
from topogate.core.position import Position

RULES = (
    RuleInfo("TG101", "hard-block", "error", "A required flow is denied in some feasible placement.",
             "A required flow is denied in some feasible placement.\n\nThe job never starts: "
             "pin the group to the zone whose door is open.\n\n```yaml\nplacement: pin\n```"),
    RuleInfo("TG102", "may-split", "error", "A job can span zones.",
             "A job can span zones.\n\nNCCL pays inter-AZ latency and egress. Use `pin` or `follow`."),
    RuleInfo("TG110", "dangling-policy", "warning", "A policy selects no pod.",
             "A policy selects no pod."),
    RuleInfo("TG120", "no-policy", "info", "A job has no policy.", "A job has no policy."),
)

CNP = "CiliumNetworkPolicy/ml-team/intra-zone"
CNP_AT = Position("policies/intra-zone.yaml", 14, 9)


def _flow(src: str, dst: str, sz: str, dz: str, port: int, proto: str, purpose: str,
          allowed: bool = True, reason: str = "", by: str = "", at: Position | None = None) -> Flow:
    return Flow(src, dst, sz, dz, port, proto, purpose, allowed,
                reason or ("allowed by both sides" if allowed else "denied"),
                decided_by=by, decided_at=at or Position("<unknown>", 1, 1))


CLEAN = JobMap(
    object="PyTorchJob/ml-team/clean-ft", cluster="gpu-east", kind="PyTorchJob",
    namespace="ml-team", name="clean-ft",
    groups=(
        GroupMap("Master", 1, 0, ("us-east-1a",),
                 (PoolVerdict("us-east-1a", "gpu-a100", True),), Position("jobs/clean.yaml", 8, 7)),
        GroupMap("Worker", 2, 8, ("us-east-1a",),
                 (PoolVerdict("us-east-1a", "gpu-a100", True),), Position("jobs/clean.yaml", 20, 7)),
    ),
    colocated=True, schedulable=True,
    flows=(
        _flow("Worker", "Master", "us-east-1a", "us-east-1a", 23456, "TCP", "rendezvous"),
        _flow("Worker", "Worker", "us-east-1a", "us-east-1a", 0, "TCP", "nccl"),
        _flow("Master", "kube-dns", "us-east-1a", "", 53, "UDP", "dns"),
    ),
    pos=Position("jobs/clean.yaml", 1, 1),
)

BLOCK_REASON = ("ingress of Master in us-east-1b denied: CiliumNetworkPolicy/ml-team/intra-zone "
                "allows only from zone us-east-1b")

BROKEN = JobMap(
    object="PyTorchJob/ml-team/llama-ft", cluster="gpu-east", kind="PyTorchJob",
    namespace="ml-team", name="llama-ft",
    groups=(
        GroupMap("Master", 1, 0, ("us-east-1a", "us-east-1b"),
                 (PoolVerdict("us-east-1a", "gpu-a100", True),
                  PoolVerdict("us-east-1b", "cpu", True),
                  PoolVerdict("us-east-1c", "gpu-h100", False, "taint gpu=present:NoSchedule not tolerated")),
                 Position("jobs/llama.yaml", 9, 7), (("app", "llama"), ("role", "master"))),
        GroupMap("Worker", 4, 8, ("us-east-1a",),
                 (PoolVerdict("us-east-1a", "gpu-a100", True),
                  PoolVerdict("us-east-1b", "cpu", False, "nodeAffinity node-type In [gpu] does not match")),
                 Position("jobs/llama.yaml", 30, 7)),
    ),
    colocated=False, schedulable=True,
    split_reasons=("Master has no zone constraint and may land in us-east-1b",),
    flows=(
        _flow("Worker", "Master", "us-east-1a", "us-east-1a", 23456, "TCP", "rendezvous", by=CNP, at=CNP_AT),
        _flow("Worker", "Master", "us-east-1a", "us-east-1b", 23456, "TCP", "rendezvous", False,
              BLOCK_REASON, CNP, CNP_AT),
        _flow("Worker", "Master", "us-east-1a", "us-east-1b", 0, "TCP", "nccl", False,
              BLOCK_REASON, CNP, CNP_AT),
        _flow("Worker", "Worker", "us-east-1a", "us-east-1a", 0, "TCP", "nccl"),
        _flow("Master", "kube-dns", "us-east-1b", "", 53, "UDP", "dns"),
    ),
    pos=Position("jobs/llama.yaml", 1, 1),
    inventory_pos=Position("inventory.yaml", 40, 3),
    capacity={"needs": 32, "zone": "us-east-1a", "has": 32, "fits": True},
)

# A message with everything GitHub's command syntax cares about.
NASTY = "Worker -> Master: TCP/23456 denied, 100% of steps\nfix: pin Master to us-east-1a"

FINDINGS = (
    Finding("jobs/llama.yaml", 30, 7, "TG101", "hard-block", "error", BROKEN.object, NASTY),
    Finding("jobs/llama.yaml", 9, 7, "TG102", "may-split", "error", BROKEN.object,
            "Master may land in us-east-1b while Worker is in us-east-1a | pin or follow"),
    Finding("policies/intra-zone.yaml", 3, 1, "TG110", "dangling-policy", "warning",
            "CiliumNetworkPolicy/ml-team/old", "selects no pod"),
    Finding("<unknown>", 1, 1, "TG120", "no-policy", "info", "Namespace/ml-team", "no policy in ml-team"),
    # A rule the engine emits without registering it (e.g. an unreadable file).
    Finding("/abs/path/with space.yaml", 2, 1, "TG001", "unreadable", "error", "File/x", "bad YAML <tag>"),
)


def result(findings: tuple[Finding, ...] = FINDINGS, jobs: tuple[JobMap, ...] = (BROKEN, CLEAN)) -> CheckResult:
    return CheckResult(findings=findings, jobs=jobs, rules=RULES, inventory="inventory.yaml")


def shuffled(r: CheckResult, seed: int) -> CheckResult:
    rng = random.Random(seed)
    findings, jobs = list(r.findings), []
    rng.shuffle(findings)
    for j in r.jobs:
        flows = list(j.flows)
        rng.shuffle(flows)
        jobs.append(replace(j, flows=tuple(flows)))
    rng.shuffle(jobs)
    return replace(r, findings=tuple(findings), jobs=tuple(jobs))


CLEAN_RESULT = CheckResult(findings=(), jobs=(CLEAN,), rules=RULES, inventory="inventory.yaml")
