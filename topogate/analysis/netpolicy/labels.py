"""The labels of the identity Cilium gives each peer: what every selector matches against.

A pod's identity (pkg/k8s GetPodMetadata, then pkg/labelsfilter): its own labels (those under
``io.cilium.k8s`` removed), ``io.kubernetes.pod.namespace``, ``io.cilium.k8s.namespace.labels.<key>``
for each label of its Namespace (``kubernetes.io/metadata.name`` always implied),
``io.cilium.k8s.policy.serviceaccount`` and ``io.cilium.k8s.policy.cluster`` (the agent's
cluster-name), all of the ``k8s`` source; then only those the agent's label filter keeps
(`agent.LabelFilter`: 1.19 and later drop ``topology.kubernetes.io/*``, ``kubernetes.io/*``,
``pod-template-hash``, ``*.beta.kubernetes.io/*``, ...). A selector on a dropped label selects no pod.

Everything else is an identity of ``reserved:`` labels (pkg/identity, pkg/ipcache resolveLabels):
``world`` (an IPv6 address: ``world-ipv6``; the agent runs IPv4 single-stack, its default), ``host``,
``remote-node``, ``health``, ``init``, ``ingress``, ``unmanaged``; the kube-apiserver's carries
``kube-apiserver`` and, by where it runs, ``remote-node``, ``host`` (then it is the host's identity)
or ``world``. An address gets the identity of the longest prefix the policies name that holds it
(``cidr:<prefix>`` and world, labels.GetCIDRLabels), or plain world when none does: Cilium's
ipcache holds an entry for every prefix a policy names (its CIDRs and their excepts) and looks
addresses up by longest prefix. With enable-node-selector-labels a node's identity also carries
its node labels (``node:`` source) and the cluster label.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from topogate.analysis.netpolicy.agent import Agent
from topogate.analysis.netpolicy.keys import (
    CLUSTER_LABEL,
    NAMESPACE_LABELS_PREFIX,
    POD_NAMESPACE_LABEL,
    SERVICE_ACCOUNT_LABEL,
)
from topogate.analysis.netpolicy.model import External, PodClass
from topogate.analysis.netpolicy.selectors import IdentityView
from topogate.core.labels import NAMESPACE_NAME_LABEL

__all__ = [
    "CLUSTER_LABEL",
    "NAMESPACE_LABELS_PREFIX",
    "POD_NAMESPACE_LABEL",
    "SERVICE_ACCOUNT_LABEL",
    "ExternalIdentity",
    "IdentityLabels",
    "world_label",
]

# Labels of a pod's own the agent removes before anything else (k8sUtils.RemoveCiliumLabels).
_CILIUM_OWNED = "io.cilium.k8s"

IPNet = ipaddress.IPv4Network | ipaddress.IPv6Network

# The reserved labels of each entity that has an identity of its own.
_RESERVED = frozenset({"world", "world-ipv4", "world-ipv6", "host", "remote-node", "health", "init",
                       "ingress", "unmanaged", "kube-apiserver"})


@dataclass(frozen=True)
class ExternalIdentity:
    """The identity of a peer that is not a pod."""

    reserved: frozenset[str]  # reserved: labels
    cidr: IPNet | None = None  # the cidr: label's prefix
    node: tuple[tuple[str, str], ...] = ()  # node: labels
    k8s: tuple[tuple[str, str], ...] = ()  # k8s: labels (a labelled node's cluster label)
    node_labels_unknown: bool = False  # a node whose labels nobody said: it may be any node
    in_cluster: bool = False  # the `cluster` entity itself, as a trace endpoint
    # The aggregate identity the datapath also looks its entry up under (pkg/policy aggregate.go):
    # an address's or a name's identity (local scope) is in the world aggregate, a labelled remote
    # node's in the remote-node one; a reserved identity is in none.
    aggregate: str | None = None

    @functools.cached_property
    def view(self) -> IdentityView:
        by_source: dict[str, dict[str, str]] = {"reserved": dict.fromkeys(self.reserved, "")}
        if self.node:
            by_source["node"] = dict(self.node)
        if self.k8s:
            by_source["k8s"] = dict(self.k8s)
        if self.cidr is not None:
            by_source["cidr"] = {str(self.cidr): ""}
        return IdentityView(by_source)

    def world(self) -> bool:
        return bool(self.reserved & {"world", "world-ipv4", "world-ipv6"})


def world_label(net: IPNet) -> str:
    """The world label of an address family: IPv4 single-stack (the agent's default) calls IPv4
    world ``world`` and IPv6 ``world-ipv6`` (pkg/labels getWorldLabel)."""
    return "world" if net.version == 4 else "world-ipv6"


class IdentityLabels:
    """The label views of pods in one cluster: what the peer matchers and subject selectors
    match against. Namespace labels come from the Namespace objects read and from the pod class
    itself (``PodClass.namespace_labels``)."""

    def __init__(self, namespace_labels: Mapping[str, Mapping[str, str]] | None, agent: Agent,
                 prefixes: Iterable[IPNet] = ()) -> None:
        self.agent = agent
        self.cluster_name = agent.cluster_name
        self._keeps = agent.label_filter.keeps
        self._learned: dict[str, dict[str, str]] = {k: dict(v) for k, v in (namespace_labels or {}).items()}
        self._prefixes = sorted(set(prefixes), key=lambda n: -n.prefixlen)
        self._pod_cache: dict[PodClass, dict[str, str]] = {}
        self._ns_cache: dict[PodClass, dict[str, str]] = {}
        self._ext_cache: dict[External, ExternalIdentity] = {}

    def namespace_labels(self, ns: str) -> tuple[tuple[str, str], ...]:
        """The labels of namespace ``ns`` as read from its Namespace object, sorted."""
        labels = dict(self._learned.get(ns, {}))
        labels[NAMESPACE_NAME_LABEL] = ns
        return tuple(sorted(labels.items()))

    def _all_ns_labels(self, pod: PodClass) -> dict[str, str]:
        got = dict(self._learned.get(pod.namespace, {}))
        got.update(dict(pod.namespace_labels))
        got[NAMESPACE_NAME_LABEL] = pod.namespace
        return got

    def ns_labels(self, pod: PodClass) -> dict[str, str]:
        """The labels of the pod's namespace its identity keeps (what a NetworkPolicy
        namespaceSelector matches: the agent turns it into io.cilium.k8s.namespace.labels keys)."""
        got = self._ns_cache.get(pod)
        if got is None:
            got = {k[len(NAMESPACE_LABELS_PREFIX):]: v for k, v in self.pod_labels(pod).items()
                   if k.startswith(NAMESPACE_LABELS_PREFIX)}
            self._ns_cache[pod] = got
        return got

    def pod_labels(self, pod: PodClass) -> dict[str, str]:
        """The labels Cilium gives the pod's identity (source prefixes stripped)."""
        got = self._pod_cache.get(pod)
        if got is None:
            raw = {k: v for k, v in pod.labels if not k.startswith(_CILIUM_OWNED)}
            for k, v in self._all_ns_labels(pod).items():
                raw[NAMESPACE_LABELS_PREFIX + k] = v
            raw[POD_NAMESPACE_LABEL] = pod.namespace
            if pod.service_account:
                raw[SERVICE_ACCOUNT_LABEL] = pod.service_account
            raw[CLUSTER_LABEL] = self.cluster_name
            keeps = self._keeps
            got = {k: v for k, v in raw.items() if keeps(k)}
            self._pod_cache[pod] = got
        return got

    def dropped(self, pod: PodClass) -> list[str]:
        """The pod's own labels its identity leaves out (the agent's label filter)."""
        return [k for k, _ in pod.labels if not k.startswith(_CILIUM_OWNED) and not self._keeps(k)]

    # -- peers that are not pods ---------------------------------------------------------------
    def external(self, peer: External) -> ExternalIdentity:
        got = self._ext_cache.get(peer)
        if got is None:
            got = self._external(peer)
            self._ext_cache[peer] = got
        return got

    def _node(self, base: set[str], peer: External) -> ExternalIdentity:
        a = self.agent
        if not a.enable_node_selector_labels:
            return ExternalIdentity(frozenset(base))
        return ExternalIdentity(frozenset(base), node=peer.labels, k8s=((CLUSTER_LABEL, self.cluster_name),),
                                node_labels_unknown=not peer.labels,
                                aggregate="aggregate-remote-node" if "host" not in base else None)

    def _external(self, peer: External) -> ExternalIdentity:
        a = self.agent
        entity = peer.entity
        if entity == "kube-apiserver":
            if a.api_server == "host":
                return self._node({"host", "kube-apiserver"}, peer)
            if a.api_server == "world":
                return ExternalIdentity(frozenset({"kube-apiserver", "world"}), aggregate="aggregate-world")
            return self._node({"remote-node", "kube-apiserver"}, peer)
        if entity == "host":
            return self._node({"host", "kube-apiserver"} if a.api_server == "host" else {"host"}, peer)
        if entity == "remote-node":
            return self._node({"remote-node"}, peer)
        if entity == "cluster":
            return ExternalIdentity(frozenset(), in_cluster=True)
        if entity in _RESERVED:
            return ExternalIdentity(frozenset({entity}))
        if peer.cidr is not None:
            try:
                net = ipaddress.ip_network(peer.cidr, strict=False)
            except ValueError:
                return ExternalIdentity(frozenset({"world"}))
            holder = self._holder(net)
            label = world_label(net)
            if holder is None or holder.prefixlen == 0:
                return ExternalIdentity(frozenset({label}))
            return ExternalIdentity(frozenset({label}), cidr=holder, aggregate="aggregate-world")
        if peer.fqdn is not None:
            return ExternalIdentity(frozenset({"world"}), aggregate="aggregate-world")
        return ExternalIdentity(frozenset({"world"}))  # an entity nobody knows: the world

    def _holder(self, net: IPNet) -> IPNet | None:
        """The longest prefix the policies name that holds `net`; `net` itself for a range no
        named prefix holds (a range stands for an address of it no narrower named prefix holds)."""
        for p in self._prefixes:
            if p.version == net.version and net.subnet_of(p):  # type: ignore[arg-type]
                return p
        return None if net.prefixlen == net.max_prefixlen else net
