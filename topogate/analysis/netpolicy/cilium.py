"""CiliumNetworkPolicy / CiliumClusterwideNetworkPolicy compilation: subjects, default deny,
L3 peers of every kind and L4 ``toPorts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.netpolicy.compiler import TOO_PERMISSIVE, TOO_STRICT, CompilerBase, PathMap
from topogate.analysis.netpolicy.labels import CLUSTER_LABEL
from topogate.analysis.netpolicy.model import (
    DIRECTION_EGRESS,
    DIRECTION_INGRESS,
    KIND_CCNP,
    PolicyRef,
    RuleRef,
    SourceRef,
)
from topogate.analysis.netpolicy.peers import (
    AnyPeer,
    EndpointMatcher,
    EntityMatcher,
    FQDNMatcher,
    NodeMatcher,
    PeerMatcher,
    fqdn_regex,
)
from topogate.analysis.netpolicy.ports import ANY_PROTOCOL, PolicyPort, read_policy_port
from topogate.analysis.netpolicy.rules import PolicyRule, PolicyUnit
from topogate.analysis.netpolicy.sanitize import sanitize
from topogate.analysis.netpolicy.selectors import (
    CompiledSelector,
    Requirement,
    compile_selector,
    split_source,
)

__all__ = ["CiliumCompiler", "no_api_version"]


@dataclass(frozen=True)
class _SectionKeys:
    """The CRD field names of one direction of a Cilium rule (api.IngressRule / api.EgressRule),
    spelled out so that each one the evaluator reads is found by grep."""

    direction: str
    allow: str  # the spec's list of allow rules
    deny: str  # the spec's list of deny rules
    endpoints: str
    entities: str
    cidr: str
    cidr_set: str
    nodes: str
    groups: str
    requires: str  # Cilium 1.16-1.18; removed in 1.19
    fqdns: str | None = None  # egress only
    services: str | None = None  # egress only

    def l3(self) -> tuple[str, ...]:
        """The L3 peer keys of a rule of this direction, in the order their matchers are listed."""
        keys = (self.endpoints, self.entities, self.cidr, self.cidr_set, self.nodes, self.groups)
        return keys + tuple(k for k in (self.fqdns, self.services) if k is not None)


_INGRESS_KEYS = _SectionKeys(
    direction=DIRECTION_INGRESS, allow="ingress", deny="ingressDeny",
    endpoints="fromEndpoints", entities="fromEntities", cidr="fromCIDR", cidr_set="fromCIDRSet",
    nodes="fromNodes", groups="fromGroups", requires="fromRequires",
)
_EGRESS_KEYS = _SectionKeys(
    direction=DIRECTION_EGRESS, allow="egress", deny="egressDeny",
    endpoints="toEndpoints", entities="toEntities", cidr="toCIDR", cidr_set="toCIDRSet",
    nodes="toNodes", groups="toGroups", requires="toRequires", fqdns="toFQDNs", services="toServices",
)
# enableDefaultDeny's two fields.
_DEFAULT_DENY_KEYS = {DIRECTION_INGRESS: "ingress", DIRECTION_EGRESS: "egress"}


class CiliumCompiler(CompilerBase):
    """CiliumNetworkPolicy and CiliumClusterwideNetworkPolicy into PolicyUnits."""

    def cilium(self, obj: Mapping[str, Any], ref: SourceRef, paths: PathMap | None) -> list[PolicyUnit]:
        kind = str(obj.get("kind"))
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", "<unnamed>"))
        ns: str | None = None if kind == KIND_CCNP else str(meta.get("namespace") or "default")
        pref = PolicyRef(kind, ns, name, ref)
        problem = sanitize(obj, self.agent)
        if problem is not None:
            # The agent imports nothing of it: no rule, no default deny.
            self._refuse(pref, problem[0], problem[1], problem[2])
            return []
        units: list[PolicyUnit] = []
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
    ) -> PolicyUnit:
        if "endpointSelector" in spec:
            subject: CompiledSelector | None = compile_selector(spec.get("endpointSelector"))
            self._warn_reserved_subject(pref, spec.get("endpointSelector"), (*base, "endpointSelector"))
            if subject is not None:
                self._unselecting(pref, (*base, "endpointSelector"), subject, True)
        else:
            subject = None
            if "nodeSelector" in spec:
                self._warn(pref, (*base, "nodeSelector"), "nodeSelector",
                           "nodeSelector (host policy) selects nodes, not pods: ignored, so traffic to and "
                           f"from the nodes it selects is not checked; {TOO_PERMISSIVE}")
        edd = spec.get("enableDefaultDeny") or {}
        unit = PolicyUnit(pref, pref.namespace, subject, False, {})
        dns_rules = [d for r in (spec.get("egress") or []) if isinstance(r, Mapping)
                     for tp in (r.get("toPorts") or [])
                     if isinstance(tp, Mapping) and isinstance(tp.get("rules"), Mapping)
                     for d in (tp["rules"].get("dns") or []) if isinstance(d, Mapping)]
        unit.dns_proxy = bool(dns_rules)
        unit.dns_names = tuple(fqdn_regex(d.get("matchName"), d.get("matchPattern")) for d in dns_rules)
        for keys in (_INGRESS_KEYS, _EGRESS_KEYS):
            direction = keys.direction
            allow = [r for r in (spec.get(keys.allow) or []) if isinstance(r, Mapping)]
            deny = [r for r in (spec.get(keys.deny) or []) if isinstance(r, Mapping)]
            has = bool(allow) or bool(deny)
            unit.has_rules[direction] = has
            # enableDefaultDeny.<dir>: false opts out; unset means "true if this direction has rules".
            unit.enforce[direction] = has and edd.get(_DEFAULT_DENY_KEYS[direction]) is not False
            for section, rules, is_deny in ((keys.allow, allow, False), (keys.deny, deny, True)):
                for i, raw in enumerate(rules):
                    rref = RuleRef(pref, section, i, self._src(paths, (*base, section, i), pref.source), spec_index)
                    rule = self._cilium_peer_rule(rref, keys, is_deny, raw, pref, (*base, section, i))
                    (unit.deny_rules if is_deny else unit.rules)[direction].append(rule)
                    # fromRequires/toRequires (Cilium 1.16-1.18; removed in 1.19) narrow the
                    # endpoint peers of every policy selecting the pod, not only this rule's.
                    if isinstance(raw.get(keys.requires), list):
                        (unit.requires_deny if is_deny else unit.requires)[direction].extend(
                            self._endpoint_matchers(keys.requires, raw[keys.requires], pref))
        return unit

    def _warn_reserved_subject(self, pref: PolicyRef, raw: Any, path: tuple[str | int, ...]) -> None:
        """An endpointSelector that requires a label of a non-pod source (``reserved:health``,
        ``reserved:init``, ``reserved:host``) selects Cilium's own endpoints, never a pod: its rules
        guard an entity topogate treats as policy-free, so say so instead of dropping it."""
        if not isinstance(raw, Mapping):
            return
        keys = [str(k) for k in (raw.get("matchLabels") or {})]
        keys += [str(e.get("key", "")) for e in raw.get("matchExpressions") or []
                 if isinstance(e, Mapping) and e.get("operator") in ("In", "Exists")]
        for key in sorted(set(keys)):
            source, name = split_source(key)
            if source in ("k8s", "any"):
                continue
            what = f"the {name} entity" if source == "reserved" else f"{source}:{name} identities"
            self._warn(pref, path, f"endpointSelector {key}",
                       f"endpointSelector {key} selects {what}, a Cilium endpoint that is not a pod: "
                       f"its rules are not applied here, so traffic to and from {what} is judged as "
                       f"if no policy selected it; {TOO_PERMISSIVE}")

    def _cilium_peer_rule(
        self, rref: RuleRef, keys: _SectionKeys, deny: bool, raw: Mapping[str, Any], pref: PolicyRef,
        path: tuple[str | int, ...] = (),
    ) -> PolicyRule:
        given = self._l3_keys(rref, keys, raw, path)
        # An empty toFQDNs, toGroups or toServices list is as if not written: the agent checks
        # only endpoints, nodes, entities and CIDRs for an explicitly empty list
        # (pkg/policy/utils mergeEndpointSelectors), so `toFQDNs: []` with toPorts is L4-only.
        given = [k for k in given if not (k in (keys.fqdns, keys.groups, keys.services) and raw[k] == [])]
        self._rule_extras(rref, raw, path, deny)
        matchers: list[PeerMatcher] = []
        explicit_empty = False
        for k in given:
            items = raw[k]
            if not isinstance(items, list):
                continue
            if not items:
                explicit_empty = True
            matchers += self._l3_matchers(rref, keys, k, items, pref, (*path, k))
        ports, has_l4 = _to_ports(raw)
        icmp = bool(raw.get("icmps"))
        has_l4 = has_l4 or icmp
        if explicit_empty:
            peers: tuple[PeerMatcher, ...] = ()  # an explicitly empty selector list selects nobody
        elif given:
            peers = tuple(matchers)
        elif has_l4:
            peers = (AnyPeer(),)  # L4-only: every L3 peer (docs layer4 "Example (L4)")
        else:
            peers = ()  # the empty rule {} allows nothing (docs layer3 "Default Deny")
        return PolicyRule(rref, keys.direction, deny, peers, tuple(ports) if has_l4 else None, icmp)

    def _rule_extras(self, rref: RuleRef, raw: Mapping[str, Any], path: tuple[str | int, ...], deny: bool) -> None:
        """Warnings for the parts of a rule beyond L3/L4 that the evaluator does not model."""
        for key, field_name in (("authentication", "mode"), ("auth", "type")):  # auth: pre-1.14 name
            auth = raw.get(key)
            if isinstance(auth, Mapping) and auth.get(field_name) not in (None, "", "disabled"):
                self._warn(rref, (*path, key), f"{key}.{field_name}",
                           f"{key}.{field_name} {auth.get(field_name)!r} (mutual authentication) is not "
                           "modelled: the flow is judged as if no authentication were required, while "
                           f"Cilium drops it until the peers authenticate; {TOO_PERMISSIVE}")
        for j, tp in enumerate(raw.get("toPorts") or []):
            if not isinstance(tp, Mapping) or deny:
                continue
            # TLS SNI, an Envoy listener redirect and TLS interception filter or rewrite at L7.
            for extra in ("serverNames", "listener", "terminatingTLS", "originatingTLS"):
                if tp.get(extra):
                    self._warn(rref, (*path, "toPorts", j, extra), extra,
                               f"{extra} is not modelled: treated as allow-all on the ports of that "
                               f"toPorts entry; {TOO_PERMISSIVE}")
            rules = tp.get("rules")
            if not isinstance(rules, Mapping):
                continue
            kinds = sorted(k for k in rules if k != "dns" and rules.get(k))
            if kinds:
                self._warn(rref, (*path, "toPorts", j, "rules"), f"L7 rules ({', '.join(kinds)})",
                           f"L7 rules ({', '.join(kinds)}) are not modelled: treated as allow-all on "
                           f"the ports of that toPorts entry; {TOO_PERMISSIVE}")

    def _l3_keys(self, rref: RuleRef, keys: _SectionKeys, raw: Mapping[str, Any],
                 path: tuple[str | int, ...] = ()) -> list[str]:
        """The L3 peer keys the rule sets, warning about those not modelled."""
        given = [k for k in keys.l3() if k in raw and raw[k] is not None]
        for k in (keys.groups, keys.services):
            if k is not None and k in given:
                self._warn(rref, (*path, k), k, f"{k} is not modelled; it selects no peer here, so "
                                                f"what it allows is reported denied: {TOO_STRICT}")
        return given

    def _l3_matchers(self, rref: RuleRef, keys: _SectionKeys, k: str, items: list[Any],
                     pref: PolicyRef, path: tuple[str | int, ...] = ()) -> list[PeerMatcher]:
        """The matchers of one L3 key (``fromEndpoints``, ``toCIDRSet``, ...) of a rule; the groups
        and services keys give none (not modelled, warned about by `_l3_keys`)."""
        matchers: list[PeerMatcher] = []
        if k == keys.endpoints:
            matchers += self._endpoint_matchers(k, items, pref, path)
        elif k == keys.entities:
            matchers.append(EntityMatcher(frozenset(str(e) for e in items)))
        elif k == keys.cidr:
            for c in items:
                m = self._cidr(str(c), [], rref)
                if m is not None:
                    matchers.append(m)
        elif k == keys.cidr_set:
            for c in items:
                if not isinstance(c, Mapping) or "cidr" not in c:
                    self._warn(rref, (), "CIDR groups",
                               "CIDR group references (cidrGroupRef/cidrGroupSelector) are not modelled; "
                               f"they select no peer here: {TOO_STRICT}")
                    continue
                m = self._cidr(str(c["cidr"]), [str(x) for x in c.get("except") or []], rref)
                if m is not None:
                    matchers.append(m)
        elif k == keys.nodes:
            matchers.extend(NodeMatcher(compile_selector(n)) for n in items if isinstance(n, Mapping))
        elif k == keys.fqdns:
            pats = tuple(
                fqdn_regex(f.get("matchName"), f.get("matchPattern")) for f in items if isinstance(f, Mapping)
            )
            matchers.append(FQDNMatcher(pats))
        return matchers


    def _endpoint_matchers(self, k: str, items: list[Any], pref: PolicyRef,
                           path: tuple[str | int, ...] = ()) -> list[PeerMatcher]:
        """``fromEndpoints``/``toEndpoints``: label selectors, scoped like the agent scopes them
        (pkg/k8s/apis/cilium.io/utils getEndpointSelector): a selector with a ``reserved:`` key as
        written; else a CNP's to its namespace unless it names the namespace or namespace labels, a
        CCNP's to pods of any namespace unless it names one; and either to the local cluster
        unless it names the cluster label."""
        matchers: list[PeerMatcher] = []
        for j, sel_raw in enumerate(items):
            if not isinstance(sel_raw, Mapping):
                # A null entry would read as {} and select every pod: refuse it.
                raise ValueError(f"{k}[{j}] is not a label selector")
            sel = compile_selector(sel_raw)
            if sel.has_source("reserved"):
                matchers.append(EndpointMatcher(sel, None))
                continue
            self._unselecting(pref, (*path, j), sel, False)
            implicit: list[Requirement] = []
            scope: str | None = pref.namespace
            if sel.names_namespace() or (scope is not None and sel.names_namespace_labels()):
                scope = None
            elif scope is not None or pref.namespace is None:
                implicit.append(self._namespace(scope))
            if not sel.names_key(CLUSTER_LABEL):
                implicit.append(self._cluster())
            matchers.append(EndpointMatcher(sel, scope, tuple(implicit)))
        return matchers

def _to_ports(raw: Mapping[str, Any]) -> tuple[list[PolicyPort], bool]:
    """(port specs of the rule's ``toPorts``, whether it has any toPorts entry)."""
    ports: list[PolicyPort] = []
    has_l4 = False
    for pr in raw.get("toPorts") or []:
        if not isinstance(pr, Mapping):
            continue
        has_l4 = True
        # A toPorts entry without ports admits no port: the agent makes a filter per port it
        # lists (pkg/policy rule.go mergeL4Filter), and the entry keeps the rule from being L3-only.
        for p in pr.get("ports") or []:
            if isinstance(p, Mapping):
                ports.append(read_policy_port(p, ANY_PROTOCOL))
    return ports, has_l4


def no_api_version(obj: Mapping[str, Any], kind: str) -> str:
    """Why a Cilium policy without ``apiVersion`` is refused: the API server rejects it, so
    reading it as a policy (or skipping it) would judge a tree that cannot be applied."""
    near = sorted(str(k) for k in obj if str(k).lower() == "apiversion" and k != "apiVersion")
    hint = f" (the key is spelled {near[0]!r}; keys are case-sensitive)" if near else ""
    return (f"this {kind} has no apiVersion{hint}: the API server refuses it, and kubectl apply "
            "fails; write apiVersion: cilium.io/v2")
