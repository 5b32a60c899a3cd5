"""ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2) compilation, as Cilium 1.20 reads it
behind ``--enable-k8s-cluster-network-policy`` (pkg/k8s ParseClusterNetworkPolicy): the tier and
priority, the subject, Accept/Deny/Pass rules with their peers and protocols. And the v1alpha1
AdminNetworkPolicy and BaselineAdminNetworkPolicy, which Cilium does not read: named, not applied.

What Cilium does, and so what is modelled:
- A rule's precedence is the policy's ``priority`` plus its index / 100, lower first; every rule
  of the Admin tier is asked before the Normal tier (CNP, CCNP, NP), every rule of the Baseline
  tier after it. The first rule of a tier naming the peer and the port decides: Accept allows,
  Deny denies, Pass hands the flow to the next tier.
- No rule of a ClusterNetworkPolicy switches default deny on: where no tier decides, the Normal
  tier's default deny (or its absence) does.
- ``from``/``to`` missing or empty matches every peer; a peer with no field Cilium knows (a newer
  CRD) fails closed: an Accept rule matches nothing, a Deny or Pass rule denies everything.
- Peers: ``namespaces`` and ``pods`` select pods by namespace labels (and pod labels); ``nodes``,
  ``networks`` (CIDRs) and ``domainNames`` (``*.`` prefix matches subdomains at any depth; Cilium
  adds an allow to kube-dns on its ports named ``dns`` and ``dns-tcp`` through the DNS proxy).
- Protocols: ``tcp``/``udp``/``sctp`` with ``destinationPort`` ``number`` or ``range``
  (inclusive), or ``destinationNamedPort`` (any protocol); none means every port.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogate.analysis.netpolicy.compiler import TOO_PERMISSIVE, TOO_STRICT, CompilerBase, PathMap
from topogate.analysis.netpolicy.keys import CLUSTER_LABEL, NAMESPACE_LABELS_PREFIX
from topogate.analysis.netpolicy.model import (
    ACTION_ACCEPT,
    ACTION_DENY,
    ACTION_PASS,
    DIRECTION_EGRESS,
    DIRECTION_INGRESS,
    KIND_KCNP,
    TIER_ADMIN,
    TIER_BASELINE,
    PolicyError,
    PolicyRef,
    RuleRef,
    SourceRef,
)
from topogate.analysis.netpolicy.peers import (
    AnyPeer,
    EndpointMatcher,
    FQDNMatcher,
    NodeMatcher,
    PeerMatcher,
    fqdn_regex,
)
from topogate.analysis.netpolicy.ports import ANY_PROTOCOL, PolicyPort
from topogate.analysis.netpolicy.rules import PolicyRule, PolicyUnit
from topogate.analysis.netpolicy.selectors import CompiledSelector, Requirement, compile_selector

__all__ = ["ClusterNetworkPolicyCompiler"]

_TIERS = (TIER_ADMIN, TIER_BASELINE)
_ACTIONS = (ACTION_ACCEPT, ACTION_DENY, ACTION_PASS)
# Per direction: (its rules' key in the spec, the peers' key of a rule).
_SECTIONS = ((DIRECTION_INGRESS, "ingress", "from"), (DIRECTION_EGRESS, "egress", "to"))
_PROTOCOL_KEYS = {"tcp": "TCP", "udp": "UDP", "sctp": "SCTP"}
# The DNS allow Cilium adds for a domainNames rule: to pods k8s-app=kube-dns of any namespace, on
# their ports named dns and dns-tcp.
_KUBE_DNS = EndpointMatcher(compile_selector({"matchLabels": {"k8s-app": "kube-dns"}}), None)
_DNS_PORTS = (PolicyPort(ANY_PROTOCOL, 0, 0, name="dns"), PolicyPort(ANY_PROTOCOL, 0, 0, name="dns-tcp"))


def _pods_selector(namespaces: Any, pods: Any) -> CompiledSelector:
    """One selector over a pod's identity labels: the namespace selector's keys as the
    ``io.cilium.k8s.namespace.labels.`` labels every pod carries, ANDed with the pod selector (the
    agent's translation, processNamespaceSelector)."""
    ns = compile_selector(namespaces)
    pod = compile_selector(pods) if pods is not None else CompiledSelector((), "{}")
    reqs = (*pod.reqs, *(Requirement(NAMESPACE_LABELS_PREFIX + r.key, r.op, r.values, r.pod_source, r.source) for r in ns.reqs))
    parts = [f"namespaces {ns.text}"] + ([f"pods {pod.text}"] if pods is not None else [])
    return CompiledSelector(reqs, "; ".join(parts))


def _peer_selector(raw: Mapping[str, Any]) -> CompiledSelector | None:
    """The selector of a ``namespaces`` or ``pods`` peer (or subject), None for other fields."""
    if raw.get("namespaces") is not None:
        return _pods_selector(raw["namespaces"], None)
    pods = raw.get("pods")
    if isinstance(pods, Mapping):
        return _pods_selector(pods.get("namespaceSelector") or {}, pods.get("podSelector") or {})
    return None


class ClusterNetworkPolicyCompiler(CompilerBase):
    """policy.networking.k8s.io ClusterNetworkPolicy into tiered PolicyUnits."""

    def cluster_network_policy(self, obj: Mapping[str, Any], ref: SourceRef,
                               paths: PathMap | None) -> list[PolicyUnit]:
        meta = obj.get("metadata") or {}
        pref = PolicyRef(KIND_KCNP, None, str(meta.get("name", "<unnamed>")), ref)
        spec = obj.get("spec")
        if not isinstance(spec, Mapping):
            raise PolicyError(ref, "a ClusterNetworkPolicy needs a spec (tier, priority, subject)")
        tier = spec.get("tier")
        if tier not in _TIERS:
            raise PolicyError(self._src(paths, ("spec", "tier"), ref),
                              f"spec.tier: Unsupported value: {tier!r}: supported values: \"Admin\", \"Baseline\"")
        priority = spec.get("priority")
        if isinstance(priority, bool) or not isinstance(priority, int) or not 0 <= priority <= 1000:
            raise PolicyError(self._src(paths, ("spec", "priority"), ref),
                              f"spec.priority: Invalid value: {priority!r}: must be an integer from 0 to 1000")
        subject_raw = spec.get("subject")
        subject = _peer_selector(subject_raw) if isinstance(subject_raw, Mapping) else None
        if subject is None:
            raise PolicyError(self._src(paths, ("spec", "subject"), ref),
                              "spec.subject: exactly one of namespaces or pods must be set")
        unit = PolicyUnit(pref, None, subject, False, {DIRECTION_INGRESS: False, DIRECTION_EGRESS: False},
                          tier=str(tier))
        for direction, key, peer_key in _SECTIONS:
            for i, raw in enumerate(spec.get(key) or []):
                if not isinstance(raw, Mapping):
                    continue
                path = ("spec", key, i)
                rref = RuleRef(pref, key, i, self._src(paths, path, ref))
                unit.tiered[direction].extend(self._rules(unit, rref, direction, raw, peer_key, priority + i / 100))
        return [unit]

    def _kcnp_implicit(self, p: Mapping[str, Any]) -> tuple[Requirement, ...]:
        """What the agent adds to a peer's selector (pkg/k8s kcnpParseNamespacedPod,
        processNamespaceSelector): an empty namespace selector becomes "some namespace"; a
        ``pods`` peer is held to the local cluster. A ``namespaces`` peer gets no cluster label, so
        one made only of NotIn/DoesNotExist also selects what is not a pod."""
        if p.get("namespaces") is not None:
            raw_ns = p["namespaces"]
            empty = not compile_selector(raw_ns).reqs
            return (self._namespace(None),) if empty else ()
        raw_pods = p.get("pods")
        pods: Mapping[str, Any] = raw_pods if isinstance(raw_pods, Mapping) else {}
        out = [self._namespace(None)] if not compile_selector(pods.get("namespaceSelector") or {}).reqs else []
        if not compile_selector(pods.get("podSelector") or {}).names_key(CLUSTER_LABEL):
            out.append(self._cluster())
        return tuple(out)

    def _rules(self, unit: PolicyUnit, rref: RuleRef, direction: str, raw: Mapping[str, Any],
               peer_key: str, precedence: float) -> list[PolicyRule]:
        action = raw.get("action")
        if action not in _ACTIONS:
            raise PolicyError(rref.source, f"{rref.section}[{rref.index}].action: Unsupported value: "
                                           f"{action!r}: supported values: \"Accept\", \"Deny\", \"Pass\"")
        ports = self._protocols(rref, raw.get("protocols"))
        matchers: list[PeerMatcher] = []
        fail_closed = False
        out: list[PolicyRule] = []
        peers = [p for p in (raw.get(peer_key) or []) if isinstance(p, Mapping)]
        if not raw.get(peer_key):
            matchers.append(AnyPeer())
        for p in peers:
            sel = _peer_selector(p)
            if sel is not None:
                m = EndpointMatcher(sel, None, self._kcnp_implicit(p))
                if m.aggregates:
                    self.warnings.append(
                        f"{rref}: a peer of NotIn/DoesNotExist alone matches Cilium {self.agent.version}'s aggregate "
                        "identities, so it selects every pod and every address, those it excludes too (the "
                        "Kubernetes API would select only the namespaces it names): traced as Cilium does")
                matchers.append(m)
            elif direction == DIRECTION_EGRESS and p.get("nodes") is not None:
                # The agent selects the local host and remote nodes by these labels
                # (kcnpProcessNodeSelector; only with enable-node-selector-labels).
                matchers.append(NodeMatcher(compile_selector(p["nodes"]), host=True))
            elif direction == DIRECTION_EGRESS and isinstance(p.get("networks"), list):
                matchers.extend(m for m in (self._cidr(str(c), [], rref) for c in p["networks"]) if m is not None)
            elif direction == DIRECTION_EGRESS and isinstance(p.get("domainNames"), list) and action == ACTION_ACCEPT:
                names = [str(d) for d in p["domainNames"]]
                # "*.example.com" matches subdomains at any depth: Cilium writes it as "**.".
                pats = tuple(fqdn_regex(None, "*" + d if d.startswith("*.") else d) if d.startswith("*")
                             else fqdn_regex(d, None) for d in names)
                matchers.append(FQDNMatcher(pats))
                unit.dns_proxy = True
                unit.dns_names = (*unit.dns_names, *pats)
                out.append(PolicyRule(rref, direction, False, (_KUBE_DNS,), _DNS_PORTS,
                                      action=ACTION_ACCEPT, precedence=precedence))
            else:
                fail_closed = True
        if fail_closed and action != ACTION_ACCEPT:
            # A peer Cilium cannot read: a Deny or Pass rule fails closed, as a deny of everything.
            self._warn(rref, (), "unknown peer", f"a peer of this rule has no field Cilium reads: it denies "
                                                  f"every peer (fail closed); {TOO_STRICT}")
            out.append(PolicyRule(rref, direction, True, (AnyPeer(),), ports, action=ACTION_DENY,
                                  precedence=precedence))
        elif fail_closed:
            self._warn(rref, (), "unknown peer", "a peer of this rule has no field Cilium reads: it matches "
                                                  f"nothing (fail closed); {TOO_STRICT}")
        if matchers:
            out.append(PolicyRule(rref, direction, action == ACTION_DENY, tuple(matchers), ports,
                                  action=str(action), precedence=precedence))
        return out

    def _protocols(self, rref: RuleRef, raw: Any) -> tuple[PolicyPort, ...] | None:
        if not raw:
            return None  # no protocols: every port of every protocol
        if not isinstance(raw, list):
            raise PolicyError(rref.source, f"{rref.section}[{rref.index}].protocols: must be a list")
        out: list[PolicyPort] = []
        for p in raw:
            if not isinstance(p, Mapping):
                continue
            if p.get("destinationNamedPort"):
                out.append(PolicyPort(ANY_PROTOCOL, 0, 0, name=str(p["destinationNamedPort"])))
                continue
            for key, proto in _PROTOCOL_KEYS.items():
                body = p.get(key)
                if not isinstance(body, Mapping):
                    continue
                port = body.get("destinationPort")
                if not isinstance(port, Mapping):
                    out.append(PolicyPort(frozenset({proto}), 0, 0))
                elif isinstance(port.get("range"), Mapping):
                    lo, hi = int(port["range"].get("start", 0)), int(port["range"].get("end", 0))
                    if not 1 <= lo < hi <= 65535:
                        raise PolicyError(rref.source, f"{rref.section}[{rref.index}].protocols: range "
                                                       f"{lo}-{hi}: Start port must be less than End port (1-65535)")
                    out.append(PolicyPort(frozenset({proto}), lo, hi))
                else:
                    n = int(port.get("number", 0))
                    if not 1 <= n <= 65535:
                        raise PolicyError(rref.source, f"{rref.section}[{rref.index}].protocols: "
                                                       f"number {n}: must be from 1 to 65535")
                    out.append(PolicyPort(frozenset({proto}), n, n))
        return tuple(out)

    def not_read(self, obj: Mapping[str, Any], ref: SourceRef) -> None:
        """A ClusterNetworkPolicy the configured agent does not read: before 1.20, or without the
        hidden enable-k8s-cluster-network-policy (default false in 1.20.2, pkg/defaults). Nothing
        of it is enforced, which its author must be told."""
        meta = obj.get("metadata") or {}
        pref = PolicyRef(KIND_KCNP, None, str(meta.get("name", "<unnamed>")), ref)
        raw = obj.get("spec")
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        actions = {str(r.get("action")) for key in ("ingress", "egress") for r in (spec.get(key) or [])
                   if isinstance(r, Mapping)}
        why = (f"Cilium {self.agent.version} does not read ClusterNetworkPolicy" if not self.agent.at_least(1, 20)
               else f"Cilium {self.agent.version} reads ClusterNetworkPolicy only with the hidden "
                    "enable-k8s-cluster-network-policy, which is off by default (set the inventory's "
                    "cilium.enableK8sClusterNetworkPolicy: true if the agent runs with it)")
        denies = "Deny" in actions or "Pass" in actions
        self._warn(pref, (), KIND_KCNP,
                   f"{why}: nothing of it is enforced, so it is not applied here"
                   + ("; its Deny rules block nothing" if denies else ""))

    def admin_network_policy(self, obj: Mapping[str, Any], ref: SourceRef) -> list[PolicyUnit]:
        """v1alpha1 AdminNetworkPolicy / BaselineAdminNetworkPolicy: Cilium reads neither (it
        watches ClusterNetworkPolicy v1alpha2 only), so they change nothing it enforces. Named, with
        the way the verdict would be wrong on a network plugin that does enforce them."""
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        pref = PolicyRef(kind, None, str(meta.get("name", "<unnamed>")), ref)
        raw = obj.get("spec")
        spec: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
        actions = {str(r.get("action")) for key in ("ingress", "egress") for r in (spec.get(key) or [])
                   if isinstance(r, Mapping)}
        bounds = ([TOO_PERMISSIVE] if "Deny" in actions else []) + ([TOO_STRICT] if "Allow" in actions else [])
        self._warn(pref, (), kind,
                   f"{kind} (policy.networking.k8s.io/v1alpha1) is not enforced by Cilium, which reads "
                   "ClusterNetworkPolicy (v1alpha2) instead: it is not applied here; on a network plugin "
                   f"that enforces it {' and '.join(bounds) or 'the verdict is unchanged'}; "
                   "rewrite it as a ClusterNetworkPolicy")
        return []
