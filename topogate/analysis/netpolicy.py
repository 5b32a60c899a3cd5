"""Network-policy semantics: the one place that decides whether a flow is allowed.

``topogate check`` asks it whether the flows a training job needs (NCCL, rendezvous, DNS)
get through; ``topogate trace`` asks it why.  It models what Cilium enforces for
CiliumNetworkPolicy (CNP), CiliumClusterwideNetworkPolicy (CCNP) and Kubernetes
NetworkPolicy (NP), over *pod classes* (one per set of identical labels, like a Cilium
security identity) rather than over pods, so the cost grows with label classes, not pod pairs.

Semantics chosen, and where each non-obvious one comes from
----------------------------------------------------------
Both sides.  A connection flows only if the sender's egress AND the receiver's ingress allow
it (docs.cilium.io security/policy/layer3 "policy must be configured on both sides").  An
``External`` peer (world, host, a CIDR, an FQDN) carries no policy of ours, so only the pod
side decides; two externals are not our business and are reported as allowed.

Default deny.  A pod is default-deny in a direction once a selecting policy has at least one
rule in that direction (``ingress``/``ingressDeny`` resp. ``egress``/``egressDeny``) and that
policy does not set ``enableDefaultDeny.<direction>: false`` (docs security/policy/intro
"Endpoint default policy"; the CRD field text "If multiple policies apply to an endpoint,
that endpoint's default deny will be enabled if any policy requests it").  An empty list
(``ingress: []``) is "no rules": the CRD text says "If omitted or empty, this rule does not
apply at ingress", and Cilium computes the default as ``len(Ingress) > 0 || len(IngressDeny)
> 0`` (pkg/policy/api/rule.go Sanitize).  ``enableDefaultDeny: true`` without rules enforces
nothing, because Cilium derives default deny per rule entry (pkg/policy/utils
RulesToPolicyEntries); the CRD's ``anyOf`` makes such a policy invalid anyway.

Empty rule.  A Cilium rule ``{}`` (no peer selector, no ``toPorts``) allows nothing; it only
switches default deny on.  This is the documented way to deny all egress (docs
security/policy/layer3 "Ingress/Egress Default Deny", example
examples/policies/l3/egress-default-deny).  In a Kubernetes NetworkPolicy the empty rule
``ingress: [{}]`` is the opposite: no ``from`` and no ``ports`` means all sources on all
ports (kubernetes.io concepts/services-networking/network-policies, "allow all ingress").

L4-only rule.  A Cilium rule with ``toPorts`` but no L3 selector applies to every peer,
in-cluster or world: "only be able to emit packets using TCP on port 80, to any layer 3
destination" (docs security/policy/layer4 "Example (L4)"; the policy engine substitutes the
wildcard selector when L3 is empty, pkg/policy/l4.go).  A rule with peers and no ``toPorts``
allows all ports and protocols.  An explicitly empty selector list (``fromEndpoints: []``)
selects no peer (pkg/policy/utils mergeEndpointSelectors: "empty non-nil slices ... should not
result in any identity being selected").

Union and deny.  Allow rules are a union over every selecting policy of every kind; a
matching ``ingressDeny``/``egressDeny`` rule wins over any allow, from any policy kind, and
applies even where default deny is off (docs security/policy/deny "Deny policies take
precedence over allow policies, regardless of whether they are a Cilium Network Policy, a
Clusterwide Cilium Network Policy or even a Kubernetes Network Policy").

Namespaces.  A CNP's ``endpointSelector`` only ever selects pods of the policy's namespace
(docs security/policy/kubernetes "Namespaces": "The endpointSelector always applies to pods in
the namespace associated with the CiliumNetworkPolicy").  Its peer selectors
(``fromEndpoints``/``toEndpoints``) are scoped to the policy's namespace unless the selector
names ``io.kubernetes.pod.namespace`` (with or without a ``k8s:``/``any:`` prefix, in
matchLabels or matchExpressions) or an ``io.cilium.k8s.namespace.labels.*`` key; this follows
the agent's translation (pkg/k8s/apis/cilium.io/utils getEndpointSelector).  The docs page says
namespace-label keys are "ignored" in a CNP; the agent code does not ignore them, and the code is
what runs.  A CNP without ``metadata.namespace`` lives in ``default``.  A CCNP is not scoped: its
subject and peer selectors see pods of every namespace.

Labels.  Selector keys may carry a source prefix: ``k8s:`` and ``any:`` match Kubernetes pod
labels, an unprefixed key is ``any:``; any other source (``reserved:``, ``cidr:``, ...) never
matches a pod label.  Besides its own labels a pod carries ``io.kubernetes.pod.namespace``,
``io.cilium.k8s.namespace.labels.<key>`` for each namespace label (``kubernetes.io/metadata.name``
always implied), ``io.cilium.k8s.policy.serviceaccount`` when known and
``io.cilium.k8s.policy.cluster`` (docs security/policy/kubernetes).  matchLabels and
matchExpressions (In, NotIn, Exists, DoesNotExist) follow the Kubernetes label-selector rules,
so NotIn and DoesNotExist match a pod that lacks the key; ``{}`` selects everything in scope.

Entities.  ``all`` matches everything; ``cluster`` matches every pod plus host, remote-node,
init, health, unmanaged, ingress and kube-apiserver; ``world`` (and ``world-ipv4``/``-ipv6``)
matches anything outside the cluster: entity world, a CIDR, an FQDN (docs security/policy/layer3
"Entities based").  Treating kube-apiserver as part of ``cluster`` assumes an in-cluster control
plane (the entity also covers an external one); say ``toEntities: [kube-apiserver]`` to be exact.
A CIDR peer is assumed to lie outside the cluster, since the pod CIDRs are not known here.

FQDN.  A ``toFQDNs`` allow only matches traffic when DNS of the pod goes through Cilium's DNS
proxy: some egress rule of a selecting policy carries ``toPorts ... rules: {dns: [...]}`` (docs
security/policy/language "DNS based"; without it Cilium never learns the addresses behind the
name). The evaluator reports such traffic as denied, naming the toFQDNs rule. A catch-all
``0.0.0.0/0`` rule matches an FQDN peer like any address of the world.

CIDR.  ``fromCIDR``/``toCIDR``/``fromCIDRSet``/``toCIDRSet`` and NetworkPolicy ``ipBlock`` never
match pods (docs layer3 "CIDR based": "to or from external services if the remote peer is not an
endpoint"; Cilium enforces ipBlock the same way).  An External CIDR or IP matches a CIDR rule when
it lies wholly inside the rule's CIDR and overlaps none of its ``except`` blocks; the entity
``world`` matches only a ``0.0.0.0/0``/``::/0`` rule without excepts (docs: "Allowing to world is
identical to allowing to CIDR 0.0.0.0/0").

Ports.  ``toPorts.ports[].port`` is a number (a string in CNP YAML: ``"53"``), ``"0"``/absent for
every port, or a container-port name, resolved against the *destination* pod's named ports
(``PodClass.ports``; an External destination has none).  ``endPort`` makes an inclusive range and
is ignored for named ports or when below ``port``.  A CNP protocol of ``ANY`` or none means TCP,
UDP and SCTP (CRD text); an NP port's protocol defaults to TCP.  L7 ``rules`` are treated as
allowing the port at L4 (the proxy then filters requests).  A rule with only ``icmps`` allows
ICMP only.

Kubernetes NetworkPolicy.  ``podSelector`` selects pods of the policy's namespace.
``policyTypes`` defaults to Ingress, plus Egress when ``egress`` has rules; a direction listed in
``policyTypes`` isolates the pod even with no rules (``ingress: []`` = deny all), a direction not
listed is not isolated and its rules are ignored.  A peer with ``podSelector`` and
``namespaceSelector`` ANDs them; ``podSelector`` alone means the policy's namespace;
``namespaceSelector: {}`` means all namespaces.  ``from``/``to`` missing or empty means all peers,
``ports`` missing or empty means all ports.

Not modelled (reported in ``PolicySet.warnings`` when met): ``toServices``, ``fromGroups``/
``toGroups``, CIDR groups, ``fromRequires``/``toRequires`` (removed in Cilium 1.19),
``nodeSelector`` host policies (they select nodes, never pods), node labels (any ``fromNodes``/
``toNodes`` selector matches the host and remote-node entities).  Cilium's
``--allow-localhost`` default (the local host may always reach its pods) is modelled as an
option of ``PolicySet`` that is on by default.

The evaluator does no I/O and is deterministic: policies are ordered by kind, namespace, name,
and the first matching rule in that order is the one reported.
"""

from __future__ import annotations

import ipaddress
import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "External",
    "Peer",
    "PodClass",
    "PolicyError",
    "PolicyRef",
    "PolicySet",
    "PortRange",
    "RuleRef",
    "SideVerdict",
    "SourceRef",
    "Verdict",
]

# ---------------------------------------------------------------------------------------------
# Public value types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceRef:
    """Where a YAML object (or a part of it) came from; line and column are 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class PodClass:
    """A class of pods with identical labels, i.e. what Cilium turns into one identity."""

    namespace: str
    labels: tuple[tuple[str, str], ...]
    # kubernetes.io/metadata.name=<namespace> is always implied.
    namespace_labels: tuple[tuple[str, str], ...] = ()
    # Named container ports (name, number, protocol), for named ports in toPorts / NP ports.
    ports: tuple[tuple[str, int, str], ...] = ()
    service_account: str | None = None

    def __str__(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.labels)
        return f"{self.namespace}/{{{shown}}}"


@dataclass(frozen=True)
class External:
    """The non-pod side of a flow: an entity ("world", "host", "kube-apiserver", "cluster",
    "remote-node", ...), a CIDR or single IP, or a DNS name (matched by toFQDNs)."""

    entity: str | None = None
    cidr: str | None = None
    fqdn: str | None = None

    def __str__(self) -> str:
        parts = [p for p in (self.entity, self.cidr, self.fqdn) if p]
        return "/".join(parts) if parts else "world"


Peer = PodClass | External


@dataclass(frozen=True)
class PolicyRef:
    kind: str
    namespace: str | None  # None for CiliumClusterwideNetworkPolicy
    name: str
    source: SourceRef

    def __str__(self) -> str:
        if self.namespace is None:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True)
class RuleRef:
    policy: PolicyRef
    section: str  # "ingress" | "ingressDeny" | "egress" | "egressDeny"
    index: int  # index of the rule inside its section
    source: SourceRef
    spec_index: int | None = None  # index into a CNP's ``specs`` list, None for ``spec``

    def __str__(self) -> str:
        where = "" if self.spec_index is None else f" of specs[{self.spec_index}]"
        return f"{self.section} rule {self.index}{where} of {self.policy} ({self.source})"


@dataclass(frozen=True)
class SideVerdict:
    enforced: bool  # is default deny in force in this direction
    selected_by: tuple[PolicyRef, ...]
    allowed: bool
    decided_by: RuleRef | None  # the allow or deny rule that decided it
    reason: str
    # Policies that switched default deny on in this direction (empty when not enforced).
    enforced_by: tuple[PolicyRef, ...] = ()


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    egress: SideVerdict  # the sender side (not applicable when the sender is External)
    ingress: SideVerdict  # the receiver side (not applicable when the receiver is External)

    @property
    def reason(self) -> str:
        if not self.egress.allowed:
            return f"egress: {self.egress.reason}"
        if not self.ingress.allowed:
            return f"ingress: {self.ingress.reason}"
        return f"egress: {self.egress.reason}; ingress: {self.ingress.reason}"

    @property
    def decided_by(self) -> RuleRef | None:
        """The rule that denied the flow, or None (default deny, or allowed)."""
        if not self.egress.allowed:
            return self.egress.decided_by
        if not self.ingress.allowed:
            return self.ingress.decided_by
        return None


@dataclass(frozen=True)
class PortRange:
    """A maximal range of ports of one protocol over which the verdict does not change."""

    protocol: str
    start: int
    end: int  # inclusive
    verdict: Verdict

    def __str__(self) -> str:
        ports = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{ports}/{self.protocol}"


# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------

KIND_CNP = "CiliumNetworkPolicy"
KIND_CCNP = "CiliumClusterwideNetworkPolicy"
KIND_NP = "NetworkPolicy"
_KIND_ORDER = {KIND_CCNP: 0, KIND_CNP: 1, KIND_NP: 2}

_NS_LABEL = "io.kubernetes.pod.namespace"
_NS_LABELS_PREFIX = "io.cilium.k8s.namespace.labels."
_SA_LABEL = "io.cilium.k8s.policy.serviceaccount"
_CLUSTER_LABEL = "io.cilium.k8s.policy.cluster"
_META_NAME = "kubernetes.io/metadata.name"

_L4_PROTOCOLS = frozenset({"TCP", "UDP", "SCTP"})
_MAX_PORT = 65535

# What each External entity is a member of, for fromEntities/toEntities matching.
_CLUSTER_MEMBERS = frozenset(
    {"host", "remote-node", "init", "health", "unmanaged", "ingress", "kube-apiserver", "cluster"}
)
_WORLD_ENTITIES = frozenset({"world", "world-ipv4", "world-ipv6"})
_INGRESS = "ingress"
_EGRESS = "egress"

# ---------------------------------------------------------------------------------------------
# Label selectors
# ---------------------------------------------------------------------------------------------


def _split_source(key: str) -> tuple[str, str]:
    """Cilium label keys are ``source:key``; Kubernetes keys never contain ':'."""
    if ":" in key:
        src, _, rest = key.partition(":")
        return src, rest
    return "any", key


@dataclass(frozen=True)
class _Req:
    key: str  # without source prefix
    op: str  # In, NotIn, Exists, DoesNotExist
    values: frozenset[str]
    pod_source: bool  # False: a source (reserved:, cidr:, ...) pods never carry

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.pod_source and self.key in labels
        if self.op == "In":
            return present and labels[self.key] in self.values
        if self.op == "NotIn":
            return not present or labels[self.key] not in self.values
        if self.op == "Exists":
            return present
        if self.op == "DoesNotExist":
            return not present
        return False  # unknown operator: a selector that cannot be understood selects nothing


@dataclass(frozen=True)
class _Selector:
    reqs: tuple[_Req, ...]
    text: str  # for messages

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(r.matches(labels) for r in self.reqs)

    def names_namespace(self) -> bool:
        return any(r.pod_source and r.key == _NS_LABEL for r in self.reqs)

    def names_namespace_labels(self) -> bool:
        return any(r.pod_source and r.key.startswith(_NS_LABELS_PREFIX) for r in self.reqs)


def _compile_selector(raw: Any) -> _Selector:
    if not isinstance(raw, Mapping):
        raw = {}
    reqs: list[_Req] = []
    for k, v in sorted((raw.get("matchLabels") or {}).items()):
        src, key = _split_source(str(k))
        reqs.append(_Req(key, "In", frozenset({"" if v is None else str(v)}), src in ("k8s", "any")))
    for expr in raw.get("matchExpressions") or []:
        if not isinstance(expr, Mapping):
            continue
        src, key = _split_source(str(expr.get("key", "")))
        values = frozenset(str(x) for x in (expr.get("values") or []))
        reqs.append(_Req(key, str(expr.get("operator", "")), values, src in ("k8s", "any")))
    text = ",".join(f"{r.key} {r.op} {sorted(r.values)}" for r in reqs) or "{}"
    return _Selector(tuple(reqs), text)


# ---------------------------------------------------------------------------------------------
# Peer matchers: each answers "is this peer selected?" given the policy's context.
# ---------------------------------------------------------------------------------------------


class _Ctx:
    """Per-evaluation helpers the matchers need (label views of pods), owned by the PolicySet."""

    def __init__(self, pset: PolicySet) -> None:
        self._pset = pset

    def pod_labels(self, pod: PodClass) -> Mapping[str, str]:
        return self._pset._pod_labels(pod)

    def ns_labels(self, pod: PodClass) -> Mapping[str, str]:
        return self._pset._ns_labels(pod)


class _Matcher:
    def matches(self, peer: Peer, ctx: _Ctx) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


@dataclass(frozen=True)
class _AnyPeer(_Matcher):
    """Every peer: pods and everything outside (L4-only Cilium rules, NP rules without from/to)."""

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
        return True


@dataclass(frozen=True)
class _EndpointMatcher(_Matcher):
    sel: _Selector
    scope_ns: str | None  # None: any namespace

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
        if not isinstance(peer, PodClass):
            return False  # endpoint selectors only select Cilium endpoints (pods)
        if self.scope_ns is not None and peer.namespace != self.scope_ns:
            return False
        return self.sel.matches(ctx.pod_labels(peer))


@dataclass(frozen=True)
class _EntityMatcher(_Matcher):
    entities: frozenset[str]

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
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
class _CIDRMatcher(_Matcher):
    net: IPNet
    excepts: tuple[IPNet, ...]

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
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
class _FQDNMatcher(_Matcher):
    patterns: tuple[re.Pattern[str], ...]

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
        if not isinstance(peer, External) or not peer.fqdn:
            return False
        name = peer.fqdn.lower().rstrip(".")
        return any(p.fullmatch(name) for p in self.patterns)


def _fqdn_regex(match_name: str | None, match_pattern: str | None) -> re.Pattern[str]:
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
class _NodeMatcher(_Matcher):
    """fromNodes/toNodes: node labels are not modelled, so any node selector means host/remote-node."""

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
        return isinstance(peer, External) and peer.entity in ("host", "remote-node")


@dataclass(frozen=True)
class _NPPeerMatcher(_Matcher):
    """A NetworkPolicy peer with podSelector and/or namespaceSelector (ANDed when both)."""

    pod_sel: _Selector | None
    ns_sel: _Selector | None
    policy_ns: str

    def matches(self, peer: Peer, ctx: _Ctx) -> bool:
        if not isinstance(peer, PodClass):
            return False
        if self.ns_sel is None:
            if peer.namespace != self.policy_ns:
                return False
        elif not self.ns_sel.matches(ctx.ns_labels(peer)):
            return False
        return self.pod_sel is None or self.pod_sel.matches(dict(peer.labels))


# ---------------------------------------------------------------------------------------------
# Ports
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PortSpec:
    protocols: frozenset[str]
    start: int  # 0: every port
    end: int
    name: str | None = None  # named port, resolved against the destination pod

    def resolve(self, dst: Peer) -> list[tuple[frozenset[str], int, int]]:
        """Concrete (protocols, start, end) ranges this spec covers for destination ``dst``."""
        if self.name is None:
            if self.start == 0:
                return [(self.protocols, 1, _MAX_PORT)]
            return [(self.protocols, self.start, self.end)]
        if not isinstance(dst, PodClass):
            return []
        out = []
        for pname, number, proto in dst.ports:
            proto = (proto or "TCP").upper()
            if pname == self.name and proto in self.protocols:
                out.append((frozenset({proto}), int(number), int(number)))
        return out

    def matches(self, port: int, proto: str, dst: Peer) -> bool:
        return any(proto in protos and lo <= port <= hi for protos, lo, hi in self.resolve(dst))


def _parse_port_value(value: Any) -> tuple[int, str | None]:
    """(number, name): number 0 means every port."""
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return 0, None
    if isinstance(value, int):
        return value, None
    text = str(value).strip()
    if text == "":
        return 0, None
    if text.isdigit():
        return int(text), None
    return 0, text


def _port_spec(raw: Mapping[str, Any], default_protos: frozenset[str]) -> _PortSpec:
    """``default_protos`` is what a missing protocol means: every L4 protocol for Cilium, TCP for NP."""
    proto = str(raw.get("protocol") or "").upper()
    if proto == "":
        protos = default_protos
    elif proto == "ANY":
        protos = _L4_PROTOCOLS
    else:
        protos = frozenset({proto})
    number, name = _parse_port_value(raw.get("port"))
    if name is not None:
        return _PortSpec(protos, 0, 0, name)  # endPort is ignored for named ports
    end = raw.get("endPort")
    try:
        end_i = int(end) if end is not None else number
    except (TypeError, ValueError):
        end_i = number
    end_i = max(end_i, number)  # an endPort below port is ignored
    return _PortSpec(protos, number, end_i)


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

    def matches(self, peer: Peer, dst: Peer, port: int, proto: str, ctx: _Ctx) -> bool:
        if proto == "ICMP":
            if self.ports is not None and not self.icmp:
                return False
        elif self.ports is not None and not any(p.matches(port, proto, dst) for p in self.ports):
            return False
        return any(m.matches(peer, ctx) for m in self.peers)


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

    def selects(self, pod: PodClass, ctx: _Ctx) -> bool:
        if self.subject is None:
            return False
        if self.subject_ns is not None and pod.namespace != self.subject_ns:
            return False
        labels = dict(pod.labels) if self.np_labels_only else ctx.pod_labels(pod)
        return self.subject.matches(labels)


def _sort_key(ref: PolicyRef) -> tuple[int, str, str, str, int]:
    return (_KIND_ORDER.get(ref.kind, 9), ref.namespace or "", ref.name, ref.source.file, ref.source.line)


PathMap = Mapping[tuple[str | int, ...], SourceRef]


class _Builder:
    """Turns raw objects into _Units; collects warnings about what is not modelled."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def _src(self, paths: PathMap | None, path: tuple[str | int, ...], fallback: SourceRef) -> SourceRef:
        if paths:
            # The closest enclosing path that has a position.
            for cut in range(len(path), 0, -1):
                got = paths.get(path[:cut])
                if got is not None:
                    return got
        return fallback

    # -- Cilium ------------------------------------------------------------------------------
    def cilium(self, obj: Mapping[str, Any], ref: SourceRef, paths: PathMap | None) -> list[_Unit]:
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", "<unnamed>"))
        ns: str | None = None if kind == KIND_CCNP else str(meta.get("namespace") or "default")
        pref = PolicyRef(kind, ns, name, ref)
        units: list[_Unit] = []
        spec = obj.get("spec")
        if isinstance(spec, Mapping):
            units.append(self._cilium_rule(pref, spec, ("spec",), None, paths))
        for i, sp in enumerate(obj.get("specs") or []):
            if isinstance(sp, Mapping):
                units.append(self._cilium_rule(pref, sp, ("specs", i), i, paths))
        return units

    def _cilium_rule(
        self,
        pref: PolicyRef,
        spec: Mapping[str, Any],
        base: tuple[str | int, ...],
        spec_index: int | None,
        paths: PathMap | None,
    ) -> _Unit:
        if "endpointSelector" in spec:
            subject: _Selector | None = _compile_selector(spec.get("endpointSelector"))
        else:
            subject = None
            if "nodeSelector" in spec:
                self.warnings.append(f"{pref}: nodeSelector (host policy) selects nodes, not pods; ignored")
        edd = spec.get("enableDefaultDeny") or {}
        unit = _Unit(pref, pref.namespace, subject, False, {})
        unit.dns_proxy = any(
            isinstance(tp, Mapping) and isinstance(tp.get("rules"), Mapping) and tp["rules"].get("dns")
            for r in (spec.get("egress") or []) if isinstance(r, Mapping)
            for tp in (r.get("toPorts") or []))
        for direction, allow_key, deny_key in ((_INGRESS, "ingress", "ingressDeny"), (_EGRESS, "egress", "egressDeny")):
            allow = [r for r in (spec.get(allow_key) or []) if isinstance(r, Mapping)]
            deny = [r for r in (spec.get(deny_key) or []) if isinstance(r, Mapping)]
            has = bool(allow) or bool(deny)
            unit.has_rules[direction] = has
            # enableDefaultDeny.<dir>: false opts out; unset means "true if this direction has rules".
            unit.enforce[direction] = has and edd.get(direction) is not False
            for section, rules, is_deny in ((allow_key, allow, False), (deny_key, deny, True)):
                for i, raw in enumerate(rules):
                    rref = RuleRef(pref, section, i, self._src(paths, (*base, section, i), pref.source), spec_index)
                    rule = self._cilium_peer_rule(rref, direction, is_deny, raw, pref)
                    (unit.deny_rules if is_deny else unit.rules)[direction].append(rule)
        return unit

    def _cilium_peer_rule(
        self, rref: RuleRef, direction: str, deny: bool, raw: Mapping[str, Any], pref: PolicyRef
    ) -> _Rule:
        pre = "from" if direction == _INGRESS else "to"
        l3_keys = [
            f"{pre}Endpoints",
            f"{pre}Entities",
            f"{pre}CIDR",
            f"{pre}CIDRSet",
            f"{pre}Nodes",
            f"{pre}Groups",
        ]
        if direction == _EGRESS:
            l3_keys += ["toFQDNs", "toServices"]
        given = [k for k in l3_keys if k in raw and raw[k] is not None]
        for k in (f"{pre}Groups", "toServices"):
            if k in given:
                self.warnings.append(f"{rref}: {k} is not modelled; it selects no peer here")
        if raw.get(f"{pre}Requires"):
            self.warnings.append(f"{rref}: {pre}Requires is not modelled (deprecated, removed in Cilium 1.19)")
        matchers: list[_Matcher] = []
        explicit_empty = False
        for k in given:
            items = raw[k]
            if not isinstance(items, list):
                continue
            if not items:
                explicit_empty = True
            if k.endswith("Endpoints"):
                for j, sel_raw in enumerate(items):
                    if not isinstance(sel_raw, Mapping):
                        # A null entry would read as {} and select every pod: refuse it.
                        raise ValueError(f"{k}[{j}] is not a label selector")
                    sel = _compile_selector(sel_raw)
                    scope: str | None = pref.namespace
                    # Cilium scopes a CNP peer selector to the policy namespace unless it names
                    # the namespace or namespace labels (agent: getEndpointSelector).
                    if scope is not None and (sel.names_namespace() or sel.names_namespace_labels()):
                        scope = None
                    matchers.append(_EndpointMatcher(sel, scope))
            elif k.endswith("Entities"):
                matchers.append(_EntityMatcher(frozenset(str(e) for e in items)))
            elif k.endswith("CIDR"):
                for c in items:
                    m = self._cidr(str(c), [], rref)
                    if m is not None:
                        matchers.append(m)
            elif k.endswith("CIDRSet"):
                for c in items:
                    if not isinstance(c, Mapping) or "cidr" not in c:
                        self.warnings.append(f"{rref}: CIDR group references are not modelled")
                        continue
                    m = self._cidr(str(c["cidr"]), [str(x) for x in c.get("except") or []], rref)
                    if m is not None:
                        matchers.append(m)
            elif k.endswith("Nodes"):
                if items:
                    matchers.append(_NodeMatcher())
            elif k == "toFQDNs":
                pats = tuple(
                    _fqdn_regex(f.get("matchName"), f.get("matchPattern")) for f in items if isinstance(f, Mapping)
                )
                matchers.append(_FQDNMatcher(pats))
        ports: list[_PortSpec] = []
        has_l4 = False
        for pr in raw.get("toPorts") or []:
            if not isinstance(pr, Mapping):
                continue
            has_l4 = True
            plist = pr.get("ports")
            if not plist:
                # A toPorts entry without ports (e.g. only L7 rules) applies to every port.
                ports.append(_PortSpec(_L4_PROTOCOLS, 0, 0))
            for p in plist or []:
                if isinstance(p, Mapping):
                    ports.append(_port_spec(p, _L4_PROTOCOLS))
        icmp = bool(raw.get("icmps"))
        has_l4 = has_l4 or icmp
        if explicit_empty:
            peers: tuple[_Matcher, ...] = ()  # an explicitly empty selector list selects nobody
        elif given:
            peers = tuple(matchers)
        elif has_l4:
            peers = (_AnyPeer(),)  # L4-only: every L3 peer (docs layer4 "Example (L4)")
        else:
            peers = ()  # the empty rule {} allows nothing (docs layer3 "Default Deny")
        return _Rule(rref, direction, deny, peers, tuple(ports) if has_l4 else None, icmp)

    def _cidr(self, text: str, excepts: list[str], rref: RuleRef) -> _CIDRMatcher | None:
        try:
            net = ipaddress.ip_network(text, strict=False)
            exc = tuple(ipaddress.ip_network(x, strict=False) for x in excepts)
        except ValueError:
            self.warnings.append(f"{rref}: invalid CIDR {text!r} ignored")
            return None
        return _CIDRMatcher(net, exc)

    # -- Kubernetes NetworkPolicy ------------------------------------------------------------
    def netpol(self, obj: Mapping[str, Any], ref: SourceRef, paths: PathMap | None) -> list[_Unit]:
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        pref = PolicyRef(KIND_NP, ns, str(meta.get("name", "<unnamed>")), ref)
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            spec = {}
        types_raw = spec.get("policyTypes")
        if types_raw is not None and not isinstance(types_raw, list):
            raise ValueError("policyTypes must be a list such as [Ingress, Egress]")
        if types_raw:
            types = {str(t) for t in types_raw}
        else:
            # API defaulting: Ingress always, Egress when there are egress rules.
            types = {"Ingress"} | ({"Egress"} if spec.get("egress") else set())
        unit = _Unit(pref, ns, _compile_selector(spec.get("podSelector")), True, {})
        for direction, key, tname, peer_key in (
            (_INGRESS, "ingress", "Ingress", "from"),
            (_EGRESS, "egress", "Egress", "to"),
        ):
            isolated = tname in types
            unit.enforce[direction] = isolated
            unit.has_rules[direction] = isolated
            if not isolated:
                continue  # rules of a direction not in policyTypes have no effect
            for i, raw in enumerate(spec.get(key) or []):
                if not isinstance(raw, Mapping):
                    continue
                rref = RuleRef(pref, key, i, self._src(paths, ("spec", key, i), ref))
                unit.rules[direction].append(self._np_rule(rref, direction, raw, ns, peer_key))
        return [unit]

    def _np_rule(self, rref: RuleRef, direction: str, raw: Mapping[str, Any], ns: str, peer_key: str) -> _Rule:
        peers_raw = raw.get(peer_key) or []
        matchers: list[_Matcher] = []
        if not peers_raw:
            matchers.append(_AnyPeer())  # missing or empty from/to: all peers
        for p in peers_raw:
            if not isinstance(p, Mapping):
                continue
            if p.get("ipBlock") is not None:
                ib = p["ipBlock"] or {}
                m = self._cidr(str(ib.get("cidr", "")), [str(x) for x in ib.get("except") or []], rref)
                if m is not None:
                    matchers.append(m)
                continue
            pod_sel = _compile_selector(p["podSelector"]) if p.get("podSelector") is not None else None
            ns_sel = _compile_selector(p["namespaceSelector"]) if p.get("namespaceSelector") is not None else None
            if pod_sel is None and ns_sel is None:
                continue  # an empty peer is invalid in the API; it selects nothing here
            matchers.append(_NPPeerMatcher(pod_sel, ns_sel, ns))
        ports_raw = raw.get("ports") or []
        ports: tuple[_PortSpec, ...] | None = None
        if ports_raw:
            tcp = frozenset({"TCP"})
            ports = tuple(_port_spec(p, tcp) for p in ports_raw if isinstance(p, Mapping))
        return _Rule(rref, direction, False, tuple(matchers), ports)


# ---------------------------------------------------------------------------------------------
# The policy set
# ---------------------------------------------------------------------------------------------

_SideKey = tuple[PodClass, Peer, Peer, int, str, str]


class PolicyError(ValueError):
    """A policy object too malformed to evaluate (the API server would have rejected it)."""

    def __init__(self, source: SourceRef, message: str):
        super().__init__(f"{source.file}:{source.line}:{source.column}: {message}")
        self.source = source
        self.message = message


class PolicySet:
    """All network policies of one cluster, indexed for per-pair evaluation."""

    def __init__(
        self,
        units: Sequence[_Unit] = (),
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
        *,
        warnings: Sequence[str] = (),
        cluster_name: str = "default",
        allow_localhost: bool = True,
    ) -> None:
        self.cluster_name = cluster_name
        self.allow_localhost = allow_localhost
        self.warnings: list[str] = list(warnings)
        self._ns_learned: dict[str, dict[str, str]] = {k: dict(v) for k, v in (namespace_labels or {}).items()}
        ordered = sorted(units, key=lambda u: _sort_key(u.policy))
        self._clusterwide: list[_Unit] = [u for u in ordered if u.subject_ns is None]
        self._by_ns: dict[str, list[_Unit]] = {}
        for u in ordered:
            if u.subject_ns is not None:
                self._by_ns.setdefault(u.subject_ns, []).append(u)
        self._ctx = _Ctx(self)
        self._label_cache: dict[PodClass, dict[str, str]] = {}
        self._nslabel_cache: dict[PodClass, dict[str, str]] = {}
        self._units_cache: dict[PodClass, tuple[_Unit, ...]] = {}
        self._side_cache: dict[_SideKey, SideVerdict] = {}
        self._selection_cache: dict[tuple[PodClass, str], tuple[tuple[PolicyRef, ...], tuple[PolicyRef, ...]]] = {}
        self._verdict_cache: dict[tuple[Peer, Peer, int, str], Verdict] = {}

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_objects(
        cls,
        objs: Iterable[tuple[Any, ...]],
        *,
        cluster_name: str = "default",
        allow_localhost: bool = True,
    ) -> PolicySet:
        """Build from ``(object, SourceRef)`` pairs, or ``(object, SourceRef, paths)`` triples where
        ``paths`` maps a path inside the object (e.g. ``("spec", "ingress", 0)``) to its SourceRef.

        Keeps CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy (cilium.io/v2) and
        networking.k8s.io/v1 NetworkPolicy; learns namespace labels from v1 Namespace objects;
        ignores everything else.  ``List`` objects are unpacked."""
        builder = _Builder()
        units: list[_Unit] = []
        ns_labels: dict[str, dict[str, str]] = {}

        def take(obj: Any, ref: SourceRef, paths: PathMap | None) -> None:
            if not isinstance(obj, Mapping):
                return
            api = str(obj.get("apiVersion", ""))
            kind = str(obj.get("kind", ""))
            if kind.endswith("List") and isinstance(obj.get("items"), list):
                for item in obj["items"]:
                    take(item, ref, None)
            elif kind in (KIND_CNP, KIND_CCNP) and api.startswith("cilium.io/"):
                units.extend(builder.cilium(obj, ref, paths))
            elif kind == KIND_NP and api == "networking.k8s.io/v1":
                units.extend(builder.netpol(obj, ref, paths))
            elif kind == "Namespace" and api == "v1":
                meta = obj.get("metadata") or {}
                name = meta.get("name")
                if name:
                    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
                    ns_labels.setdefault(str(name), {}).update(labels)

        for item in objs:
            obj, ref = item[0], item[1]
            paths = item[2] if len(item) > 2 else None
            try:
                take(obj, ref, paths)
            except (AttributeError, TypeError, ValueError, KeyError, IndexError) as err:
                # A policy the API server would reject (wrong types): say where, never crash.
                kind = obj.get("kind", "object") if isinstance(obj, Mapping) else "object"
                raise PolicyError(ref, f"cannot read this {kind}: {type(err).__name__}: {err}; "
                                       "check it against the CRD schema") from None
        return cls(
            units,
            ns_labels,
            warnings=builder.warnings,
            cluster_name=cluster_name,
            allow_localhost=allow_localhost,
        )

    # -- label views -------------------------------------------------------------------------
    def namespace_labels(self, ns: str) -> tuple[tuple[str, str], ...]:
        labels = dict(self._ns_learned.get(ns, {}))
        labels[_META_NAME] = ns
        return tuple(sorted(labels.items()))

    def _ns_labels(self, pod: PodClass) -> dict[str, str]:
        got = self._nslabel_cache.get(pod)
        if got is None:
            got = dict(self._ns_learned.get(pod.namespace, {}))
            got.update(dict(pod.namespace_labels))
            got[_META_NAME] = pod.namespace
            self._nslabel_cache[pod] = got
        return got

    def _pod_labels(self, pod: PodClass) -> dict[str, str]:
        """The labels Cilium gives the pod's identity (source prefixes stripped)."""
        got = self._label_cache.get(pod)
        if got is None:
            got = dict(pod.labels)
            got[_NS_LABEL] = pod.namespace
            for k, v in self._ns_labels(pod).items():
                got[_NS_LABELS_PREFIX + k] = v
            if pod.service_account is not None:
                got[_SA_LABEL] = pod.service_account
            got[_CLUSTER_LABEL] = self.cluster_name
            self._label_cache[pod] = got
        return got

    # -- queries -----------------------------------------------------------------------------
    def _units_for(self, pod: PodClass) -> tuple[_Unit, ...]:
        got = self._units_cache.get(pod)
        if got is None:
            # Only the clusterwide policies and those of the pod's own namespace can select it.
            cands = self._clusterwide + self._by_ns.get(pod.namespace, [])
            got = tuple(sorted((u for u in cands if u.selects(pod, self._ctx)), key=lambda u: _sort_key(u.policy)))
            self._units_cache[pod] = got
        return got

    def policies_selecting(self, pod: PodClass) -> list[PolicyRef]:
        out: list[PolicyRef] = []
        for u in self._units_for(pod):
            if u.policy not in out:
                out.append(u.policy)
        return out

    def evaluate(self, src: Peer, dst: Peer, port: int, protocol: str) -> Verdict:
        proto = protocol.upper()
        key = (src, dst, int(port), proto)
        got = self._verdict_cache.get(key)
        if got is not None:
            return got
        if isinstance(src, PodClass):
            egress = self._side(src, dst, dst, int(port), proto, _EGRESS)
        else:
            egress = SideVerdict(
                False, (), True, None, f"sender {src} is not a Cilium endpoint; no egress policy applies"
            )
        if isinstance(dst, PodClass):
            ingress = self._side(dst, src, dst, int(port), proto, _INGRESS)
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
        if isinstance(src, PodClass) and not self._side(src, dst, dst, int(port), proto, _EGRESS).allowed:
            return False
        return self.evaluate(src, dst, port, protocol).allowed

    def _side(self, pod: PodClass, peer: Peer, dst: Peer, port: int, proto: str, direction: str) -> SideVerdict:
        key: _SideKey = (pod, peer, dst, port, proto, direction)
        got = self._side_cache.get(key)
        if got is None:
            got = self._decide(pod, peer, dst, port, proto, direction)
            self._side_cache[key] = got
        return got

    def _selection(self, pod: PodClass, direction: str) -> tuple[tuple[PolicyRef, ...], tuple[PolicyRef, ...]]:
        """(policies selecting the pod, those that switch default deny on in `direction`), per
        pod class: computed once, since every flow of a job asks it again."""
        key = (pod, direction)
        got = self._selection_cache.get(key)
        if got is None:
            units = self._units_for(pod)
            got = (tuple(dict.fromkeys(u.policy for u in units)), self._enforcers(units, direction))
            self._selection_cache[key] = got
        return got

    def _decide(self, pod: PodClass, peer: Peer, dst: Peer, port: int, proto: str, direction: str) -> SideVerdict:
        units = self._units_for(pod)
        selected, enforced_by = self._selection(pod, direction)
        ctx = self._ctx
        # 1. Deny rules win over everything, enforced or not (docs security/policy/deny).
        for u in units:
            for r in u.deny_rules[direction]:
                if r.matches(peer, dst, port, proto, ctx):
                    return SideVerdict(
                        bool(enforced_by), selected, False, r.ref, f"denied by {r.ref}", enforced_by
                    )
        # 2. The local host may always reach its own pods (Cilium --allow-localhost default).
        if (
            direction == _INGRESS
            and self.allow_localhost
            and isinstance(peer, External)
            and peer.entity == "host"
            and enforced_by
        ):
            return SideVerdict(
                True, selected, True, None,
                "allowed: the local host always reaches its pods (Cilium allow-localhost default)",
                enforced_by,
            )
        # 3. Allow rules are a union over every selecting policy. A toFQDNs allow only works when
        #    DNS goes through Cilium's proxy (docs security/policy/language "DNS based": the
        #    proxy learns the names' addresses); without it the rule never matches a packet.
        no_proxy: RuleRef | None = None
        proxied = any(u.dns_proxy for u in units)
        for u in units:
            for r in u.rules[direction]:
                if r.matches(peer, dst, port, proto, ctx):
                    if not proxied and _only_by_fqdn(r, peer, ctx):
                        no_proxy = no_proxy or r.ref
                        continue
                    return SideVerdict(bool(enforced_by), selected, True, r.ref, f"allowed by {r.ref}", enforced_by)
        if no_proxy is not None and enforced_by:
            return SideVerdict(True, selected, False, no_proxy, (
                f"{no_proxy} names this host, but no policy selecting the pod sends DNS through "
                "Cilium's proxy (an egress rule to kube-dns with toPorts rules: {dns: ...}), so "
                "Cilium never learns its addresses and drops the traffic"), enforced_by)
        if not enforced_by:
            if not selected:
                reason = f"not enforced: no policy selects {pod}, so {direction} is allowed"
            else:
                with_rules = [u.policy for u in units if u.has_rules[direction]]
                if with_rules:
                    names = ", ".join(str(p) for p in dict.fromkeys(with_rules))
                    reason = (
                        f"not enforced: {names} set enableDefaultDeny.{direction}: false, "
                        f"so {direction} is allowed"
                    )
                else:
                    names = ", ".join(str(p) for p in selected)
                    reason = f"not enforced: no {direction} rules in {names}, so {direction} is allowed"
            return SideVerdict(False, selected, True, None, reason)
        cands = [u.policy for u in units if u.has_rules[direction]]
        names = ", ".join(str(p) for p in dict.fromkeys(cands))
        return SideVerdict(True, selected, False, None, f"default deny: no rule of {names} allows it", enforced_by)

    @staticmethod
    def _enforcers(units: Sequence[_Unit], direction: str) -> tuple[PolicyRef, ...]:
        return tuple(dict.fromkeys(u.policy for u in units if u.enforce.get(direction)))

    def port_classes(
        self, src: Peer, dst: Peer, protocols: Sequence[str] = ("TCP", "UDP")
    ) -> list[PortRange]:
        """Split 1-65535 of each protocol into maximal ranges with one verdict each, so a trace
        without ``--port`` can answer per class.  Only ports named by a rule that applies to this
        pair can change the verdict, so evaluating one port per elementary range is exact."""
        # Only rules whose peers match this pair can change the verdict from one port to the
        # next; the others (DNS to kube-dns, say) would only split ranges needlessly.
        ctx = self._ctx
        rules: list[_Rule] = []
        if isinstance(src, PodClass):
            for u in self._units_for(src):
                rules += [r for r in u.deny_rules[_EGRESS] + u.rules[_EGRESS]
                          if any(m.matches(dst, ctx) for m in r.peers)]
        if isinstance(dst, PodClass):
            for u in self._units_for(dst):
                rules += [r for r in u.deny_rules[_INGRESS] + u.rules[_INGRESS]
                          if any(m.matches(src, ctx) for m in r.peers)]
        out: list[PortRange] = []
        for proto in (p.upper() for p in protocols):
            cuts = {1, _MAX_PORT + 1}
            for r in rules:
                for spec in r.ports or ():
                    for protos, lo, hi in spec.resolve(dst):
                        if proto in protos:
                            cuts.add(max(1, lo))
                            cuts.add(min(_MAX_PORT, hi) + 1)
            edges = sorted(c for c in cuts if 1 <= c <= _MAX_PORT + 1)
            for lo, nxt in itertools.pairwise(edges):
                v = self.evaluate(src, dst, lo, proto)
                if out and out[-1].protocol == proto and out[-1].verdict == v and out[-1].end == lo - 1:
                    out[-1] = PortRange(proto, out[-1].start, nxt - 1, v)
                else:
                    out.append(PortRange(proto, lo, nxt - 1, v))
        return out
