"""The flows a training job needs, each with its verdict: NCCL between every pair of groups (all
TCP), the rendezvous port or the MPI launcher's SSH towards/from the coordinator, and DNS to
kube-dns from every group; one flow per pair of zones a placement can give the two groups.

A verdict's sentence cites the deciding rule's line (or the inventory entry behind a generated
policy); it is written only when read (`Flow.reason`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from typing import Any

from topogate.analysis.locate import RuleLocator, side_reason
from topogate.analysis.netpolicy import Peer, PolicySet, Verdict
from topogate.analysis.placement import JobPlacement
from topogate.analysis.proofs.members import KUBE_DNS
from topogate.analysis.result import Flow
from topogate.core.position import NOWHERE
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.kinds import TRAINING_KINDS


def _denied_tcp(pset: PolicySet, src: Peer, dst: Peer) -> tuple[int, Verdict] | None:
    """The first TCP port class between two groups that is denied: NCCL needs every port.

    Port 0 stands for "every port" when the whole range is denied. Every port open (the ports
    alone, shared by the pairs of one shape) needs no port class to be looked at."""
    if pset.open_spans(src, dst, ("TCP",)) == (("TCP", 1, 65535),):
        return None
    for r in pset.port_classes(src, dst, ("TCP",)):
        if not r.verdict.allowed:
            return (0 if (r.start, r.end) == (1, 65535) else r.start), r.verdict
    return None


def _cite(v: Verdict, locate_rule: RuleLocator) -> str:
    egress = side_reason(v.egress, "egress", locate_rule)
    ingress = side_reason(v.ingress, "ingress", locate_rule)
    if not v.egress.allowed:
        return f"egress: {egress}"
    if not v.ingress.allowed:
        return f"ingress: {ingress}"
    return f"egress: {egress}; ingress: {ingress}"


class Citations:
    """One job's memo of citations: by verdict object first (the policy set hands a job the
    same verdict object for every zone pair and port of a flow, and an object is found by its
    address without hashing its rules and references), then by value."""

    def __init__(self) -> None:
        self.by_value: dict[Verdict, functools.partial[str]] = {}
        # id -> (the verdict, kept alive so its id is not reused while here; its citation)
        self.by_id: dict[int, tuple[Verdict, functools.partial[str]]] = {}


def citation(v: Verdict, locate_rule: RuleLocator, cited: Citations) -> functools.partial[str]:
    """The flow's sentence, to be written when read; one per distinct verdict of a job.

    A job's flows on different ports and zone pairs are mostly decided by the same rules, and
    every flow is kept to the end of the run: equal verdicts (and their citations) share one
    object rather than one each. `cited` is the job's own memo: held by nothing the partials
    reach, so it makes no reference cycle (tests/core/test_no_cycles.py)."""
    seen = cited.by_id.get(id(v))
    if seen is not None:
        return seen[1]
    got = cited.by_value.get(v)
    if got is None:
        got = cited.by_value[v] = functools.partial(_cite, v, locate_rule)
    cited.by_id[id(v)] = (v, got)
    return got


def _flow(src: str, dst: str, zpair: tuple[str, str], port: int, proto: str, purpose: str,
          v: Verdict, locate_rule: RuleLocator, cited: Citations) -> Flow:
    if not v.egress.allowed:
        side, direction = v.egress, "egress"
    elif not v.ingress.allowed:
        side, direction = v.ingress, "ingress"
    else:  # an allowed flow is decided by the receiver's allow rule when it has one
        side, direction = (v.ingress, "ingress") if v.ingress.decided_by else (v.egress, "egress")
    by, at = "", NOWHERE
    if side.decided_by is not None:
        by, at = str(side.decided_by.policy), locate_rule(side.decided_by)
    elif not side.allowed and side.enforced_by:  # default deny: the policy that switched it on
        by, at = str(side.enforced_by[0]), locate_rule.section(side.enforced_by[0], direction)
    # The sentence is written by `_cite` when read: v.reason would find every rule's line now.
    return Flow(src, dst, zpair[0], zpair[1], port, proto, purpose, v.allowed, "", by, at,
                citation(v, locate_rule, cited))


def _pairs(plc: JobPlacement, a: str, b: str) -> list[tuple[str, str]]:
    pairs = sorted(plc.zone_pairs(a, b))
    return pairs or [("", "")]


def job_flows(pset: PolicySet, locate_rule: RuleLocator, job: TrainingJob, classes: dict[str, Peer],
              plc: JobPlacement) -> list[Flow]:
    info = TRAINING_KINDS.get(job.kind)
    members = [g for g in job.groups
               if not (job.kind == "TrainJob" and g.name.endswith("initializer"))]
    out: list[Flow] = []
    cited = Citations()
    for a in members:
        for b in members:
            if a.name == b.name and a.pods < 2:
                continue
            denied = _denied_tcp(pset, classes[a.name], classes[b.name])
            for zp in _pairs(plc, a.name, b.name):
                if denied is None:
                    v = pset.evaluate(classes[a.name], classes[b.name], 1024, "TCP")
                    out.append(_flow(a.name, b.name, zp, 0, "TCP", "nccl", v, locate_rule, cited))
                else:
                    out.append(_flow(a.name, b.name, zp, denied[0], "TCP", "nccl", denied[1],
                                     locate_rule, cited))
    if info and info.coordinator and job.group(info.coordinator):
        if info.rendezvous_port:  # every other group reaches the coordinator's rendezvous
            out += _coordinator_flows(pset, locate_rule, info.coordinator, members, classes, plc,
                                      info.rendezvous_port, "rendezvous", cited, inbound=True)
        if info.ssh_from_coordinator:  # the MPI launcher reaches every worker over SSH
            out += _coordinator_flows(pset, locate_rule, info.coordinator, members, classes, plc,
                                      22, "ssh", cited, inbound=False)
    for g in job.groups:
        gp = plc.group(g.name)
        zones = tuple(gp.zones) if gp and gp.zones else ("",)
        for proto in ("UDP", "TCP"):
            v = pset.evaluate(classes[g.name], KUBE_DNS, 53, proto)
            for z in zones:
                out.append(_flow(g.name, "kube-dns", (z, ""), 53, proto, "dns", v, locate_rule, cited))
    return out


def _coordinator_flows(pset: PolicySet, locate_rule: RuleLocator, coord: str, members: Sequence[Any],
                       classes: dict[str, Peer], plc: JobPlacement, port: int, purpose: str,
                       cited: Citations, inbound: bool) -> list[Flow]:
    out: list[Flow] = []
    for g in members:
        if g.name == coord:
            continue
        src, dst = (g.name, coord) if inbound else (coord, g.name)
        v = pset.evaluate(classes[src], classes[dst], port, "TCP")
        for zp in _pairs(plc, src, dst):
            out.append(_flow(src, dst, zp, port, "TCP", purpose, v, locate_rule, cited))
    return out
