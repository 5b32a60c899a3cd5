"""Peer matchers: each answers "is this peer selected?" for one kind of L3 selector of a rule
(endpoints, entities, CIDRs, FQDNs, nodes, NetworkPolicy peers). ``ctx`` is the policy set's
`IdentityLabels`: the labels a selector sees on a pod.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from topogate.analysis.netpolicy.labels import IdentityLabels
from topogate.analysis.netpolicy.model import External, Peer, PodClass
from topogate.analysis.netpolicy.selectors import CompiledSelector

__all__ = [
    "AnyPeer",
    "CIDRMatcher",
    "EndpointMatcher",
    "EntityMatcher",
    "FQDNMatcher",
    "NetworkPolicyPeerMatcher",
    "NodeMatcher",
    "PeerMatcher",
    "fqdn_regex",
    "matcher_anchor",
]

# The entities the ``cluster`` entity covers besides pods (docs security/policy/layer3
# "Entities based").
_CLUSTER_MEMBERS = frozenset(
    {"host", "remote-node", "init", "health", "unmanaged", "ingress", "kube-apiserver", "cluster"}
)
_WORLD_ENTITIES = frozenset({"world", "world-ipv4", "world-ipv6"})


class PeerMatcher:
    """One L3 selector of a rule; a rule admits a peer any of its matchers selects."""

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class AnyPeer(PeerMatcher):
    """Every peer: pods and everything outside (L4-only Cilium rules, NP rules without from/to)."""

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        return True


@dataclass(frozen=True)
class EndpointMatcher(PeerMatcher):
    sel: CompiledSelector
    scope_ns: str | None  # None: any namespace

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, PodClass):
            return False  # endpoint selectors only select Cilium endpoints (pods)
        if self.scope_ns is not None and peer.namespace != self.scope_ns:
            return False
        return self.sel.matches(ctx.pod_labels(peer))


@dataclass(frozen=True)
class EntityMatcher(PeerMatcher):
    entities: frozenset[str]

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        ents = self.entities
        if "all" in ents:
            return True
        if isinstance(peer, PodClass):
            return "cluster" in ents
        kind = _external_kind(peer)
        if kind == "world":
            if "world" in ents:
                return True
            version = _external_ip_version(peer)
            return (version == 4 and "world-ipv4" in ents) or (version == 6 and "world-ipv6" in ents)
        if kind in ents:
            return True
        return kind in _CLUSTER_MEMBERS and "cluster" in ents


def _external_kind(peer: External) -> str:
    """The entity an External stands for; CIDRs and FQDNs are taken to be outside the cluster."""
    if peer.entity:
        return "world" if peer.entity in _WORLD_ENTITIES else peer.entity
    return "world"


def _external_ip_version(peer: External) -> int | None:
    if peer.entity == "world-ipv4":
        return 4
    if peer.entity == "world-ipv6":
        return 6
    if peer.cidr:
        try:
            return ipaddress.ip_network(peer.cidr, strict=False).version
        except ValueError:
            return None
    return None


IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class CIDRMatcher(PeerMatcher):
    net: IPNet
    excepts: tuple[IPNet, ...]

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, External):
            return False  # CIDR rules never select pods (docs layer3 "CIDR based")
        if peer.cidr is None:
            # Only a catch-all CIDR is the same thing as the world entity (an FQDN resolves to
            # some address of the world, so a catch-all matches it too).
            return (
                _external_kind(peer) == "world"
                and self.net.prefixlen == 0
                and not self.excepts
                and (_external_ip_version(peer) in (None, self.net.version))
            )
        try:
            ext = ipaddress.ip_network(peer.cidr, strict=False)
        except ValueError:
            return False
        if ext.version != self.net.version or not ext.subnet_of(self.net):  # type: ignore[arg-type]
            return False
        return not any(ext.overlaps(x) for x in self.excepts)  # type: ignore[arg-type]


@dataclass(frozen=True)
class FQDNMatcher(PeerMatcher):
    patterns: tuple[re.Pattern[str], ...]

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, External) or not peer.fqdn:
            return False
        name = peer.fqdn.lower().rstrip(".")
        return any(p.fullmatch(name) for p in self.patterns)


def fqdn_regex(match_name: str | None, match_pattern: str | None) -> re.Pattern[str]:
    if match_name is not None:
        return re.compile(re.escape(match_name.lower().rstrip(".")))
    pat = (match_pattern or "").lower().rstrip(".")
    if pat == "*":
        return re.compile(r".*")  # a lone "*" matches every name
    prefix = ""
    if pat.startswith("**."):
        prefix = r"(?:[-a-z0-9_]+\.)+"
        pat = pat[3:]
    body = "".join(r"[-a-z0-9_]*" if ch == "*" else re.escape(ch) for ch in pat)
    return re.compile(prefix + body)


@dataclass(frozen=True)
class NodeMatcher(PeerMatcher):
    """fromNodes/toNodes (and a ClusterNetworkPolicy ``nodes`` peer): the nodes whose labels the
    selector matches (Cilium's node selector labels, --enable-node-selector-labels), seen as the
    host and remote-node entities. A node of unknown labels may be any node: it matches."""

    sel: CompiledSelector | None = None  # None: every node

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, External) or peer.entity not in ("host", "remote-node"):
            return False
        return self.sel is None or not peer.labels or self.sel.matches(dict(peer.labels))


@dataclass(frozen=True)
class NetworkPolicyPeerMatcher(PeerMatcher):
    """A NetworkPolicy peer with podSelector and/or namespaceSelector (ANDed when both)."""

    pod_sel: CompiledSelector | None
    ns_sel: CompiledSelector | None
    policy_ns: str

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, PodClass):
            return False
        if self.ns_sel is None:
            if peer.namespace != self.policy_ns:
                return False
        elif not self.ns_sel.matches(ctx.ns_labels(peer)):
            return False
        return self.pod_sel is None or self.pod_sel.matches(dict(peer.labels))


def matcher_anchor(matcher: PeerMatcher) -> tuple[str | None, tuple[tuple[str, frozenset[str]], ...]] | None:
    """(namespace scope, (label key, values) pairs) that a pod must all carry for an endpoint
    matcher to select it, or None when the matcher has no such anchor (entities, `{}`, only
    NotIn/Exists): anchored matchers are answered from a label index instead of a scan over
    every pod, through their most selective pair."""
    if isinstance(matcher, EndpointMatcher):
        sel, scope = matcher.sel, matcher.scope_ns
    elif isinstance(matcher, NetworkPolicyPeerMatcher) and matcher.pod_sel is not None and matcher.ns_sel is None:
        sel, scope = matcher.pod_sel, matcher.policy_ns
    else:
        return None
    pairs = tuple((r.key, r.values) for r in sel.reqs if r.op == "In" and r.pod_source)
    return (scope, pairs) if pairs else None
