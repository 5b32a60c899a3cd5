"""The verdict of one side of a flow (the sender's egress or the receiver's ingress), in the
order Cilium decides it: the Admin tier of ClusterNetworkPolicy first (its first matching rule
accepts, denies or passes); then the Normal tier, where deny rules win, the local host reaches its
pods, allow rules are a union, a toFQDNs allow needs the DNS proxy and default deny decides the
rest where a policy switched it on; then the Baseline tier; then the flow is allowed.

A side is decided once per (units selecting the pod, peer, destination, port, protocol,
direction) and the rules of a side that name one peer are gathered once per (units, peer): a job
asks the same sides again for every flow and every port class, and its groups (a Master and its
Workers, told apart only by their replica-group label) are selected by the same units, which is
all a side's answer reads of its own pod (`SideVerdicts.key`).
"""

from __future__ import annotations

from collections.abc import Sequence

from topogate.analysis.netpolicy.labels import IdentityLabels
from topogate.analysis.netpolicy.model import (
    ACTION_ACCEPT,
    ACTION_PASS,
    DIRECTION_INGRESS,
    TIER_ADMIN,
    TIER_BASELINE,
    Cited,
    External,
    Peer,
    PodClass,
    PolicyRef,
    RuleRef,
    SideVerdict,
)
from topogate.analysis.netpolicy.rules import (
    FirstMatch,
    PolicyRule,
    PolicyUnit,
    meets_requirements,
    only_by_fqdn,
    tiered_order,
)
from topogate.analysis.netpolicy.selection import SelectionIndex

__all__ = ["SideVerdicts"]

# (the units selecting the pod, or the pod when none does; the destination, or its named ports
# when it is the pod): what a side's answers read of the pod and the destination (`key`)
_Who = tuple[object, object]
_SideKey = tuple[_Who, Peer, int, str, str]
# (deny rules, allow rules, toFQDNs allows that cannot work, Admin tier rules, Baseline tier
# rules) of one side that name one peer
_PairRules = tuple[FirstMatch, FirstMatch, FirstMatch, FirstMatch, FirstMatch]


class SideVerdicts:
    """Decides and remembers the verdicts of single sides for one policy set."""

    def __init__(self, selection: SelectionIndex, labels: IdentityLabels, allow_localhost: bool,
                 enforcement: str = "default") -> None:
        self.allow_localhost = allow_localhost
        # enable-policy: default (where a policy selects), always (every pod), never (no pod).
        self.enforcement = enforcement
        # Bound once: asked for every side decided.
        self._units_for = selection.units_for
        self._policies = selection.policies
        self._ctx = labels
        self._side_cache: dict[_SideKey, SideVerdict] = {}
        self._rules_cache: dict[tuple[_Who, Peer, str], _PairRules] = {}
        self._sig_cache: dict[tuple[_Who, Peer, str], tuple[object, ...]] = {}
        self._shape_cache: dict[tuple[_Who, Peer, str], tuple[object, ...]] = {}
        # The lists of a pod no policy selects, for every peer and destination: a FirstMatch
        # of no rules never reads its destination.
        empty = FirstMatch((), External())
        self._no_rules: _PairRules = (empty, empty, empty, empty, empty)

    def forget(self) -> None:
        self._side_cache.clear()
        self._rules_cache.clear()
        self._sig_cache.clear()
        self._shape_cache.clear()

    def key(self, pod: PodClass, dst: Peer) -> _Who:
        """What the answers of `pod`'s side read of the pod and of the destination: the units
        selecting the pod (SelectionIndex.units_for gives pods selected alike one tuple: its id
        stands for them; the pod itself when none selects it, since the reason then names it),
        and the destination, or only its named ports when it is the pod itself (an ingress side:
        the rules' named ports resolve against them, and nothing else of it is read)."""
        units = self._units_for(pod)
        return (id(units) if units else pod, ("self", pod.ports) if dst is pod else dst)

    def side(self, pod: PodClass, peer: Peer, dst: Peer, port: int, proto: str, direction: str) -> SideVerdict:
        """The verdict of `pod`'s side (`direction`) on traffic with `peer`, to `dst` on a port."""
        key: _SideKey = (self.key(pod, dst), peer, port, proto, direction)
        got = self._side_cache.get(key)
        if got is None:
            got = self._decide(pod, peer, dst, port, proto, direction)
            self._side_cache[key] = got
        return got

    def signature(self, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> tuple[object, ...]:
        """What the verdicts of the pod's side with this peer depend on, for every port: the
        units selecting the pod (its selection and default deny), the rules of each list that
        name the peer (by identity: a rule carries its own reference), whether the peer is the
        local host, and the pod itself where a reason names it (no policy selects it). Two
        pairs of one signature get the same verdict on every port (with the same destination
        ports: see PolicySet.port_classes)."""
        key = (self.key(pod, dst), peer, direction)
        got = self._sig_cache.get(key)
        if got is None:
            units = self._units_for(pod)
            lists = self._rules_for(pod, peer, dst, direction)
            host = (direction == DIRECTION_INGRESS and isinstance(peer, External)
                    and "host" in self._ctx.external(peer).reserved)
            got = (direction, tuple(map(id, units)), tuple(tuple(map(id, fm.rules)) for fm in lists), host,
                   None if units else pod)
            self._sig_cache[key] = got
        return got

    def shape(self, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> tuple[object, ...]:
        """What decides whether the pod's side lets a port through, as a value, leaving out
        which rule does and why: whether default deny is on, whether the peer is the local host
        (allow-localhost), and each list of rules naming the peer (`_rules_for`) as the ports,
        ICMP flag and action of its rules, in order. `_decide` reads nothing else to say
        allowed or not, so two sides of one shape allow the same ports (to a destination with
        the same named ports), whichever policies, of whichever jobs, hold the rules."""
        key = (self.key(pod, dst), peer, direction)
        got = self._shape_cache.get(key)
        if got is None:
            _, enforced_by = self._policies(pod, direction)
            # The local host's allow, exactly as step 2 of _decide has it (under policyEnforcement
            # always it also needs a selecting policy with rules of this direction).
            host = (direction == DIRECTION_INGRESS and self.allow_localhost and isinstance(peer, External)
                    and "host" in self._ctx.external(peer).reserved
                    and bool(enforced_by or (self.enforcement == "always"
                                             and any(u.has_rules[direction] for u in self._units_for(pod)))))
            got = (bool(enforced_by), host, tuple(
                tuple((r.action, r.icmp, None if r.port_set is None else r.port_set.shape) for r in fm.rules)
                for fm in self._rules_for(pod, peer, dst, direction)))
            self._shape_cache[key] = got
        return got

    def _rules_for(self, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> _PairRules:
        """(deny rules, allow rules, toFQDNs allows that cannot work) of the pod's side that name
        this peer, in policy order: which of them admits a port is all that is left to ask per
        port, so it is asked of an index built once per pair, not of every rule per port."""
        units = self._units_for(pod)
        if not units:
            return self._no_rules  # no policy selects the pod: no rule names anyone
        key = (self.key(pod, dst), peer, direction)
        got = self._rules_cache.get(key)
        if got is None:
            ctx = self._ctx
            # fromRequires/toRequires narrow the endpoint peers of every rule (meets_requirements).
            needs = [q for u in units for q in u.requires[direction]]
            needs_deny = [q for u in units for q in u.requires_deny[direction]]
            deny = [r for u in units for r in u.deny_rules[direction]
                    if r.names(peer, ctx) and meets_requirements(r, peer, ctx, needs_deny)]
            # A toFQDNs allow works only when DNS goes through Cilium's proxy (step 3 of _decide).
            proxied = any(u.dns_allows(peer) for u in units)
            allow: list[PolicyRule] = []
            stuck: list[PolicyRule] = []
            for u in units:
                for r in u.rules[direction]:
                    if r.names(peer, ctx) and meets_requirements(r, peer, ctx, needs):
                        (stuck if not proxied and only_by_fqdn(r, peer, ctx) else allow).append(r)
            tiers: dict[str, list[PolicyRule]] = {TIER_ADMIN: [], TIER_BASELINE: []}
            for u in units:
                if u.tier in tiers:
                    tiers[u.tier].extend(r for r in u.tiered[direction] if r.names(peer, ctx)
                                         and not (not proxied and only_by_fqdn(r, peer, ctx)))
            admin, baseline = (sorted(tiers[t], key=tiered_order) for t in (TIER_ADMIN, TIER_BASELINE))
            got = (FirstMatch(deny, dst), FirstMatch(allow, dst), FirstMatch(stuck, dst),
                   FirstMatch(admin, dst), FirstMatch(baseline, dst))
            self._rules_cache[key] = got
        return got

    def _decide(self, pod: PodClass, peer: Peer, dst: Peer, port: int, proto: str, direction: str) -> SideVerdict:
        if self.enforcement == "never":
            return SideVerdict(False, (), True, None, (
                f"not enforced: the agent runs with enable-policy=never (cilium.policyEnforcement), so no "
                f"policy applies and {direction} is allowed"))
        selected, enforced_by = self._policies(pod, direction)
        # enable-policy=always: every pod is in default deny both ways, with or without a policy.
        forced = self.enforcement == "always"
        deny, allow, fqdn_only, admin, baseline = self._rules_for(pod, peer, dst, direction)
        # 0. The Admin tier: its first rule naming the flow decides, unless it passes it on.
        r = admin.first(port, proto)
        if r is not None and r.action != ACTION_PASS:
            return _tiered(r, selected, enforced_by)
        # 1. Deny rules win over everything, enforced or not (docs security/policy/deny).
        r = deny.first(port, proto)
        if r is not None:
            return SideVerdict(bool(enforced_by) or forced, selected, False, r.ref, Cited("denied", r.ref),
                               enforced_by)
        # 2. The local host may reach its own pods (allow-localhost, always under Kubernetes): the
        #    agent adds an allow from the host's identity wherever a selecting policy has rules of
        #    this direction and default deny is on (pkg/policy repository.go).
        if (
            direction == DIRECTION_INGRESS
            and self.allow_localhost
            and isinstance(peer, External)
            and "host" in self._ctx.external(peer).reserved
            and (enforced_by or (forced and any(u.has_rules[direction] for u in self._units_for(pod))))
        ):
            return SideVerdict(
                True, selected, True, None,
                "allowed: the local host always reaches its pods (Cilium allow-localhost)",
                enforced_by,
            )
        # 3. Allow rules are a union over every selecting policy. A toFQDNs allow only works when
        #    DNS goes through Cilium's proxy (docs security/policy/language "DNS based": the
        #    proxy learns the names' addresses); without it the rule never matches a packet.
        r = allow.first(port, proto)
        if r is not None:
            return SideVerdict(bool(enforced_by) or forced, selected, True, r.ref, Cited("allowed", r.ref),
                               enforced_by)
        unproxied = fqdn_only.first(port, proto)
        no_proxy: RuleRef | None = None if unproxied is None else unproxied.ref
        if no_proxy is not None and (enforced_by or forced):
            return SideVerdict(True, selected, False, no_proxy, (
                f"{no_proxy} names this host, but no policy selecting the pod sends its lookup through "
                "Cilium's DNS proxy (an egress rule to kube-dns with toPorts rules: {dns: ...} whose "
                "matchName/matchPattern covers this name), so Cilium never learns its addresses and "
                "drops the traffic"), enforced_by)
        # 4. No rule of the Normal tier decided: the Baseline tier, then default deny where a
        #    selecting policy switched it on. Default deny is only the absence of an allow in the
        #    agent's map, so a Baseline Accept allows what a NetworkPolicy isolates (1.20.2: its
        #    engine shows it; the API would have the NetworkPolicy win).
        r = baseline.first(port, proto)
        if r is not None and r.action != ACTION_PASS:
            return _tiered(r, selected, enforced_by)
        return _by_default(pod, self._units_for(pod), selected, enforced_by, direction, forced)


def _tiered(rule: PolicyRule, selected: tuple[PolicyRef, ...], enforced_by: tuple[PolicyRef, ...]) -> SideVerdict:
    """A side a ClusterNetworkPolicy rule (Accept or Deny) decided."""
    ok = rule.action == ACTION_ACCEPT
    return SideVerdict(bool(enforced_by), selected, ok, rule.ref, Cited("accepted" if ok else "denied", rule.ref),
                       enforced_by)


def _by_default(pod: PodClass, units: Sequence[PolicyUnit], selected: tuple[PolicyRef, ...],
                enforced_by: tuple[PolicyRef, ...], direction: str, forced: bool = False) -> SideVerdict:
    """The verdict when no rule admits or denies the flow, and why default deny is on or off."""
    if forced and not enforced_by:
        return SideVerdict(True, selected, False, None, (
            f"default deny: the agent enforces policy on every pod (cilium.policyEnforcement: always) "
            f"and no rule allows {direction} here"))
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
