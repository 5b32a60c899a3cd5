"""Each observed flow decided by the one evaluator, as `trace --port` decides it.

Endpoints: a reserved identity (kube-apiserver, host, remote-node) is that entity (world with an
address is that address: toCIDR rules decide by address, and a CIDR peer is in world too); an
endpoint with a namespace is the pod class of its namespace, k8s: labels and service account
(topogate.analysis.map.pods.pod_class, the class `check` and `trace` give the same pod); any
other is its IP as a /32 (/128) CIDR peer. The tree is read by `diff`'s reader and compiled by
`diff.members.sides_of` (the policies of each cluster as `trace` compiles them); the deciding
rule is `diff.compare.decision`'s. Replies are skipped: policy decides the connection, not its
answer. Flows are counted per distinct (sender, receiver, port, verdict), so memory grows with
the distinct flows, not with the file.
"""

from __future__ import annotations

import dataclasses
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field

from topogate.analysis.map.pods import pod_class
from topogate.analysis.netpolicy import External, Peer, PodClass
from topogate.diff.compare import Decision, decision
from topogate.diff.members import ANY_ZONE, OUTSIDE, ClusterSide, Member
from topogate.k8s.kinds import TRAINING_KINDS
from topogate.replay.flows import Flow, FlowEnd

ENTITY_ORDER = ("kube-apiserver", "host", "remote-node", "health", "ingress", "init", "world", "world-ipv4",
                "world-ipv6")
DNS_PORT = 53


@dataclass(frozen=True)
class End:
    shown: str
    peer: Peer
    member: Member | None  # the job group it belongs to


@dataclass
class Seen:
    """One distinct observed flow and its verdict in the tree."""

    src: End
    dst: End
    protocol: str
    port: int
    observed: str  # FORWARDED | DROPPED
    decision: Decision
    first_line: int
    count: int = 0
    drop_reason: str = ""

    @property
    def crossed(self) -> bool | None:
        """Whether it crossed a network-zone boundary; None when a side's zone is unknown."""
        zones = [e.member.nz if e.member else "" for e in (self.src, self.dst)]
        if any(z in (OUTSIDE, ANY_ZONE) for z in zones):
            return None
        return zones[0] != zones[1]


@dataclass
class Replay:
    cluster: str
    seen: dict[tuple[str, str, str, int, str], Seen] = field(default_factory=dict)
    replies: int = 0
    outside: int = 0  # both ends outside the cluster's pods: no policy applies


def _cidr(ip: str) -> str:
    try:
        return str(ipaddress.ip_network(ip))
    except ValueError:
        return ""


def peer_of(end: FlowEnd, side: ClusterSide) -> tuple[str, Peer]:
    for entity in ENTITY_ORDER:
        if entity in end.reserved and not (entity.startswith("world") and _cidr(end.ip)):
            return entity, External(entity=entity)
    if end.namespace:
        spec = {"serviceAccountName": end.service_account} if end.service_account else {}
        p = pod_class(end.namespace, end.labels, spec, side.pset)
        return f"{end.namespace}:" + ",".join(f"{k}={v}" for k, v in end.labels), p
    cidr = _cidr(end.ip)
    if cidr and end.names:
        # An address the DNS proxy learned for a name: its identity carries the name (toFQDNs
        # selects it) and the address (toCIDR does), as Cilium's FQDN identities do.
        return f"{end.names[0]} ({end.ip})", External(cidr=cidr, fqdn=end.names[0])
    if cidr:
        return cidr, External(cidr=cidr)
    return "world", External(entity="world")


def _named(peer: Peer, names: tuple[str, ...]) -> list[Peer]:
    """The peer as each of the names its address was answered for (a CNAME chain: a toFQDNs
    rule may select any one of them)."""
    if not isinstance(peer, External) or not peer.fqdn or len(names) < 2:
        return [peer]
    return [dataclasses.replace(peer, fqdn=n) for n in names]


def member_of(peer: Peer, side: ClusterSide) -> Member | None:
    if not isinstance(peer, PodClass):
        return None
    have = set(peer.labels)
    for m in side.jobs.values():
        mp = m.peer
        if isinstance(mp, PodClass) and mp.namespace == peer.namespace and set(mp.labels) <= have:
            return m
    return None


def _end(end: FlowEnd, side: ClusterSide) -> End:
    shown, peer = peer_of(end, side)
    m = member_of(peer, side)
    return End(m.shown if m else shown, m.peer if m else peer, m)


def replay(flows: Iterable[Flow], side: ClusterSide) -> Replay:
    """Decide every flow (module doc)."""
    out = Replay(side.cluster.name)
    for f in flows:
        if f.is_reply:
            out.replies += 1
            continue
        src, dst = _end(f.src, side), _end(f.dst, side)
        if not isinstance(src.peer, PodClass) and not isinstance(dst.peer, PodClass):
            out.outside += 1
            continue
        observed = "DROPPED" if f.verdict == "DROPPED" else "FORWARDED"
        key = (src.shown, dst.shown, f.protocol, f.port, observed)
        s = out.seen.get(key)
        if s is None:
            sender = side.peer(src.member) if src.member else src.peer
            receivers = [side.peer(dst.member)] if dst.member else _named(dst.peer, f.dst.names)
            verdicts = [side.pset.evaluate(sender, r, f.port, f.protocol) for r in receivers]
            v = next((x for x in verdicts if x.allowed), verdicts[0])
            s = out.seen[key] = Seen(src, dst, f.protocol, f.port, observed, decision(v, side, lambda p: p),
                                     f.line, 0, f.drop_reason)
        s.count += 1
    return out


def kind_of_flow(s: Seen) -> str:
    """dns, rendezvous, nccl (between groups of one job), or "" for any other flow."""
    if s.port == DNS_PORT:
        return "dns"
    a, b = s.src.member, s.dst.member
    if a is None or b is None or a.job != b.job:
        return ""
    info = TRAINING_KINDS.get(a.job.split("/", 1)[0])
    if info is not None and info.rendezvous_port == s.port and s.protocol == "TCP":
        return "rendezvous"
    return "nccl"


def denied_observed(r: Replay) -> list[Seen]:
    return [s for s in _sorted(r) if s.observed == "FORWARDED" and not s.decision.allowed]


def dropped_allowed(r: Replay) -> list[Seen]:
    return [s for s in _sorted(r) if s.observed == "DROPPED" and s.decision.allowed]


def _sorted(r: Replay) -> list[Seen]:
    return [r.seen[k] for k in sorted(r.seen)]


def per_job(r: Replay) -> dict[str, dict[str, dict[str, int]]]:
    """job -> dns|rendezvous|nccl -> {seen, crossed, unknown}: flows, not distinct pairs."""
    out: dict[str, dict[str, dict[str, int]]] = {}
    for s in _sorted(r):
        what = kind_of_flow(s)
        m = s.src.member or s.dst.member
        job = m.job if m is not None else ""
        if not what or not job:
            continue
        row = out.setdefault(job, {k: {"seen": 0, "crossed": 0, "unknown": 0}
                                   for k in ("nccl", "rendezvous", "dns")})[what]
        row["seen"] += s.count
        c = s.crossed
        if c is None:
            row["unknown"] += s.count
        elif c:
            row["crossed"] += s.count
    return out


__all__ = ["End", "Replay", "Seen", "denied_observed", "dropped_allowed", "per_job", "replay"]
