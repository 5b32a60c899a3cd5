"""The PolicySet of one cluster: what other packages ask of network policies. A flow's verdict
(both sides), port classes for a trace, and the questions of the boundary proof.

It holds its parts, one per concern: the labels pods carry (`labels.IdentityLabels`), which
policies select a pod (`selection.SelectionIndex`) and the verdict of one side
(`decide.SideVerdicts`); the objects are compiled by `objects.compile_objects`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topogate.analysis.netpolicy.agent import DEFAULT_AGENT, Agent
from topogate.analysis.netpolicy.compiler import NotModelled, Refused, Unselecting
from topogate.analysis.netpolicy.decide import SideVerdicts
from topogate.analysis.netpolicy.labels import IdentityLabels
from topogate.analysis.netpolicy.model import (
    ACTION_ACCEPT,
    DIRECTION_EGRESS,
    DIRECTION_INGRESS,
    Peer,
    PodClass,
    PolicyRef,
    SideVerdict,
    Verdict,
)
from topogate.analysis.netpolicy.objects import compile_objects
from topogate.analysis.netpolicy.peers import CIDRMatcher, PeerMatcher
from topogate.analysis.netpolicy.ports import L4_PROTOCOLS, MAX_PORT, PortRange
from topogate.analysis.netpolicy.rules import PolicyRule, PolicyUnit
from topogate.analysis.netpolicy.selection import SelectionIndex

__all__ = ["PolicySet"]


class PolicySet:
    """All network policies of one cluster, indexed for per-pair evaluation."""

    def __init__(
        self,
        units: Sequence[PolicyUnit] = (),
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        *,
        warnings: Sequence[str] = (),
        cluster_name: str = "default",
        allow_localhost: bool | None = None,
        agent: Agent = DEFAULT_AGENT,
    ) -> None:
        self.cluster_name = cluster_name  # the inventory's name of the cluster (the agent's is agent.cluster_name)
        self.agent = agent
        self.warnings: list[str] = list(warnings)
        self.not_modelled: list[NotModelled] = []  # the warnings, structured (from_objects)
        self.refused: list[Refused] = []  # policies the agent does not import (from_objects)
        self.unselecting: list[Unselecting] = []  # selectors on labels the identity filter drops
        prefixes = _named_prefixes(units)
        if agent.policy_cidr_match_mode and prefixes:
            modes = " ".join(agent.policy_cidr_match_mode)
            self.warnings.append(
                f"policy-cidr-match-mode {modes} (cilium.policyCIDRMatchMode): CIDR rules also select the "
                f"{' and '.join(m for m in agent.policy_cidr_match_mode)} whose addresses they hold; topogate "
                "knows no such address and judges CIDR rules on the world only, so a verdict on those peers "
                "may be too strict (an allow) or too permissive (a deny)")
        self.labels = IdentityLabels(namespace_labels, agent, prefixes)
        self.selection = SelectionIndex(units, self.labels)
        self._sides = SideVerdicts(self.selection, self.labels,
                                   agent.always_allow_localhost if allow_localhost is None else allow_localhost,
                                   agent.enforcement)
        # Bound once: evaluate and the proofs call these for every flow, so holding the parts
        # apart costs no attribute lookup on that path.
        self._units_for = self.selection.units_for
        self._policies = self.selection.policies
        self._side = self._sides.side
        self._verdict_cache: dict[tuple[Peer, Peer, int, str], Verdict] = {}
        self._classes_cache: dict[tuple[object, ...], tuple[PortRange, ...]] = {}
        # The boundary proof's questions, by the units selecting the pod (SelectionIndex.units_for
        # interns them): its groups and the witnesses of its rules are asked once per set of units,
        # not once per pod class a job's own labels make.
        self._closed_cache: dict[tuple[int, Peer, str], bool] = {}
        self._matchers_cache: dict[tuple[int, str], tuple[Any, ...]] = {}
        self._spans_cache: dict[tuple[object, ...], tuple[tuple[str, int, int], ...]] = {}

    def forget(self) -> None:
        """Drop the remembered verdicts, once a cluster's proofs are done: they are most of its
        analysis' memory, and the policy set outlives the analysis (the rules and reports ask it
        again, rarely). Any later question is answered afresh, the same way."""
        self._verdict_cache.clear()
        self._classes_cache.clear()
        self._closed_cache.clear()
        self._matchers_cache.clear()
        self._spans_cache.clear()
        self._sides.forget()

    @property
    def allow_localhost(self) -> bool:
        return self._sides.allow_localhost

    @classmethod
    def from_objects(
        cls,
        objs: Iterable[tuple[Any, ...]],
        *,
        cluster_name: str = "default",
        allow_localhost: bool | None = None,
        agent: Agent = DEFAULT_AGENT,
    ) -> PolicySet:
        """Build from ``(object, SourceRef)`` pairs, or ``(object, SourceRef, paths)`` triples where
        ``paths`` maps a path inside the object (e.g. ``("spec", "ingress", 0)``) to its SourceRef.

        Keeps CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy (cilium.io/v2) and
        networking.k8s.io/v1 NetworkPolicy; learns namespace labels from v1 Namespace objects;
        ignores everything else.  ``List`` objects are unpacked."""
        compiled = compile_objects(objs, agent)
        pset = cls(
            compiled.units,
            compiled.namespace_labels,
            warnings=compiled.warnings,
            cluster_name=cluster_name,
            allow_localhost=allow_localhost,
            agent=agent,
        )
        pset.not_modelled = list(compiled.not_modelled)
        pset.refused = list(compiled.refused)
        pset.unselecting = list(compiled.unselecting)
        return pset

    # -- what selects a pod, what it carries ---------------------------------------------------
    def namespace_labels(self, ns: str) -> tuple[tuple[str, str], ...]:
        return self.labels.namespace_labels(ns)

    def peer_labels(self, pod: PodClass) -> Mapping[str, str]:
        """The labels a peer selector sees on the pod (namespace and cluster labels included)."""
        return self.labels.pod_labels(pod)

    def policies_selecting(self, pod: PodClass) -> list[PolicyRef]:
        return self.selection.policies_selecting(pod)

    # -- verdicts ------------------------------------------------------------------------------
    def evaluate(self, src: Peer, dst: Peer, port: int, protocol: str) -> Verdict:
        proto = protocol.upper()
        key = (src, dst, int(port), proto)
        got = self._verdict_cache.get(key)
        if got is not None:
            return got
        if isinstance(src, PodClass):
            egress = self._side(src, dst, dst, int(port), proto, DIRECTION_EGRESS)
        else:
            egress = SideVerdict(
                False, (), True, None, f"sender {src} is not a Cilium endpoint; no egress policy applies"
            )
        if isinstance(dst, PodClass):
            ingress = self._side(dst, src, dst, int(port), proto, DIRECTION_INGRESS)
        else:
            ingress = SideVerdict(
                False, (), True, None, f"receiver {dst} is not a Cilium endpoint; no ingress policy applies"
            )
        verdict = Verdict(egress.allowed and ingress.allowed, egress, ingress)
        self._verdict_cache[key] = verdict
        return verdict

    def allows(self, src: Peer, dst: Peer, port: int, protocol: str) -> bool:
        """Whether the flow passes, deciding the receiver's side only when the sender's allows
        it: for bulk yes/no questions (the boundary probe) where the reasons are not needed."""
        proto = protocol.upper()
        if isinstance(src, PodClass) and not self._side(src, dst, dst, int(port), proto, DIRECTION_EGRESS).allowed:
            return False
        return self.evaluate(src, dst, port, protocol).allowed

    def port_classes(
        self, src: Peer, dst: Peer, protocols: Sequence[str] = ("TCP", "UDP")
    ) -> list[PortRange]:
        """Split 1-65535 of each protocol into maximal ranges with one verdict each, so a trace
        without ``--port`` can answer per class.  Only ports named by a rule that applies to this
        pair can change the verdict, so evaluating one port per elementary range is exact."""
        # The ranges are maximal runs of one verdict, so they are a function of the verdict on
        # each port: pairs whose sides have one signature (SideVerdicts.signature) and whose
        # destination names the same ports share them. The proofs ask thousands of pairs that
        # differ only in pods no rule tells apart (a job's Master and Worker and one witness).
        key = (self._sig(src, dst, dst, DIRECTION_EGRESS), self._sig(dst, src, dst, DIRECTION_INGRESS),
               dst.ports if isinstance(dst, PodClass) else dst, tuple(protocols))
        got = self._classes_cache.get(key)
        if got is None:
            got = self._port_classes(src, dst, protocols)
            self._classes_cache[key] = got
        return list(got)

    def _sig(self, pod: Peer, peer: Peer, dst: Peer, direction: str) -> object:
        if isinstance(pod, PodClass):
            return self._sides.signature(pod, peer, dst, direction)
        return pod  # not an endpoint: its side says so in its own words

    def _port_classes(self, src: Peer, dst: Peer, protocols: Sequence[str]) -> tuple[PortRange, ...]:
        # Only rules whose peers match this pair can change the verdict from one port to the
        # next; the others (DNS to kube-dns, say) would only split ranges needlessly.
        ctx = self.labels
        rules: list[PolicyRule] = []
        if isinstance(src, PodClass):
            for u in self._units_for(src):
                rules += [r for r in u.deny_rules[DIRECTION_EGRESS] + u.rules[DIRECTION_EGRESS]
                          + u.tiered[DIRECTION_EGRESS] if r.names(dst, ctx)]
        if isinstance(dst, PodClass):
            for u in self._units_for(dst):
                rules += [r for r in u.deny_rules[DIRECTION_INGRESS] + u.rules[DIRECTION_INGRESS]
                          + u.tiered[DIRECTION_INGRESS] if r.names(src, ctx)]
        out: list[PortRange] = []
        for proto in (p.upper() for p in protocols):
            cuts = {1, MAX_PORT + 1}
            for r in rules:
                for lo, hi in r.port_set.edges(proto, dst) if r.port_set is not None else ():
                    cuts.add(max(1, lo))
                    cuts.add(min(MAX_PORT, hi) + 1)
            edges = sorted(c for c in cuts if 1 <= c <= MAX_PORT + 1)
            for lo, nxt in itertools.pairwise(edges):
                v = self.evaluate(src, dst, lo, proto)
                if out and out[-1].protocol == proto and out[-1].verdict == v and out[-1].end == lo - 1:
                    out[-1] = PortRange(proto, out[-1].start, nxt - 1, v)
                else:
                    out.append(PortRange(proto, lo, nxt - 1, v))
        return tuple(out)

    # -- the boundary proof --------------------------------------------------------------------
    def closed(self, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> bool:
        """True when no port of any protocol can pass this side: default deny is on and no allow
        rule (nor Accept rule of a ClusterNetworkPolicy) of a selecting policy names the peer. A
        cheap answer before cutting port classes."""
        units = self._units_for(pod)
        if not units:
            # No policy selects the pod: only enable-policy=always closes a side without a rule
            # (`_closed`), whatever the peer; asked of every job's pods by the probes, so not
            # remembered per peer.
            return self.agent.enforcement == "always"
        key = (id(units), peer, direction)  # all it reads of the pod is the units selecting it
        got = self._closed_cache.get(key)
        if got is None:
            got = self._closed(pod, units, peer, direction)
            self._closed_cache[key] = got
        return got

    def _closed(self, pod: PodClass, units: Sequence[PolicyUnit], peer: Peer, direction: str) -> bool:
        _, enforced_by = self._policies(pod, direction)
        if self.agent.enforcement == "never" or (not enforced_by and self.agent.enforcement != "always"):
            return False
        ctx = self.labels
        for u in units:
            for r in u.rules[direction]:
                if r.names(peer, ctx):
                    return False
            for r in u.tiered[direction]:
                if r.action == ACTION_ACCEPT and r.names(peer, ctx):
                    return False
        return True

    def open_ranges(self, src: Peer, dst: Peer,
                    protocols: Sequence[str] = L4_PROTOCOLS) -> list[PortRange]:
        """Every maximal port range, per L4 protocol, on which src reaches dst (all 65,535 ports
        of TCP, UDP and SCTP, cut at every port a rule for this pair names)."""
        if isinstance(src, PodClass) and self.closed(src, dst, dst, DIRECTION_EGRESS):
            return []
        if isinstance(dst, PodClass) and self.closed(dst, src, dst, DIRECTION_INGRESS):
            return []
        return [r for r in self.port_classes(src, dst, protocols) if r.verdict.allowed]

    def open_spans(self, src: Peer, dst: Peer,
                   protocols: Sequence[str] = L4_PROTOCOLS) -> tuple[tuple[str, int, int], ...]:
        """The ports on which src reaches dst, as (protocol, first, last) runs: `open_ranges`
        joined where they touch, without which rule opens them. For the proofs, which need the
        rule only where a port is open beyond what is declared: the pairs whose two sides have
        one shape (`SideVerdicts.shape`: a job's own rule to kube-dns and every other job's copy
        of it) share one answer, worked out by `open_ranges` for the first of them."""
        if isinstance(src, PodClass) and self.closed(src, dst, dst, DIRECTION_EGRESS):
            return ()
        if isinstance(dst, PodClass) and self.closed(dst, src, dst, DIRECTION_INGRESS):
            return ()
        key = (self._shape(src, dst, dst, DIRECTION_EGRESS), self._shape(dst, src, dst, DIRECTION_INGRESS),
               dst.ports if isinstance(dst, PodClass) else None, tuple(protocols))
        got = self._spans_cache.get(key)
        if got is None:
            runs: list[tuple[str, int, int]] = []
            for r in self.open_ranges(src, dst, protocols):
                if runs and runs[-1][0] == r.protocol and runs[-1][2] + 1 >= r.start:
                    runs[-1] = (r.protocol, runs[-1][1], max(runs[-1][2], r.end))
                else:
                    runs.append((r.protocol, r.start, r.end))
            got = self._spans_cache[key] = tuple(runs)
        return got

    def _shape(self, pod: Peer, peer: Peer, dst: Peer, direction: str) -> object:
        if isinstance(pod, PodClass):
            return self._sides.shape(pod, peer, dst, direction)
        return None  # not an endpoint: no policy of its own, every port allowed on its side

    def allow_matchers(self, pod: PodClass, direction: str) -> tuple[Any, ...]:
        """The peer matchers of every allow rule that applies to the pod in `direction`: where a
        policy may open a door, so the proof knows which other pods to ask about. Typed Any: the
        proof holds them only to hand back to `matches_peer` and `matcher_anchor`. Pods selected
        by the same units get the same tuple (one object)."""
        units = self._units_for(pod)
        key = (id(units), direction)
        got = self._matchers_cache.get(key)
        if got is None:
            got = tuple(m for u in units
                        for r in (*u.rules[direction], *(t for t in u.tiered[direction] if t.action == ACTION_ACCEPT))
                        for m in r.peers)
            self._matchers_cache[key] = got
        return got

    def matches_peer(self, matcher: PeerMatcher, peer: Peer) -> bool:
        return bool(matcher.matches(peer, self.labels))


def _named_prefixes(units: Sequence[PolicyUnit]) -> list[Any]:
    """Every prefix a rule names (its CIDRs and their excepts): the prefixes the agent's ipcache
    gives identities of their own (pkg/policy GetCIDRPrefixes)."""
    out: set[Any] = set()
    for u in units:
        for d in (DIRECTION_INGRESS, DIRECTION_EGRESS):
            for r in (*u.rules[d], *u.deny_rules[d], *u.tiered[d]):
                for m in r.peers:
                    if isinstance(m, CIDRMatcher):
                        out.add(m.net)
                        out.update(m.excepts)
    return sorted(out, key=str)
