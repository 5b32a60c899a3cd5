"""The boundary proof: for every ordered pair of network zones of a cluster, no pod of one reaches
a pod of the other on any port of TCP, UDP or SCTP, except through the doors the inventory
declares.

Which pods: every replica group of every job whose network zone is known (one label class each),
a pod of each network zone that carries only topogate's network-zone label (it stands for the
zone where no job of it is among the manifests, and for pods no per-job policy selects), and an
unlabelled pod in a namespace nothing manages (where real leaks come from: no policy selects it,
and it may run in any zone).

Which pairs, linear in jobs: a pod is paired with the representatives of every other network
zone and with the unmanaged pod, in both directions; and with every pod of another network zone
that one of its own allow rules names by label (a `matchLabels` or `In` requirement, looked up
in a label index, never a scan over all pods). An allow rule without such an anchor (entities,
`{}`, only `Exists`/`NotIn`) matches the representatives when it is wide; the few that are
neither select their pods by one scan per rule, and those pods are asked too.

Which ports: `PolicySet.open_ranges` cuts 1-65535 of each protocol at every port a rule for the
pair names and evaluates one port per class, so "TCP 1-23455 open" is found as that range, not
by guessing a probe port.

hostNetwork groups are asked as Cilium sees them: not endpoints but the node's identity. A pod
across a boundary never shares the hostNetwork pod's node (a node is in one zone, a zone in one
network zone), so it always sees `remote-node`, never `host`: Cilium's allow-localhost default
(the local host reaches its own endpoints whatever their policy says) never opens a boundary;
the unlabelled pod that may run anywhere stands for the copy in another zone. As a sender, the
receiver's ingress rules for `remote-node` (`cluster`, `all`, node selectors) decide; as a
receiver no policy applies to its ingress at all, and only the sender's egress towards that
identity can close the door. A job's hostNetwork groups form one member (they look alike to every
policy). No label selector names them, so they stay out of the label index; an allow rule that
matches `remote-node` pairs its pods with one hostNetwork member of every other zone instead.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.netpolicy import External, PodClass, PortRange, RuleRef, matcher_anchor
from topogate.analysis.proofs import ClusterView
from topogate.analysis.proofs.members import ANY_ZONE, DNS_SPANS, REMOTE_NODE, Member, Span, is_dns, span_text
from topogate.analysis.proofs.witness import Managed, witness_members
from topogate.analysis.result import GroupMap, JobMap
from topogate.core.labels import NETWORK_ZONE_LABEL
from topogate.core.position import NOWHERE, Position
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.kinds import TRAINING_KINDS

# The namespace of the unmanaged probe pod: a name no inventory manages.
UNMANAGED_NS = "topogate-probe-unmanaged"
SSH_PORT = 22


@dataclass(frozen=True)
class Opening:
    cluster: str
    src_object: str
    src_group: str
    src_nz: str
    dst_object: str
    dst_group: str
    dst_nz: str
    ranges: tuple[str, ...]  # "1-23455/TCP", ...
    reason: str
    decided_by: str  # the opening rule (with its file:line), "" when nothing enforces either side
    pos: Position
    enforced: bool = True  # False: no policy among PATHs enforces either side
    uses: tuple[str, ...] = ()  # what the job runs on the open ranges ("22/TCP (MPI SSH)")
    spans: tuple[Span, ...] = field(default=(), compare=False)
    host_network: str = ""  # "src" or "dst": that side is a hostNetwork group (no policy selects it)
    host_policies: tuple[str, ...] = ()  # host policies (nodeSelector) among PATHs: not modelled

    @property
    def port(self) -> int:
        """The first open port (the JSON report and older readers want one number)."""
        return self.spans[0][1] if self.spans else 0


def pool_nodes(cluster: Cluster) -> list[tuple[External, str, str]]:
    """A node of each pool of the inventory, as fromNodes/toNodes see it (the pool's labels and
    the zone label), with its network zone (ANY_ZONE when its zone is in none)."""
    out = []
    for z in cluster.zones:
        nz = cluster.network_zone_of(z.name)
        for p in z.pools:
            labels = tuple(sorted({**p.label_map, cluster.zone_label: z.name}.items()))
            out.append((External(entity="remote-node", labels=labels), nz.name if nz else ANY_ZONE,
                        f"nodes of pool {p.name} (zone {z.name})"))
    return out


def network_zone_of(cluster: Cluster, jm: JobMap) -> str | None:
    nzs = {n.name for z in jm.zones if (n := cluster.network_zone_of(z))}
    return nzs.pop() if len(nzs) == 1 else None


def zone_rep(cm: ClusterView, nz: str, ns: str) -> PodClass:
    """A pod of network zone `nz` in namespace `ns` that carries only topogate's label."""
    return PodClass(ns, ((NETWORK_ZONE_LABEL, nz),), cm.pset.namespace_labels(ns))


def unmanaged_pod(cm: ClusterView) -> PodClass:
    return PodClass(UNMANAGED_NS, (), cm.pset.namespace_labels(UNMANAGED_NS))


def kind_ports(kind: str) -> list[tuple[int, str]]:
    """The ports a job kind's own pods use, named, for the finding (NCCL's all-TCP aside)."""
    info = TRAINING_KINDS.get(kind)
    out: list[tuple[int, str]] = []
    if info and info.rendezvous_port:
        out.append((info.rendezvous_port, f"{kind} rendezvous"))
    if info and info.ssh_from_coordinator:
        out.append((SSH_PORT, "MPI launcher SSH"))
    return out


def subtract(ranges: Iterable[PortRange], allowed: Iterable[Span]) -> list[tuple[Span, PortRange]]:
    """The parts of open ranges that no declared door covers, each with the range it came from."""
    allow = sorted(allowed)
    out: list[tuple[Span, PortRange]] = []
    for r in ranges:
        pieces = [(r.start, r.end)]
        for proto, lo, hi in allow:
            if proto != r.protocol:
                continue
            nxt: list[tuple[int, int]] = []
            for a, b in pieces:
                if hi < a or lo > b:
                    nxt.append((a, b))
                    continue
                if a < lo:
                    nxt.append((a, lo - 1))
                if hi < b:
                    nxt.append((hi + 1, b))
            pieces = nxt
        out.extend(((r.protocol, a, b), r) for a, b in pieces)
    return out


def beyond(spans: Iterable[Span], allowed: Iterable[Span]) -> bool:
    """Whether any port of `spans` is outside every declared door of `allowed` (what
    `subtract` would leave): asked first, of the open ports alone, so the rules that open
    them are looked for only when some port is left."""
    allow = [(proto, lo, hi) for proto, lo, hi in allowed]
    for proto, start, end in spans:
        pieces = [(start, end)]
        for p, lo, hi in allow:
            if p != proto:
                continue
            pieces = [piece for a, b in pieces
                      for piece in ((a, min(b, lo - 1)), (max(a, hi + 1), b)) if piece[0] <= piece[1]]
        if pieces:
            return True
    return False


def _opening_rule(r: PortRange) -> RuleRef | None:
    """The allow rule that opens a range: the one on an enforced side (an unenforced side allows
    by default and names no rule); the sender's when both sides have one."""
    v = r.verdict
    for side in (v.egress, v.ingress):
        if side.enforced and side.decided_by is not None:
            return side.decided_by
    return v.egress.decided_by or v.ingress.decided_by


DoorCheck = Callable[[Member, Member], list[Span]]


class _Index:
    """Members by (label key, value) as peer selectors see them, for anchored matchers."""

    def __init__(self, cm: ClusterView, members: list[Member]):
        self.by_label: dict[tuple[str, str], list[Member]] = defaultdict(list)
        # No label selector names a hostNetwork pod: Cilium never gives it its labels.
        self.members = [m for m in members if not m.host_network]
        for m in self.members:
            for kv in cm.pset.peer_labels(m.pod).items():
                self.by_label[kv].append(m)

    def candidates(self, anchor: tuple[str | None, tuple[tuple[str, frozenset[str]], ...]]) -> list[Member]:
        """Members that carry one of the values of the anchor's most selective key (a job's
        own selector names its workload label: a handful of pods, not its whole zone)."""
        scope, pairs = anchor

        def bucket(key: str, values: frozenset[str]) -> list[Member]:
            return [m for v in sorted(values) for m in self.by_label.get((key, v), ())]

        key, values = min(pairs, key=lambda p: (sum(len(self.by_label.get((p[0], v), ())) for v in p[1]), p[0]))
        return [m for m in bucket(key, values) if scope is None or m.pod.namespace == scope]


class BoundaryProof:
    def __init__(self, cm: ClusterView, cluster: Cluster, doors: DoorCheck | None = None):
        self.cm = cm
        self.cluster = cluster
        self.doors = doors or (lambda _s, _d: [])
        self.out: list[Opening] = []
        self.seen: set[tuple[Any, ...]] = set()
        self.members: list[Member] = []
        self.reps: dict[tuple[str, str], Member] = {}
        self.zones: list[str] = []
        self.index: _Index | None = None
        self.host_reps: dict[str, Member] = {}  # network zone -> one of its hostNetwork members
        self.managed = Managed(())
        self.witness_cache: dict[int, list[Member]] = {}
        # Host policies select nodes (hostNetwork pods among them); topogate does not model them.
        self.host_policies = tuple(sorted({str(n.policy) for n in cm.pset.not_modelled
                                           if n.construct == "nodeSelector"}))

    def run(self, jobs: list[tuple[JobMap, dict[str, PodClass]]], namespaces: Iterable[str],
            extra: Iterable[Member] = ()) -> list[Opening]:
        """`extra`: pods outside every network zone to pair with every job's pods (the targets
        of declared doors, so reaching more of them than declared is found)."""
        cm, cluster = self.cm, self.cluster
        nzs = sorted(n.name for n in cluster.network_zones)
        self.zones = nzs
        members: list[Member] = []
        for jm, classes in jobs:
            nz = network_zone_of(cluster, jm)
            if nz is None:
                continue
            for g in jm.groups:
                if not g.host_network:
                    members.append(Member(classes[g.name], nz, jm.object, g.name, jm.kind, jm.pos, jm.object))
            host = [g for g in jm.groups if g.host_network]
            if host:
                # Every hostNetwork group of a job looks the same to a policy (the node's identity).
                pos = self._host_network_pos(jm, host[0])
                members.append(Member(classes[host[0].name], nz, jm.object, ", ".join(g.name for g in host),
                                      jm.kind, pos, jm.object, host_network=True))
        for m in members:
            if m.host_network:
                self.host_reps.setdefault(m.nz, m)
        nss = sorted({*namespaces, *(m.pod.namespace for m in members)})
        reps = {(nz, ns): Member(zone_rep(cm, nz, ns), nz, f"a pod of network zone {nz} in namespace {ns}", "")
                for nz in nzs for ns in nss}
        unmanaged = Member(unmanaged_pod(cm), ANY_ZONE,
                           f"an unlabelled pod in a namespace no policy manages ({UNMANAGED_NS})", "")
        self.members = members
        # Every job's pods, those of no single network zone too (any zone then): a witness they
        # realise is them. Before any early return: the ingress proof asks it too.
        self.managed = Managed([*members, *(
            Member(classes[g.name], ANY_ZONE, jm.object, g.name, jm.kind, jm.pos, jm.object)
            for jm, classes in jobs if network_zone_of(cluster, jm) is None
            for g in jm.groups if not g.host_network)], pool_nodes(cluster))
        self.reps = reps
        index = _Index(cm, members)
        self.index = index
        if len(nzs) < 2:
            # No boundary to prove; a declared door's target must still not be open wider.
            for a in members:
                for o in extra:
                    self.pair(a, o)
                    self.pair(o, a)
            return self.out
        others = [unmanaged, *extra]
        wide_hits: dict[int, list[Member]] = {}
        managed, witness_cache = self.managed, self.witness_cache
        for a in members:
            for b in nzs:
                if b != a.nz:
                    self.pair(a, reps[(b, a.pod.namespace)])
                    self.pair(reps[(b, a.pod.namespace)], a)
            for o in others:
                self.pair(a, o)
                self.pair(o, a)
            if a.host_network:
                continue  # no policy applies to it: it has no allow rules of its own
            for direction in ("egress", "ingress"):
                for m in cm.pset.allow_matchers(a.pod, direction):
                    for c in self._named(a, m, index, reps, wide_hits) + self._hosts(a, m):
                        if direction == "egress":
                            self.pair(a, c)
                        else:
                            self.pair(c, a)
                # Every pod its allow rules describe, placed where it may run: a rule that names
                # namespace `tools` (whose pods run in any zone) opens the boundary for them.
                for w in witness_members(cm.pset, a.pod, direction, managed, witness_cache):
                    if w.external is not None and w.nz == ANY_ZONE:
                        continue  # outside the cluster (or a node of no pool): no network zone to cross into
                    if direction == "egress":
                        self.pair(a, w)
                    else:
                        self.pair(w, a)
        # Zones with no job among the manifests still face each other in every managed namespace.
        for ns in nss:
            for x in nzs:
                self.pair(reps[(x, ns)], unmanaged)
                self.pair(unmanaged, reps[(x, ns)])
                for y in nzs:
                    if x != y:
                        self.pair(reps[(x, ns)], reps[(y, ns)])
        return self.out

    @functools.cached_property
    def _jobs(self) -> dict[str, TrainingJob]:
        return {j.object_id: j for j in self.cm.jobs}

    def _host_network_pos(self, jm: JobMap, g: GroupMap) -> Position:
        """Where the group sets `hostNetwork: true` (its pod template when that cannot be found)."""
        job = self._jobs.get(jm.object)
        jg = job.group(g.name) if job is not None else None
        if jg is not None and jg.template_path:
            kind, ns, name = (jg.owner or jm.object).split("/", 2)
            o = self.cm.by_ref.get((kind, ns, name))
            if o is not None:
                return o.locate((*jg.template_path, "spec", "hostNetwork"))
        return g.pos if g.pos != NOWHERE else jm.pos

    def ingress_witnesses(self, pod: PodClass, job: str) -> list[Member]:
        """Everyone the pod's ingress allow rules describe (analysis.proofs.witness), but the
        job's own pods."""
        return [w for w in witness_members(self.cm.pset, pod, "ingress", self.managed, self.witness_cache)
                if not (w.job and w.job == job)]

    def named_sources(self, pod: PodClass, job: str) -> list[Member]:
        """Pods of other jobs that an ingress allow rule of `pod` names by label."""
        if self.index is None:
            return []
        out: dict[int, Member] = {}
        for m in self.cm.pset.allow_matchers(pod, "ingress"):
            anchor = matcher_anchor(m)
            if anchor is not None:
                out.update((id(c), c) for c in self.index.candidates(anchor) if c.job != job)
        return list(out.values())

    def _named(self, a: Member, matcher: Any, index: _Index, reps: dict[tuple[str, str], Member],
               wide_hits: dict[int, list[Member]]) -> list[Member]:
        """Pods of another network zone that this matcher selects."""
        anchor = matcher_anchor(matcher)
        if anchor is not None:
            return [c for c in index.candidates(anchor) if c.nz != a.nz]
        rep = next((reps[(nz, a.pod.namespace)] for nz in self.zones if nz != a.nz), None)
        if rep is not None and self.cm.pset.matches_peer(matcher, rep.pod):
            return []  # wide: the representatives stand for the zone
        got = wide_hits.get(id(matcher))
        if got is None:
            got = [c for c in index.members if self.cm.pset.matches_peer(matcher, c.pod)]
            wide_hits[id(matcher)] = got
        return [c for c in got if c.nz != a.nz]

    def _hosts(self, a: Member, matcher: Any) -> list[Member]:
        """hostNetwork pods of other network zones that an entity rule (`remote-node`, `cluster`,
        `all`, node selectors) of `a` matches: one per zone stands for all of them."""
        if not self.host_reps or not self.cm.pset.matches_peer(matcher, REMOTE_NODE):
            return []
        return [h for nz, h in sorted(self.host_reps.items()) if nz != a.nz]

    def pair(self, src: Member, dst: Member) -> None:
        if src.nz == dst.nz or (src.job and src.job == dst.job) or (src.host_network and dst.host_network):
            return
        # a pod that may run anywhere (a probe, a witness) is its own case: each may be opened by
        # another rule, and each finding names who gets through
        zkey = (src.nz, dst.nz, src.job or src.object, dst.job or dst.object, src.host_network,
                dst.host_network)
        if zkey in self.seen:
            return
        doors = self.doors(src, dst)
        if not dst.job and dst.external is None and is_dns(dst.pod):
            doors = [*doors, *DNS_SPANS]  # every zone's pods resolve names through kube-dns
        if not beyond(self.cm.pset.open_spans(src.peer, dst.peer), doors):
            return  # nothing open but declared doors (the same answer for every pair of one shape)
        rest = subtract(self.cm.pset.open_ranges(src.peer, dst.peer), doors)
        if not rest:
            return
        by_rule: dict[RuleRef | None, list[tuple[Span, PortRange]]] = {}
        for span, r in rest:
            by_rule.setdefault(_opening_rule(r), []).append((span, r))
        if not (src.job or dst.job):
            # Two probe pods that no policy decides about stand for no pod of the manifests:
            # only a rule that opens a door between them is news (and the same zones in another
            # namespace must still be asked).
            by_rule.pop(None, None)
        if by_rule:
            self.seen.add(zkey)
        for rule, parts in by_rule.items():
            self._record(src, dst, rule, parts)

    def _record(self, src: Member, dst: Member, rule: RuleRef | None,
                parts: list[tuple[Span, PortRange]]) -> None:
        spans = tuple(s for s, _ in parts)
        first = parts[0][1].verdict
        enforced = rule is not None
        job = src if src.job else dst
        host = src if src.host_network else dst if dst.host_network else None
        pos = self.cm.locate_rule(rule) if rule is not None else ((host or job).pos or self.cluster.pos)
        uses = tuple(f"{p}/TCP ({what})" for m in (src, dst) for p, what in kind_ports(m.kind)
                     if any(pr == "TCP" and lo <= p <= hi for pr, lo, hi in spans))
        # One finding per opening rule and ordered pair of network zones is enough to act on;
        # where nothing enforces either side, one per job (or per cluster) says what to include.
        key: tuple[str, ...] = ((str(rule), src.nz, dst.nz) if enforced
               else ("unenforced", src.job or dst.job))
        if host is not None:
            # Its own finding, whichever rule opens it: the fix is the hostNetwork pod's, not
            # the rule's. One per job and direction (the unlabelled pod adds nothing to act on).
            key = ("host-network", host.job, "src" if host is src else "dst", str(rule))
        if key in self.seen:
            return
        self.seen.add(key)
        self.out.append(Opening(
            self.cluster.name, src.object, src.group, src.nz, dst.object, dst.group, dst.nz,
            tuple(span_text(s) for s in spans), first.reason, str(rule) if rule else "",
            pos, enforced, tuple(dict.fromkeys(uses)), spans,
            "" if host is None else "src" if host is src else "dst",
            self.host_policies if host is not None else ()))

__all__ = ["BoundaryProof", "Opening", "SSH_PORT", "beyond", "network_zone_of", "subtract", "unmanaged_pod",
           "zone_rep"]
