"""Kubernetes NetworkPolicy compilation: policyTypes defaulting, from/to peers, ipBlock, ports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogate.analysis.netpolicy.compiler import CompilerBase, PathMap
from topogate.analysis.netpolicy.keys import CLUSTER_LABEL, NAMESPACE_LABELS_PREFIX, POD_NAMESPACE_LABEL
from topogate.analysis.netpolicy.model import (
    DIRECTION_EGRESS,
    DIRECTION_INGRESS,
    KIND_NP,
    PolicyRef,
    RuleRef,
    SourceRef,
)
from topogate.analysis.netpolicy.peers import AnyPeer, NetworkPolicyPeerMatcher, PeerMatcher
from topogate.analysis.netpolicy.ports import PolicyPort, read_policy_port
from topogate.analysis.netpolicy.rules import PolicyRule, PolicyUnit
from topogate.analysis.netpolicy.selectors import CompiledSelector, Requirement, compile_selector

__all__ = ["NetworkPolicyCompiler"]

# Per direction: (its rules' key in the spec, its policyTypes value, the peers' key of a rule).
_SECTION_KEYS = (
    (DIRECTION_INGRESS, "ingress", "Ingress", "from"),
    (DIRECTION_EGRESS, "egress", "Egress", "to"),
)


class NetworkPolicyCompiler(CompilerBase):
    """networking.k8s.io/v1 NetworkPolicy into PolicyUnits."""

    def netpol(self, obj: Mapping[str, Any], ref: SourceRef, paths: PathMap | None) -> list[PolicyUnit]:
        meta = obj.get("metadata") or {}
        ns = str(meta.get("namespace") or "default")
        pref = PolicyRef(KIND_NP, ns, str(meta.get("name", "<unnamed>")), ref)
        spec = obj.get("spec") or {}
        if not isinstance(spec, Mapping):
            spec = {}
        types_raw = spec.get("policyTypes")
        if types_raw is not None and not isinstance(types_raw, list):
            raise ValueError("policyTypes must be a list such as [Ingress, Egress]")
        types = {str(t) for t in types_raw or ()}
        subject = compile_selector(_in_namespace(spec.get("podSelector")))
        self._unselecting(pref, ("spec", "podSelector"), subject, True)
        unit = PolicyUnit(pref, ns, subject, True, {})
        # What the agent does (pkg/k8s ParseNetworkPolicy, every version topogate knows): it adds
        # the rules of both directions whatever policyTypes says, and a default deny for a
        # direction without rules that policyTypes names (ingress also when it names no Egress,
        # as a NetworkPolicy from before policyTypes, and as the API server's defaulting does).
        isolated = {
            DIRECTION_INGRESS: bool(spec.get("ingress")) or "Ingress" in types or "Egress" not in types,
            DIRECTION_EGRESS: bool(spec.get("egress")) or "Egress" in types,
        }
        for direction, key, tname, peer_key in _SECTION_KEYS:
            unit.enforce[direction] = isolated[direction]
            unit.has_rules[direction] = isolated[direction]
            if types and spec.get(key) and tname not in types:
                self.warnings.append(
                    f"{pref}: policyTypes {sorted(types)} does not list {tname}, so the Kubernetes API "
                    f"ignores its {key} rules; Cilium {self.agent.version} applies them and isolates the "
                    f"pods' {key} (cilium/cilium#48703): traced as Cilium does")
            for i, raw in enumerate(spec.get(key) or []):
                if not isinstance(raw, Mapping):
                    continue
                rref = RuleRef(pref, key, i, self._src(paths, ("spec", key, i), ref))
                unit.rules[direction].append(self._np_rule(rref, direction, raw, ns, peer_key))
        return [unit]

    def _np_external(self, pod_sel: CompiledSelector | None, ns_sel: CompiledSelector | None,
                     ns: str) -> tuple[Requirement, ...]:
        """The whole selector the agent makes of a peer (pkg/k8s parseNetworkPolicyPeer), for
        identities that are not pods: only a labelled node (enable-node-selector-labels) carries a
        k8s label (the cluster's) that could let one match."""
        if not self.agent.enable_node_selector_labels:
            return ()
        reqs = [Requirement(r.key, r.op, r.values, r.pod_source, "k8s") for r in (pod_sel.reqs if pod_sel else ())]
        if pod_sel is None or not pod_sel.names_key(CLUSTER_LABEL):
            reqs.append(self._cluster())
        if ns_sel is None:
            reqs.append(self._namespace(ns))
        elif not ns_sel.reqs:
            reqs.append(self._namespace(None))
        else:
            reqs += [Requirement(NAMESPACE_LABELS_PREFIX + r.key, r.op, r.values, r.pod_source, "k8s")
                     for r in ns_sel.reqs]
        return tuple(reqs)

    def _np_rule(self, rref: RuleRef, direction: str, raw: Mapping[str, Any], ns: str, peer_key: str) -> PolicyRule:
        peers_raw = raw.get(peer_key) or []
        matchers: list[PeerMatcher] = []
        if not peers_raw:
            matchers.append(AnyPeer())  # missing or empty from/to: all peers
        for p in peers_raw:
            if not isinstance(p, Mapping):
                continue
            if p.get("ipBlock") is not None:
                ib = p["ipBlock"] or {}
                m = self._cidr(str(ib.get("cidr", "")), [str(x) for x in ib.get("except") or []], rref)
                if m is not None:
                    matchers.append(m)
                continue
            ns_sel = compile_selector(p["namespaceSelector"]) if p.get("namespaceSelector") is not None else None
            raw_pod = p.get("podSelector")
            pod_sel = (None if raw_pod is None else
                       compile_selector(raw_pod if ns_sel is not None else _in_namespace(raw_pod)))
            if pod_sel is None and ns_sel is None:
                continue  # an empty peer is invalid in the API; it selects nothing here
            if pod_sel is not None:
                self._unselecting(rref.policy, ("spec", rref.section, rref.index), pod_sel, False)
            matchers.append(NetworkPolicyPeerMatcher(pod_sel, ns_sel, ns, self._np_external(pod_sel, ns_sel, ns)))
        ports_raw = raw.get("ports") or []
        ports: tuple[PolicyPort, ...] | None = None
        if ports_raw:
            tcp = frozenset({"TCP"})
            ports = tuple(read_policy_port(p, tcp) for p in ports_raw if isinstance(p, Mapping))
        return PolicyRule(rref, direction, False, tuple(matchers), ports)


def _in_namespace(raw: Any) -> Any:
    """A pod selector as the agent scopes it to the policy's namespace (pkg/k8s parsePodSelector):
    it sets the namespace key of matchLabels to the policy's namespace, so a value written there
    is replaced, not ANDed."""
    if not isinstance(raw, Mapping) or not isinstance(raw.get("matchLabels"), Mapping):
        return raw
    labels = {k: v for k, v in raw["matchLabels"].items() if k != POD_NAMESPACE_LABEL}
    return {**raw, "matchLabels": labels}
