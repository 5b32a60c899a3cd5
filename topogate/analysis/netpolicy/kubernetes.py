"""Kubernetes NetworkPolicy compilation: policyTypes defaulting, from/to peers, ipBlock, ports.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from topogate.analysis.netpolicy.compiler import CompilerBase, PathMap
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
from topogate.analysis.netpolicy.selectors import compile_selector

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
        if types_raw:
            types = {str(t) for t in types_raw}
        else:
            # API defaulting: Ingress always, Egress when there are egress rules.
            types = {"Ingress"} | ({"Egress"} if spec.get("egress") else set())
        unit = PolicyUnit(pref, ns, compile_selector(spec.get("podSelector")), True, {})
        for direction, key, tname, peer_key in _SECTION_KEYS:
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
            pod_sel = compile_selector(p["podSelector"]) if p.get("podSelector") is not None else None
            ns_sel = compile_selector(p["namespaceSelector"]) if p.get("namespaceSelector") is not None else None
            if pod_sel is None and ns_sel is None:
                continue  # an empty peer is invalid in the API; it selects nothing here
            matchers.append(NetworkPolicyPeerMatcher(pod_sel, ns_sel, ns))
        ports_raw = raw.get("ports") or []
        ports: tuple[PolicyPort, ...] | None = None
        if ports_raw:
            tcp = frozenset({"TCP"})
            ports = tuple(read_policy_port(p, tcp) for p in ports_raw if isinstance(p, Mapping))
        return PolicyRule(rref, direction, False, tuple(matchers), ports)
