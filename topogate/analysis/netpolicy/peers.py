"""Peer matchers: each answers "is this peer selected?" for one kind of L3 selector of a rule
(endpoints, entities, CIDRs, FQDNs, nodes, NetworkPolicy peers). ``ctx`` is the policy set's
`IdentityLabels`: the labels a selector sees on a pod.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass, field

from topogate.analysis.netpolicy.labels import ExternalIdentity, IdentityLabels, world_label
from topogate.analysis.netpolicy.model import External, Peer, PodClass
from topogate.analysis.netpolicy.selectors import CompiledSelector, IdentityView, Requirement

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

# The reserved identities the ``cluster`` (and ``cluster-mesh``) entity selects besides pods
# (pkg/policy/api/entity.go clusterSelectors; pods through the cluster label).
_CLUSTER_MEMBERS = frozenset({"host", "remote-node", "init", "health", "unmanaged", "ingress", "kube-apiserver"})
_WORLD_ENTITIES = frozenset({"world", "world-ipv4", "world-ipv6"})
_AGGREGATES = ("aggregate-cluster", "aggregate-world", "aggregate-remote-node")
_AGGREGATE_VIEWS = {a: IdentityView({"reserved": {a: ""}}) for a in _AGGREGATES}


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
    """A label selector over identities (fromEndpoints/toEndpoints, a ClusterNetworkPolicy pods or
    namespaces peer). The agent scopes a CNP's selector to the policy's namespace and a CCNP's to
    pods of some namespace, and both to the local cluster, unless the selector names those keys
    or any ``reserved:`` key (then it is matched against every identity as written). A pod of the
    scope carries the namespace and cluster labels the scoping adds, so pods are asked only the
    selector; anything else (an entity, an address, a node) is asked the added requirements too."""

    sel: CompiledSelector
    scope_ns: str | None  # None: any namespace
    implicit: tuple[Requirement, ...] = ()  # what the agent adds to the selector
    # The aggregate identities the whole selector matches (they carry only their own reserved
    # label): through them it selects every identity of that aggregate, whatever its labels
    # (pkg/policy aggregate.go). Only a selector left unscoped and made of NotIn/DoesNotExist
    # does, e.g. a ClusterNetworkPolicy `namespaces` peer of NotIn alone.
    aggregates: frozenset[str] = field(init=False, default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        hits = frozenset(a for a in _AGGREGATES
                         if all(r.matches_view(_AGGREGATE_VIEWS[a]) for r in (*self.implicit, *self.sel.reqs)))
        object.__setattr__(self, "aggregates", hits)

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if isinstance(peer, PodClass):
            if "aggregate-cluster" in self.aggregates:
                return True
            if self.scope_ns is not None and peer.namespace != self.scope_ns:
                return False
            return self.sel.matches(ctx.pod_labels(peer))
        ident = ctx.external(peer)
        if ident.in_cluster:
            return False
        if ident.aggregate is not None and ident.aggregate in self.aggregates:
            return True
        view = ident.view
        for r in self.implicit:
            if not r.matches_view(view):
                return False
        return self.sel.matches_view(view)


@dataclass(frozen=True)
class EntityMatcher(PeerMatcher):
    """fromEntities/toEntities: each entity is the reserved labels it selects (pkg/policy/api
    entity.go); ``cluster`` and ``cluster-mesh`` also select every pod (and a labelled node) by the
    cluster label, ``all`` everything, ``none`` nothing."""

    entities: frozenset[str]

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        ents = self.entities
        if "all" in ents:
            return True
        cluster = "cluster" in ents or "cluster-mesh" in ents
        if isinstance(peer, PodClass):
            return cluster
        ident = ctx.external(peer)
        reserved = ident.reserved
        if cluster and (ident.in_cluster or reserved & _CLUSTER_MEMBERS or ident.k8s):
            return True
        if "world" in ents and reserved & _WORLD_ENTITIES:
            return True
        for e in ents:
            if e in reserved:
                return True
        return False


IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class CIDRMatcher(PeerMatcher):
    """A CIDR (with excepts): the identities of the world, outside the cluster, whose address
    label lies in the block and in none of the excepts; ``0.0.0.0/0`` is the world label itself,
    so it selects world and every address no named prefix narrower than an except holds
    (pkg/policy/types CIDRSelector, pkg/labels GetCIDRLabels)."""

    net: IPNet
    excepts: tuple[IPNet, ...]

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, External):
            return False  # CIDR rules never select pods (docs layer3 "CIDR based")
        ident = ctx.external(peer)
        if not ident.world():
            return False  # an in-cluster identity (nodes: only with policy-cidr-match-mode, by address)
        if not self._holds(self.net, ident):
            return False
        return not any(self._holds(x, ident) for x in self.excepts)

    @staticmethod
    def _holds(net: IPNet, ident: ExternalIdentity) -> bool:
        """Does the identity carry the label this prefix is in a selector (Exists cidr:<net>, or
        the family's world label for /0)?"""
        if net.prefixlen == 0:
            return world_label(net) in ident.reserved
        c = ident.cidr
        return c is not None and c.version == net.version and c.subnet_of(net)  # type: ignore[arg-type]


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
    """fromNodes/toNodes (and a ClusterNetworkPolicy ``nodes`` peer): remote nodes whose labels the
    selector matches (enable-node-selector-labels; the agent adds ``reserved:remote-node`` to the
    selector, so the local host is never one). A node whose labels nobody said may be any node:
    it matches."""

    sel: CompiledSelector | None = None  # None: every node
    host: bool = False  # the local host too (a ClusterNetworkPolicy nodes peer)

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, External):
            return False
        ident = ctx.external(peer)
        if "remote-node" not in ident.reserved and not (self.host and "host" in ident.reserved):
            return False
        return self.sel is None or ident.node_labels_unknown or self.sel.matches_view(ident.view)


@dataclass(frozen=True)
class NetworkPolicyPeerMatcher(PeerMatcher):
    """A NetworkPolicy peer with podSelector and/or namespaceSelector (ANDed when both), over the
    identity's labels as the agent translates it (pkg/k8s parseNetworkPolicyPeer): namespace keys
    become io.cilium.k8s.namespace.labels keys, a peer without namespaceSelector is scoped to the
    policy's namespace, and every peer to the local cluster (`external`: all of it, for what is
    not a pod)."""

    pod_sel: CompiledSelector | None
    ns_sel: CompiledSelector | None
    policy_ns: str
    external: tuple[Requirement, ...] = ()

    def matches(self, peer: Peer, ctx: IdentityLabels) -> bool:
        if not isinstance(peer, PodClass):
            if not self.external:
                return False
            view = ctx.external(peer).view
            return all(r.matches_view(view) for r in self.external)
        if self.ns_sel is None:
            if peer.namespace != self.policy_ns:
                return False
        elif not self.ns_sel.matches(ctx.ns_labels(peer)):
            return False
        return self.pod_sel is None or self.pod_sel.matches(ctx.pod_labels(peer))


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
