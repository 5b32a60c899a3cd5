"""Network-policy semantics: the one place that decides whether a flow is allowed.

``topogate check`` asks it whether the flows a training job needs (NCCL, rendezvous, DNS)
get through; ``topogate trace`` asks it why.  It models what Cilium enforces for
CiliumNetworkPolicy (CNP), CiliumClusterwideNetworkPolicy (CCNP) and Kubernetes
NetworkPolicy (NP), over *pod classes* (one per set of identical labels, like a Cilium
security identity) rather than over pods, so the cost grows with label classes, not pod pairs.

The agent
---------
What the evaluator decides is what one Cilium agent enforces: its version and the settings that
change a verdict (the inventory's ``cilium:`` block, read through ``agent_for``) .... agent.py
  the identity label filter (``labels``), versions, defaults ......................... agent.py
  a pod's identity labels after the filter; the identity of an entity, the
    kube-apiserver (by where it runs), an address (longest named prefix) ............. labels.py
  what the agent refuses of a policy the CRD lets through (two peer kinds in
    one rule, fromNodes without enable-node-selector-labels, ...): none of it
    is enforced ........................................................................ sanitize.py
  selectors on labels the identity leaves out (they select no pod) .................... compiler.py
  enable-policy (default, always, never), allow-localhost ............................. decide.py
  ClusterNetworkPolicy only with enable-k8s-cluster-network-policy .................... objects.py
Each is held to that version's own engine by tests/oracles/test_cilium_oracle.py.

Where each construct lives
--------------------------
Each construct, spelled as the upstream CRD schemas spell it (cilium.io/v2 CNP and CCNP, pinned in
tests/crds.lock.json; networking.k8s.io/v1), and the one file that reads or decides it.
Compiling turns each ``spec``/``specs`` entry into a unit (``rules.PolicyUnit``) of compiled
rules (``rules.PolicyRule``) and peer matchers (``peers.py``); evaluating asks them.

CiliumNetworkPolicy, CiliumClusterwideNetworkPolicy (cilium.io/v2)
  apiVersion (refused when missing), spec, specs ................ cilium.py
  CCNP cluster scope; a CNP without metadata.namespace: default . cilium.py
  endpointSelector (reserved: sources warned) ................... cilium.py
  nodeSelector (host policies, not modelled) .................... cilium.py
  ingress, egress ............................................... cilium.py
  ingressDeny, egressDeny ....................................... cilium.py
  enableDefaultDeny (ingress, egress) ........................... cilium.py
  fromEndpoints, toEndpoints (scoped to the policy's namespace) . cilium.py
  fromEntities, toEntities ...................................... cilium.py
  fromCIDR, toCIDR .............................................. cilium.py
  fromCIDRSet, toCIDRSet (cidr, except) ......................... cilium.py
  cidrGroupRef, cidrGroupSelector (not modelled) ................ cilium.py
  toFQDNs (matchName, matchPattern) ............................. cilium.py
  toServices, fromGroups, toGroups (not modelled) ............... cilium.py
  fromNodes, toNodes ............................................ cilium.py
  fromRequires, toRequires ...................................... cilium.py
  toPorts, icmps ................................................ cilium.py
  toPorts ports: port, endPort, protocol (ANY) .................. ports.py
  toPorts rules: dns (the DNS proxy) ............................ cilium.py
  toPorts rules L7 (http, ...), serverNames, listener,
    terminatingTLS, originatingTLS (not modelled) ............... cilium.py
  authentication.mode, and auth.type before 1.14 (not modelled) . cilium.py

ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2; Cilium 1.20, --enable-k8s-cluster-network-policy)
  tier (Admin, Baseline), priority, subject (namespaces, pods) .. clusternetworkpolicy.py
  ingress, egress; action (Accept, Deny, Pass); from, to ....... clusternetworkpolicy.py
  peers namespaces, pods, nodes, networks, domainNames .......... clusternetworkpolicy.py
  protocols tcp, udp, sctp (destinationPort number, range),
    destinationNamedPort ....................................... clusternetworkpolicy.py
  AdminNetworkPolicy, BaselineAdminNetworkPolicy (v1alpha1; not
    read by Cilium: named, not applied) ......................... clusternetworkpolicy.py

NetworkPolicy (networking.k8s.io/v1), Namespace (v1), List
  podSelector, policyTypes, ingress, egress, from, to ........... kubernetes.py
  peer podSelector, namespaceSelector, ipBlock (cidr, except) ... kubernetes.py
  ports: port, endPort, protocol ................................ ports.py
  Namespace metadata.labels; List items ......................... objects.py

Selectors and labels
  matchLabels, matchExpressions (In, NotIn, Exists, DoesNotExist) selectors.py
  the k8s:, any: (and reserved:, ...) key prefixes .............. selectors.py
  the namespace key io.kubernetes.pod.namespace and
    io.cilium.k8s.namespace.labels.* in a selector .............. selectors.py
  the labels a pod's identity carries (namespace, namespace
    labels, kubernetes.io/metadata.name, io.cilium.k8s.policy.
    serviceaccount, io.cilium.k8s.policy.cluster) ............... labels.py

What a peer key matches
  entities: all, world, cluster, host, init, ingress, unmanaged,
    remote-node, health, kube-apiserver ......................... peers.py
  a CIDR (inside the rule's, outside its except) ................ peers.py
  a DNS name (matchName, matchPattern with * and **.) ........... peers.py
  fromNodes/toNodes (remote nodes by their labels) .............. peers.py
  a NetworkPolicy peer (podSelector AND namespaceSelector) ...... peers.py
  a named port (the destination pod's container ports) .......... ports.py
  the witnesses of a peer selector (the pods, or the outside
    endpoints, it describes: what the proofs quantify over) ..... witnesses.py

Decisions
  both sides: the sender's egress AND the receiver's ingress .... evaluate.py
  tiers: Admin, then Normal (CNP, CCNP, NP), then Baseline; the
    first tiered rule by precedence decides, Pass goes on ....... decide.py
  deny wins; allow-localhost; allows are a union; toFQDNs needs
    the DNS proxy; default deny, or why it is off ............... decide.py
  which policies select a pod and switch default deny on ........ selection.py
  a unit's subject (CNP/NP: its namespace; CCNP: every one) ..... rules.py
  fromRequires/toRequires applied to a rule's endpoint peers .... rules.py
  policy order (CCNP, CNP, NP, then namespace, name, file:line)  rules.py
  a rule's ports indexed, one bisection per port ................ ports.py
  the first rule of a side admitting a port ..................... rules.py
  port classes for a trace, open ranges for the boundary proof .. evaluate.py
  what is not modelled, and how that bounds a verdict (TG120) ... compiler.py

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

Entities.  Each entity selects the reserved labels pkg/policy/api/entity.go gives it: ``all``
everything; ``cluster`` and ``cluster-mesh`` every pod plus host, remote-node, init, health,
unmanaged, ingress and kube-apiserver; ``world`` (and ``world-ipv4``/``-ipv6``) every identity
carrying a world label: entity world, an address, an FQDN, and the kube-apiserver when it runs
outside the cluster. The kube-apiserver's identity carries remote-node, host or world besides its
own label, by where the inventory says it runs (labels.py). A CIDR peer is assumed to lie outside
the cluster, since the pod CIDRs are not known here.

FQDN.  A ``toFQDNs`` allow only matches traffic when DNS of the pod goes through Cilium's DNS
proxy: some egress rule of a selecting policy carries ``toPorts ... rules: {dns: [...]}`` (docs
security/policy/language "DNS based"; without it Cilium never learns the addresses behind the
name). The evaluator reports such traffic as denied, naming the toFQDNs rule. A catch-all
``0.0.0.0/0`` rule matches an FQDN peer like any address of the world.

CIDR.  ``fromCIDR``/``toCIDR``/``fromCIDRSet``/``toCIDRSet`` and NetworkPolicy ``ipBlock`` never
match pods (docs layer3 "CIDR based": "to or from external services if the remote peer is not an
endpoint"; Cilium enforces ipBlock the same way).  An address has the identity of the longest
prefix the policies name that holds it (the agent's ipcache), and a CIDR rule selects it when that
prefix lies inside the rule's CIDR and inside none of its excepts; ``0.0.0.0/0`` is the world label
itself, so ``0.0.0.0/0`` with excepts selects the entity ``world`` and every address outside the
excepts (pkg/policy/types CIDRSelector).

Ports.  ``toPorts.ports[].port`` is a number (a string in CNP YAML: ``"53"``), ``"0"``/absent for
every port, or a container-port name, resolved against the *destination* pod's named ports
(``PodClass.ports``; an External destination has none).  ``endPort`` makes an inclusive range and
is ignored for named ports or when below ``port``.  A CNP protocol of ``ANY`` or none means TCP,
UDP and SCTP (CRD text); an NP port's protocol defaults to TCP.  L7 ``rules`` are treated as
allowing the port at L4 (the proxy then filters requests).  A rule with only ``icmps`` allows
ICMP only.
A rule's ports are indexed when it is compiled (per protocol, merged spans searched by
bisection; named ports by name), and the rules of one side that name a peer are swept once per
pair into spans labelled with the first rule admitting them: asking about one port costs
O(log n) in the n ports a rule or a policy lists, and cutting a pair's port classes O(n log n),
however many ports or rules hostile input lists.

Kubernetes NetworkPolicy.  ``podSelector`` selects pods of the policy's namespace.
``policyTypes`` defaults to Ingress, plus Egress when ``egress`` has rules; a direction listed in
``policyTypes`` isolates the pod even with no rules (``ingress: []`` = deny all). Cilium (every
version topogate knows: pkg/k8s ParseNetworkPolicy, cilium/cilium#48703) also applies the rules
of a direction ``policyTypes`` does not list, and isolates that direction: the Kubernetes API
would ignore them, so a trace warns.  A peer with ``podSelector`` and
``namespaceSelector`` ANDs them; ``podSelector`` alone means the policy's namespace;
``namespaceSelector: {}`` means all namespaces.  ``from``/``to`` missing or empty means all peers,
``ports`` missing or empty means all ports.

Not modelled (reported in ``PolicySet.warnings`` when met): ``toServices``, ``fromGroups``/
``toGroups``, CIDR groups,
``nodeSelector`` host policies (they select nodes, never pods), policies whose ``endpointSelector``
names a reserved identity (``reserved:health``, ``reserved:init``: not pods, so not applied), the
labels of a node nobody named (a ``fromNodes``/``toNodes`` selector matches such a remote node: it
may be any node; never the local host, as the agent adds ``reserved:remote-node``).

Requirements.  ``fromRequires``/``toRequires`` (Cilium 1.16-1.18; deprecated in 1.17; from 1.19
the CRDs allow no item, so the API server refuses such a policy) of every policy selecting the pod
are added to each ``fromEndpoints``/``toEndpoints`` selector of every rule selecting it in that direction, deny rules with the deny rules'
requirements; entities, CIDRs and L4-only rules are left as they are (pkg/policy
GetSourceEndpointSelectorsWithRequirements).  A requirement selector is namespace-scoped in a CNP
like any peer selector.

Refused (``PolicyError``, as kubectl refuses them): a selector operator that is not one of In,
NotIn, Exists, DoesNotExist; a label selector field other than matchLabels/matchExpressions (a
label indented one level too little would otherwise leave ``{}``, every pod); a Cilium policy
without ``apiVersion``.  Cilium's
``allow-localhost`` (``auto``, which the agent makes ``always`` under Kubernetes: the local host
reaches its pods wherever a selecting policy has ingress rules) is the agent's setting.

The evaluator does no I/O and is deterministic: policies are ordered by kind, namespace, name,
and the first matching rule in that order is the one reported.
"""

from __future__ import annotations

from topogate.analysis.netpolicy.agent import DEFAULT_AGENT, DEFAULT_VERSION, KNOWN_VERSIONS, Agent, agent_for
from topogate.analysis.netpolicy.compiler import Refused, Unselecting, refusal_text, unselecting_text
from topogate.analysis.netpolicy.evaluate import PolicySet
from topogate.analysis.netpolicy.model import (
    KIND_CCNP,
    KIND_CNP,
    KIND_KCNP,
    KIND_NP,
    POLICY_KINDS,
    External,
    Peer,
    PodClass,
    PolicyError,
    PolicyRef,
    RuleRef,
    SideVerdict,
    SourceRef,
    Verdict,
    policy_key,
)
from topogate.analysis.netpolicy.peers import NodeMatcher, matcher_anchor
from topogate.analysis.netpolicy.ports import PortRange
from topogate.analysis.netpolicy.witnesses import OPEN_NAMESPACE, Witness, witnesses

__all__ = [
    "DEFAULT_AGENT",
    "DEFAULT_VERSION",
    "KNOWN_VERSIONS",
    "Agent",
    "Refused",
    "Unselecting",
    "agent_for",
    "refusal_text",
    "unselecting_text",
    "OPEN_NAMESPACE",
    "Witness",
    "witnesses",
    "KIND_CCNP",
    "KIND_CNP",
    "KIND_KCNP",
    "KIND_NP",
    "POLICY_KINDS",
    "NodeMatcher",
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
    "matcher_anchor",
    "policy_key",
]
