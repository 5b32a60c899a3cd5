"""Compiled rules and units (one subject selector with its rules), shared by both compilers
and the evaluator.
"""

from __future__ import annotations

import bisect
import heapq
import ipaddress
import re
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from topogate.analysis.netpolicy.model import (
    _EGRESS,
    _INGRESS,
    _KIND_ORDER,
    External,
    Peer,
    PodClass,
    PolicyRef,
    RuleRef,
    SourceRef,
)
from topogate.analysis.netpolicy.peers import _CIDRMatcher, _Ctx, _EndpointMatcher, _FQDNMatcher, _Matcher
from topogate.analysis.netpolicy.ports import _PortSet, _PortSpec
from topogate.analysis.netpolicy.selectors import _Selector

# ---------------------------------------------------------------------------------------------
# Compiled rules and policies
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Rule:
    ref: RuleRef
    direction: str  # ingress | egress
    deny: bool
    peers: tuple[_Matcher, ...]  # union; empty = selects no peer
    ports: tuple[_PortSpec, ...] | None  # None = every port and protocol
    icmp: bool = False  # the rule carries icmps (so it only allows ICMP unless toPorts too)
    # ``ports`` indexed (derived, so left out of equality): one lookup per port, not a scan.
    port_set: _PortSet | None = field(init=False, default=None, compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.ports is not None:
            object.__setattr__(self, "port_set", _PortSet(self.ports))

    def matches(self, peer: Peer, dst: Peer, port: int, proto: str, ctx: _Ctx) -> bool:
        return self.admits(port, proto, dst) and self.names(peer, ctx)

    def admits(self, port: int, proto: str, dst: Peer) -> bool:
        """Do the rule's ports (L4) let this port through to ``dst``?"""
        if proto == "ICMP":
            return self.ports is None or self.icmp
        return self.port_set is None or self.port_set.matches(port, proto, dst)

    def names(self, peer: Peer, ctx: _Ctx) -> bool:
        """Does the rule's L3 part select the peer?"""
        for m in self.peers:  # a loop, not any(<generator>): asked per rule, pair and job
            if m.matches(peer, ctx):
                return True
        return False


def _meets_requirements(rule: _Rule, peer: Peer, ctx: _Ctx, requires: Sequence[_Matcher]) -> bool:
    """``fromRequires``/``toRequires``: Cilium adds the requirements of every policy selecting the
    pod to each ``fromEndpoints``/``toEndpoints`` selector of its rules (pkg/policy
    GetSourceEndpointSelectorsWithRequirements); entities, CIDRs and L4-only rules keep their
    peers. So the rule, which matched, still admits the peer through a non-endpoint matcher or
    through an endpoint matcher whose peer meets every requirement."""
    if not requires:
        return True
    return any(m.matches(peer, ctx) and (not isinstance(m, _EndpointMatcher)
                                         or all(q.matches(peer, ctx) for q in requires))
               for m in rule.peers)


class _FirstMatch:
    """The first rule of an ordered list (one side's rules that name one peer) whose ports admit
    a port: what the evaluator asks once per port class. A policy may hold thousands of rules
    (hostile input does), so past a few rules their ports are swept, per protocol, into
    elementary spans labelled with the first rule covering them, and a port costs a bisection
    instead of a scan over every rule."""

    _SCAN = 8  # up to this many rules a scan is cheaper than building the index

    def __init__(self, rules: Sequence[_Rule], dst: Peer) -> None:
        self.rules = tuple(rules)
        self._dst = dst
        self._index: dict[str, tuple[list[int], list[int | None]]] = {}

    def first(self, port: int, proto: str) -> _Rule | None:
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


def _only_by_fqdn(rule: _Rule, peer: Peer, ctx: _Ctx) -> bool:
    """Does this rule reach the peer only through a toFQDNs selector?"""
    if not isinstance(peer, External) or not peer.fqdn:
        return False
    hits = [m for m in rule.peers if m.matches(peer, ctx)]
    return bool(hits) and all(isinstance(m, _FQDNMatcher) for m in hits)


@dataclass
class _Unit:
    """One subject selector with its rules: a CNP has one per ``spec``/``specs`` entry."""

    policy: PolicyRef
    subject_ns: str | None  # pods must be in this namespace (CNP, NP); None = any (CCNP)
    subject: _Selector | None  # None: selects no pod (nodeSelector host policies)
    np_labels_only: bool  # NP podSelector matches plain pod labels only
    enforce: dict[str, bool]  # direction -> turns on default deny
    rules: dict[str, list[_Rule]] = field(default_factory=lambda: {_INGRESS: [], _EGRESS: []})
    deny_rules: dict[str, list[_Rule]] = field(default_factory=lambda: {_INGRESS: [], _EGRESS: []})
    has_rules: dict[str, bool] = field(default_factory=lambda: {_INGRESS: False, _EGRESS: False})
    # An egress rule sends DNS through Cilium's proxy (toPorts ... rules: {dns: ...}): without one,
    # Cilium never learns the addresses behind a toFQDNs name.
    dns_proxy: bool = False
    # The names those DNS rules let the proxy answer (matchName/matchPattern): a toFQDNs name
    # works only if its lookup is one of them, else Cilium never learns its addresses.
    dns_names: tuple[re.Pattern[str], ...] = ()
    # fromRequires/toRequires (allow and deny rules apart): they narrow the endpoint peers of every
    # rule of every policy that selects the same pod, in that direction.
    requires: dict[str, list[_Matcher]] = field(default_factory=lambda: {_INGRESS: [], _EGRESS: []})
    requires_deny: dict[str, list[_Matcher]] = field(default_factory=lambda: {_INGRESS: [], _EGRESS: []})

    def dns_allows(self, peer: Peer) -> bool:
        """Does this unit's DNS proxy rule let the lookup of ``peer``'s name through?"""
        if not self.dns_proxy:
            return False
        if not isinstance(peer, External) or not peer.fqdn:
            return True
        name = peer.fqdn.lower().rstrip(".")
        return any(p.fullmatch(name) for p in self.dns_names)

    def selects(self, pod: PodClass, ctx: _Ctx) -> bool:
        if self.subject is None:
            return False
        if self.subject_ns is not None and pod.namespace != self.subject_ns:
            return False
        labels = dict(pod.labels) if self.np_labels_only else ctx.pod_labels(pod)
        return self.subject.matches(labels)


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


def _sort_key(ref: PolicyRef) -> tuple[int, str, str, _Where]:
    return (_KIND_ORDER.get(ref.kind, 9), ref.namespace or "", ref.name, _Where(ref.source))


PathMap = Mapping[tuple[str | int, ...], SourceRef]

# How a construct the evaluator does not model bounds the verdict.
TOO_PERMISSIVE = "the verdict may be too permissive"
TOO_STRICT = "the verdict may be too strict"


@dataclass(frozen=True)
class NotModelled:
    """A construct the evaluator does not model, where it is written, and how that bounds the
    verdict: what `check` reports (TG120) and `trace` prints as a warning."""

    policy: PolicyRef
    path: tuple[str | int, ...]  # inside the policy object
    construct: str  # e.g. "toServices", "L7 rules (http)"
    message: str  # the whole sentence, bound included


class _CompilerBase:
    """What the Cilium and NetworkPolicy compilers share: the warnings about what is not modelled,
    source positions and CIDR peers."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.not_modelled: list[NotModelled] = []

    def _warn(self, where: PolicyRef | RuleRef, path: tuple[str | int, ...], construct: str,
              text: str) -> None:
        """Record a construct that is not modelled: a trace warning and a check finding."""
        self.warnings.append(f"{where}: {text}")
        policy = where.policy if isinstance(where, RuleRef) else where
        self.not_modelled.append(NotModelled(policy, path, construct, text))

    def _src(self, paths: PathMap | None, path: tuple[str | int, ...], fallback: SourceRef) -> SourceRef:
        if paths:
            # The closest enclosing path that has a position.
            for cut in range(len(path), 0, -1):
                got = paths.get(path[:cut])
                if got is not None:
                    return got
        return fallback

    def _cidr(self, text: str, excepts: list[str], rref: RuleRef) -> _CIDRMatcher | None:
        try:
            net = ipaddress.ip_network(text, strict=False)
            exc = tuple(ipaddress.ip_network(x, strict=False) for x in excepts)
        except ValueError:
            self.warnings.append(f"{rref}: invalid CIDR {text!r} ignored")
            return None
        return _CIDRMatcher(net, exc)
