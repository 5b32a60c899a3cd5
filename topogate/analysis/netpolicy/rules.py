"""Compiled rules and units (one subject selector with its rules), what the evaluator asks:
which rules name a peer, which admit a port, in which order policies are listed.
"""

from __future__ import annotations

import bisect
import heapq
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

from topogate.analysis.netpolicy.labels import IdentityLabels
from topogate.analysis.netpolicy.model import (
    ACTION_ACCEPT,
    ACTION_DENY,
    DIRECTION_EGRESS,
    DIRECTION_INGRESS,
    KIND_CCNP,
    KIND_CNP,
    KIND_KCNP,
    KIND_NP,
    TIER_NORMAL,
    External,
    Peer,
    PodClass,
    PolicyRef,
    RuleRef,
    SourceRef,
)
from topogate.analysis.netpolicy.peers import EndpointMatcher, FQDNMatcher, PeerMatcher
from topogate.analysis.netpolicy.ports import PolicyPort, PortSet
from topogate.analysis.netpolicy.selectors import CompiledSelector

__all__ = ["FirstMatch", "PolicyRule", "PolicyUnit", "meets_requirements", "only_by_fqdn", "policy_sort_key",
           "tiered_order"]

# Policies are listed clusterwide first, then namespaced, then NetworkPolicy: the first matching
# rule in that order is the one a verdict reports. ClusterNetworkPolicy rules are ordered by their
# own precedence instead (tiered_order).
_KIND_ORDER = {KIND_CCNP: 0, KIND_CNP: 1, KIND_NP: 2, KIND_KCNP: 3}
# Rules of one tier at the same precedence: Deny before Accept before Pass (Cilium resolves a tie
# of priorities in that order).
_ACTION_RANK = {ACTION_DENY: 0, ACTION_ACCEPT: 1}
_T = TypeVar("_T")

# ---------------------------------------------------------------------------------------------
# Compiled rules and policies
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyRule:
    """One rule of a policy (an entry of ingress, ingressDeny, egress, egressDeny), compiled: the
    peers it names and the ports it admits."""

    ref: RuleRef
    direction: str  # ingress | egress
    deny: bool
    peers: tuple[PeerMatcher, ...]  # union; empty = selects no peer
    ports: tuple[PolicyPort, ...] | None  # None = every port and protocol
    icmp: bool = False  # the rule carries icmps (so it only allows ICMP unless toPorts too)
    # A ClusterNetworkPolicy rule: its action (Accept, Deny, Pass) and its precedence in its tier,
    # the policy's priority plus the rule's index / 100 (Cilium pkg/k8s ParseClusterNetworkPolicy):
    # lower first. None for every other kind (deny and allow decide as Cilium's Normal tier does).
    action: str | None = None
    precedence: float = 0.0
    # ``ports`` indexed (derived, so left out of equality): one lookup per port, not a scan.
    port_set: PortSet | None = field(init=False, default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.ports is not None:
            object.__setattr__(self, "port_set", PortSet(self.ports))

    def admits(self, port: int, proto: str, dst: Peer) -> bool:
        """Do the rule's ports (L4) let this port through to ``dst``?"""
        if proto == "ICMP":
            return self.ports is None or self.icmp
        return self.port_set is None or self.port_set.matches(port, proto, dst)

    def names(self, peer: Peer, ctx: IdentityLabels) -> bool:
        """Does the rule's L3 part select the peer?"""
        for m in self.peers:  # a loop, not any(<generator>): asked per rule, pair and job
            if m.matches(peer, ctx):
                return True
        return False


def meets_requirements(rule: PolicyRule, peer: Peer, ctx: IdentityLabels, requires: Sequence[PeerMatcher]) -> bool:
    """``fromRequires``/``toRequires``: Cilium adds the requirements of every policy selecting the
    pod to each ``fromEndpoints``/``toEndpoints`` selector of its rules (pkg/policy
    GetSourceEndpointSelectorsWithRequirements); entities, CIDRs and L4-only rules keep their
    peers. So the rule, which matched, still admits the peer through a non-endpoint matcher or
    through an endpoint matcher whose peer meets every requirement."""
    if not requires:
        return True
    return any(m.matches(peer, ctx) and (not isinstance(m, EndpointMatcher)
                                         or all(q.matches(peer, ctx) for q in requires))
               for m in rule.peers)


class FirstMatch:
    """The first rule of an ordered list (one side's rules that name one peer) whose ports admit
    a port: what the evaluator asks once per port class. A policy may hold thousands of rules
    (hostile input does), so past a few rules their ports are swept, per protocol, into
    elementary spans labelled with the first rule covering them, and a port costs a bisection
    instead of a scan over every rule."""

    _SCAN = 8  # up to this many rules a scan is cheaper than building the index

    def __init__(self, rules: Sequence[PolicyRule], dst: Peer) -> None:
        self.rules = tuple(rules)
        self._dst = dst
        self._index: dict[str, tuple[list[int], list[int | None]]] = {}

    def first(self, port: int, proto: str) -> PolicyRule | None:
        if len(self.rules) <= self._SCAN or proto == "ICMP":
            return next((r for r in self.rules if r.admits(port, proto, self._dst)), None)
        got = self._index.get(proto)
        if got is None:
            got = self._index[proto] = self._sweep(proto)
        bounds, firsts = got
        k = bisect.bisect_right(bounds, port) - 1
        if not 0 <= k < len(firsts):  # beyond any port a packet can carry: answer as the scan does
            return next((r for r in self.rules if r.admits(port, proto, self._dst)), None)
        i = firsts[k]
        return None if i is None else self.rules[i]

    def _sweep(self, proto: str) -> tuple[list[int], list[int | None]]:
        """(boundaries, first rule index of each span between two boundaries, or None)."""
        anywhere = next((i for i, r in enumerate(self.rules) if r.port_set is None), None)
        spans = sorted((lo, hi, i) for i, r in enumerate(self.rules) if r.port_set is not None
                       for lo, hi in r.port_set.edges(proto, self._dst))
        bounds = sorted({b for lo, hi, _ in spans for b in (lo, hi + 1)} | {-sys.maxsize, sys.maxsize})
        firsts: list[int | None] = []
        live: list[tuple[int, int]] = []  # heap of (rule index, last port) of spans begun
        j = 0
        for b in bounds[:-1]:
            while j < len(spans) and spans[j][0] <= b:
                heapq.heappush(live, (spans[j][2], spans[j][1]))
                j += 1
            while live and live[0][1] < b:
                heapq.heappop(live)
            best = live[0][0] if live else None
            if anywhere is not None and (best is None or anywhere < best):
                best = anywhere
            firsts.append(best)
        return bounds, firsts


def tiered_order(rule: PolicyRule) -> tuple[float, int, tuple[int, str, str, _Where]]:
    """The order the rules of one tier are asked in: precedence, then the action, then the policy."""
    return (rule.precedence, _ACTION_RANK.get(rule.action or "", 2), policy_sort_key(rule.ref.policy))


def only_by_fqdn(rule: PolicyRule, peer: Peer, ctx: IdentityLabels) -> bool:
    """Does this rule reach the peer only through a toFQDNs selector?"""
    if not isinstance(peer, External) or not peer.fqdn:
        return False
    hits = [m for m in rule.peers if m.matches(peer, ctx)]
    return bool(hits) and all(isinstance(m, FQDNMatcher) for m in hits)


def _per_direction(make: Callable[[], _T]) -> dict[str, _T]:
    """One fresh value per direction (``list`` gives each its own empty list)."""
    return {DIRECTION_INGRESS: make(), DIRECTION_EGRESS: make()}


@dataclass
class PolicyUnit:
    """One subject selector with its rules: a CNP has one per ``spec``/``specs`` entry."""

    policy: PolicyRef
    subject_ns: str | None  # pods must be in this namespace (CNP, NP); None = any (CCNP)
    subject: CompiledSelector | None  # None: selects no pod (nodeSelector host policies)
    np_labels_only: bool  # NP podSelector matches plain pod labels only
    enforce: dict[str, bool]  # direction -> turns on default deny
    rules: dict[str, list[PolicyRule]] = field(default_factory=lambda: _per_direction(list))
    # The tier (model.TIER_*): a ClusterNetworkPolicy's rules are in Admin or Baseline and held in
    # ``tiered``; every other kind is Normal, its rules in ``rules`` and ``deny_rules``.
    tier: str = TIER_NORMAL
    tiered: dict[str, list[PolicyRule]] = field(default_factory=lambda: _per_direction(list))
    deny_rules: dict[str, list[PolicyRule]] = field(default_factory=lambda: _per_direction(list))
    has_rules: dict[str, bool] = field(default_factory=lambda: _per_direction(bool))
    # An egress rule sends DNS through Cilium's proxy (toPorts ... rules: {dns: ...}): without one,
    # Cilium never learns the addresses behind a toFQDNs name.
    dns_proxy: bool = False
    # The names those DNS rules let the proxy answer (matchName/matchPattern): a toFQDNs name
    # works only if its lookup is one of them, else Cilium never learns its addresses.
    dns_names: tuple[re.Pattern[str], ...] = ()
    # fromRequires/toRequires (allow and deny rules apart): they narrow the endpoint peers of every
    # rule of every policy that selects the same pod, in that direction.
    requires: dict[str, list[PeerMatcher]] = field(default_factory=lambda: _per_direction(list))
    requires_deny: dict[str, list[PeerMatcher]] = field(default_factory=lambda: _per_direction(list))

    def dns_allows(self, peer: Peer) -> bool:
        """Does this unit's DNS proxy rule let the lookup of ``peer``'s name through?"""
        if not self.dns_proxy:
            return False
        if not isinstance(peer, External) or not peer.fqdn:
            return True
        name = peer.fqdn.lower().rstrip(".")
        return any(p.fullmatch(name) for p in self.dns_names)

    def selects(self, pod: PodClass, ctx: IdentityLabels) -> bool:
        if self.subject is None:
            return False
        if self.subject_ns is not None and pod.namespace != self.subject_ns:
            return False
        # Every kind's subject is matched against the pod's identity (an NP podSelector too: the
        # agent prefixes its keys with k8s:), so a label the identity filter drops selects nothing.
        return self.subject.matches(ctx.pod_labels(pod))


class _Where:
    """A policy's file and line as the last part of its sort key. Callers may hand in sources
    that find their position only when read (tracing a built object back to its source file
    parses sources); tuples compare this part only when kind, namespace and name tie."""

    __slots__ = ("src",)

    def __init__(self, src: SourceRef) -> None:
        self.src = src

    def _key(self) -> tuple[str, int]:
        return (self.src.file, self.src.line)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Where) and self._key() == other._key()

    def __lt__(self, other: _Where) -> bool:
        return self._key() < other._key()

    __hash__ = None  # type: ignore[assignment]


def policy_sort_key(ref: PolicyRef) -> tuple[int, str, str, _Where]:
    return (_KIND_ORDER.get(ref.kind, 9), ref.namespace or "", ref.name, _Where(ref.source))
