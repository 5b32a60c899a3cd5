"""Evaluation: the PolicySet of one cluster, per-pair verdicts (default deny, deny wins,
allow-localhost, FQDN needs the DNS proxy) and port classes.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from topogate.analysis.netpolicy.cilium import _CiliumCompiler, no_api_version
from topogate.analysis.netpolicy.kubernetes import _NetpolCompiler
from topogate.analysis.netpolicy.model import (
    _CLUSTER_LABEL,
    _EGRESS,
    _INGRESS,
    _MAX_PORT,
    _META_NAME,
    _NS_LABEL,
    _NS_LABELS_PREFIX,
    _SA_LABEL,
    KIND_CCNP,
    KIND_CNP,
    KIND_NP,
    Cited,
    External,
    Peer,
    PodClass,
    PolicyError,
    PolicyRef,
    RuleRef,
    SideVerdict,
    SourceRef,
    Verdict,
)
from topogate.analysis.netpolicy.peers import _Ctx
from topogate.analysis.netpolicy.ports import PortRange
from topogate.analysis.netpolicy.rules import (
    NotModelled,
    PathMap,
    _FirstMatch,
    _meets_requirements,
    _only_by_fqdn,
    _Rule,
    _sort_key,
    _Unit,
)
from topogate.analysis.netpolicy.scope import _Scope

# ---------------------------------------------------------------------------------------------
# The policy set
# ---------------------------------------------------------------------------------------------

_SideKey = tuple[PodClass, Peer, Peer, int, str, str]
L4_PROTOCOLS = ("TCP", "UDP", "SCTP")


class _Builder(_CiliumCompiler, _NetpolCompiler):
    """Turns raw objects into _Units; collects warnings about what is not modelled."""


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
        self.not_modelled: list[NotModelled] = []  # the warnings, structured (from_objects)
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
        self._scopes: dict[str, _Scope] = {}
        self._side_cache: dict[_SideKey, SideVerdict] = {}
        self._rules_cache: dict[tuple[PodClass, Peer, Peer, str], tuple[_FirstMatch, _FirstMatch, _FirstMatch]] = {}
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
            elif kind in (KIND_CNP, KIND_CCNP) and not api:
                raise PolicyError(ref, no_api_version(obj, kind))
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
            except PolicyError:
                raise
            except (AttributeError, TypeError, ValueError, KeyError, IndexError) as err:
                # A policy the API server would reject (wrong types): say where, never crash.
                kind = obj.get("kind", "object") if isinstance(obj, Mapping) else "object"
                raise PolicyError(ref, f"cannot read this {kind}: {type(err).__name__}: {err}; "
                                       "check it against the CRD schema") from None
        pset = cls(
            units,
            ns_labels,
            warnings=builder.warnings,
            cluster_name=cluster_name,
            allow_localhost=allow_localhost,
        )
        pset.not_modelled = list(builder.not_modelled)
        return pset

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
            scope = self._scopes.get(pod.namespace)
            if scope is None:
                # Only the clusterwide policies and those of the pod's own namespace can select it.
                scope = _Scope(self._clusterwide + self._by_ns.get(pod.namespace, []))
                self._scopes[pod.namespace] = scope
            got = scope.selecting(pod, self._ctx)
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

    def _rules_for(self, pod: PodClass, peer: Peer, dst: Peer,
                   direction: str) -> tuple[_FirstMatch, _FirstMatch, _FirstMatch]:
        """(deny rules, allow rules, toFQDNs allows that cannot work) of the pod's side that name
        this peer, in policy order: which of them admits a port is all that is left to ask per
        port, so it is asked of an index built once per pair, not of every rule per port."""
        key = (pod, peer, dst, direction)
        got = self._rules_cache.get(key)
        if got is None:
            ctx = self._ctx
            units = self._units_for(pod)
            # fromRequires/toRequires narrow the endpoint peers of every rule (_meets_requirements).
            needs = [q for u in units for q in u.requires[direction]]
            needs_deny = [q for u in units for q in u.requires_deny[direction]]
            deny = [r for u in units for r in u.deny_rules[direction]
                    if r.names(peer, ctx) and _meets_requirements(r, peer, ctx, needs_deny)]
            # A toFQDNs allow works only when DNS goes through Cilium's proxy (step 3 of _decide).
            proxied = any(u.dns_allows(peer) for u in units)
            allow: list[_Rule] = []
            stuck: list[_Rule] = []
            for u in units:
                for r in u.rules[direction]:
                    if r.names(peer, ctx) and _meets_requirements(r, peer, ctx, needs):
                        (stuck if not proxied and _only_by_fqdn(r, peer, ctx) else allow).append(r)
            got = (_FirstMatch(deny, dst), _FirstMatch(allow, dst), _FirstMatch(stuck, dst))
            self._rules_cache[key] = got
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
        deny, allow, fqdn_only = self._rules_for(pod, peer, dst, direction)
        # 1. Deny rules win over everything, enforced or not (docs security/policy/deny).
        r = deny.first(port, proto)
        if r is not None:
            return SideVerdict(bool(enforced_by), selected, False, r.ref, Cited("denied", r.ref), enforced_by)
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
        r = allow.first(port, proto)
        if r is not None:
            return SideVerdict(bool(enforced_by), selected, True, r.ref, Cited("allowed", r.ref), enforced_by)
        unproxied = fqdn_only.first(port, proto)
        no_proxy: RuleRef | None = None if unproxied is None else unproxied.ref
        if no_proxy is not None and enforced_by:
            return SideVerdict(True, selected, False, no_proxy, (
                f"{no_proxy} names this host, but no policy selecting the pod sends its lookup through "
                "Cilium's DNS proxy (an egress rule to kube-dns with toPorts rules: {dns: ...} whose "
                "matchName/matchPattern covers this name), so Cilium never learns its addresses and "
                "drops the traffic"), enforced_by)
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
                rules += [r for r in u.deny_rules[_EGRESS] + u.rules[_EGRESS] if r.names(dst, ctx)]
        if isinstance(dst, PodClass):
            for u in self._units_for(dst):
                rules += [r for r in u.deny_rules[_INGRESS] + u.rules[_INGRESS] if r.names(src, ctx)]
        out: list[PortRange] = []
        for proto in (p.upper() for p in protocols):
            cuts = {1, _MAX_PORT + 1}
            for r in rules:
                for lo, hi in r.port_set.edges(proto, dst) if r.port_set is not None else ():
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

    # -- the boundary proof --------------------------------------------------------------------
    def closed(self, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> bool:
        """True when no port of any protocol can pass this side: default deny is on and no allow
        rule of a selecting policy names the peer. A cheap answer before cutting port classes."""
        _, enforced_by = self._selection(pod, direction)
        if not enforced_by:
            return False
        ctx = self._ctx
        for u in self._units_for(pod):
            for r in u.rules[direction]:
                if r.names(peer, ctx):
                    return False
        return True

    def open_ranges(self, src: Peer, dst: Peer,
                    protocols: Sequence[str] = L4_PROTOCOLS) -> list[PortRange]:
        """Every maximal port range, per L4 protocol, on which src reaches dst (all 65,535 ports
        of TCP, UDP and SCTP, cut at every port a rule for this pair names)."""
        if isinstance(src, PodClass) and self.closed(src, dst, dst, _EGRESS):
            return []
        if isinstance(dst, PodClass) and self.closed(dst, src, dst, _INGRESS):
            return []
        return [r for r in self.port_classes(src, dst, protocols) if r.verdict.allowed]

    def allow_matchers(self, pod: PodClass, direction: str) -> list[Any]:
        """The peer matchers of every allow rule that applies to the pod in `direction`: where a
        policy may open a door, so the proof knows which other pods to ask about."""
        return [m for u in self._units_for(pod) for r in u.rules[direction] for m in r.peers]

    def peer_labels(self, pod: PodClass) -> Mapping[str, str]:
        """The labels a peer selector sees on the pod (namespace and cluster labels included)."""
        return self._pod_labels(pod)

    def matches_peer(self, matcher: Any, peer: Peer) -> bool:
        return bool(matcher.matches(peer, self._ctx))



def matcher_anchor(matcher: Any) -> tuple[str | None, tuple[tuple[str, frozenset[str]], ...]] | None:
    """(namespace scope, (label key, values) pairs) that a pod must all carry for an endpoint
    matcher to select it, or None when the matcher has no such anchor (entities, `{}`, only
    NotIn/Exists): anchored matchers are answered from a label index instead of a scan over
    every pod, through their most selective pair."""
    sel = getattr(matcher, "sel", None)
    if sel is None:
        sel, scope = getattr(matcher, "pod_sel", None), getattr(matcher, "policy_ns", None)
        if sel is None or getattr(matcher, "ns_sel", None) is not None:
            return None
    else:
        scope = matcher.scope_ns
    pairs = tuple((r.key, r.values) for r in sel.reqs if r.op == "In" and r.pod_source)
    return (scope, pairs) if pairs else None
