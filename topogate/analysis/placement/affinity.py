"""Step 2 of the package docstring: a job's required pod (anti-)affinity resolved into terms over
its groups and the known peers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.conflicts import (
    AntiTerms,
    Contradiction,
    contradictions,
    peer_repelled,
    repelled,
)
from topogate.analysis.placement.domains import Scope, key_scope
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.peers import AffinityPeer
from topogate.analysis.placement.terms import Term, peer_term_matches, required_terms, term_namespaces
from topogate.analysis.scheduling import HOSTNAME_LABEL, selector_matches, with_label_keys
from topogate.k8s.jobs import JobGroup

__all__ = ["Affinity", "Race", "resolve_affinity"]


@dataclass(frozen=True)
class Race:
    """A group of the job and pods outside it that never share a domain of ``key`` (required
    podAntiAffinity of either side, honoured both ways against pods already bound): which of the
    two the scheduler places second is decided by the order they come in, not by the manifests."""

    group: str
    peer: AffinityPeer
    key: str
    scope: Scope  # "zone": one zone each; "cluster": the key has one value on every node


@dataclass(frozen=True)
class Affinity:
    # Per group with pods: the one term its required podAffinity terms act as, whatever their
    # keys (None: it has none). Only pods matching it let the group start.
    required: Mapping[str, Term | None]
    # Per group: that term when it ties zones (a term on the zone key or the hostname), else ().
    zone_ties: Mapping[str, tuple[Term, ...]]
    # Per group: the groups it never shares a zone with (podAntiAffinity on the zone key, either way).
    repels: Mapping[str, frozenset[str]]
    apart: frozenset[tuple[str, str]]  # (a, b), a != b, both ways: groups that never share a zone
    self_repelling: frozenset[str]  # groups whose own pods repel each other on the zone key
    # Groups whose own pods repel each other on the hostname key: one pod per node.
    one_per_node: frozenset[str] = frozenset()
    # Groups whose required podAffinity on the hostname key matches only their own pods: every
    # pod joins the first one's node.
    one_node: frozenset[str] = frozenset()
    # Per group: its effective term when one of its required podAffinity terms is on the hostname
    # key (its pods join a node that runs a matching pod), else absent.
    host_ties: Mapping[str, Term] = None  # type: ignore[assignment]
    races: tuple[Race, ...] = ()  # podAntiAffinity with pods outside the job, either way
    # (a, b, key), a <= b: groups that repel each other on a key with one value on every node:
    # they never run at the same time (a == b: one pod of a at a time).
    never_together: frozenset[tuple[str, str, str]] = frozenset()
    # Per group: required podAffinity whose every match repels it (the same pods followed and
    # repelled, ``conflicts``).
    contradictions: Mapping[str, Contradiction] = None  # type: ignore[assignment]
    # Per group: zones taken for certain by a one-zone peer it follows and that repels it (the
    # group can start only after such a peer runs: no race, the peer is always first).
    taken: Mapping[str, frozenset[str]] = None  # type: ignore[assignment]


def resolve_affinity(inputs: Inputs) -> Affinity:
    anti = {g.name: [(t, _resolve_term(inputs, g, t)) for t in required_terms(g.spec, "podAntiAffinity")]
            for g in inputs.with_pods}
    required, zone_ties, host_ties = _pod_affinity(inputs, anti)
    repels = _repels(inputs, anti)
    names = inputs.names
    races = _races(inputs, anti)
    taken = _taken(inputs, required, races)
    return Affinity(
        required=required,
        zone_ties=zone_ties,
        repels={n: frozenset(r) for n, r in repels.items()},
        apart=frozenset((a, b) for a in names for b in sorted(repels[a]) if a != b),
        self_repelling=frozenset(n for n in names if n in repels[n]),
        one_per_node=_one_per_node(anti),
        one_node=_one_node(inputs, required),
        host_ties=host_ties,
        races=tuple(r for r in races if not _first(required, r)),
        taken=taken,
        never_together=_never_together(inputs, anti),
        contradictions=contradictions(inputs, _raw_required(inputs), anti),
    )


def _one_node(inputs: Inputs, required: Mapping[str, Term | None]) -> frozenset[str]:
    """Groups whose required podAffinity has a hostname term and matches only their own pods."""
    out = set()
    for n in inputs.names:
        e = required[n]
        if e is not None and e.targets == {n} and not e.peers and any(
                t.get("topologyKey") == HOSTNAME_LABEL for t in required_terms(inputs.groups[n].spec, "podAffinity")):
            out.add(n)
    return frozenset(out)


def _one_per_node(anti: Mapping[str, list[tuple[dict[str, Any], Term]]]) -> frozenset[str]:
    """Groups with a required podAntiAffinity term on the hostname key that matches their own pods:
    the scheduler rejects a node that already runs one of them (InterPodAffinity Filter)."""
    return frozenset(n for n, terms in anti.items()
                     if any(raw.get("topologyKey") == HOSTNAME_LABEL and n in t.targets for raw, t in terms))


def _resolve_term(inputs: Inputs, g: JobGroup, raw: Mapping[str, Any]) -> Term:
    """One required term of group `g`: its selector, namespaces, matched groups and peers."""
    job = inputs.job
    sel = with_label_keys(raw.get("labelSelector"), g.label_map, raw.get("matchLabelKeys"),
                          raw.get("mismatchLabelKeys"))
    nss = term_namespaces(raw, job.namespace, inputs.known_namespaces, inputs.namespace_labels)
    in_scope = nss is None or job.namespace in nss
    targets = frozenset(
        h.name for h in inputs.with_pods if in_scope and isinstance(sel, dict) and selector_matches(sel, h.label_map)
    )
    return Term(sel, nss, targets, tuple(inputs.peers.match(sel, nss, exclude=job.object_id)),
                frozenset({str(raw.get("topologyKey", ""))}))


def _raw_required(inputs: Inputs) -> dict[str, Term | None]:
    """Each group's effective podAffinity term as written: every pod it matches."""
    out: dict[str, Term | None] = {}
    for g in inputs.with_pods:
        raw = required_terms(g.spec, "podAffinity")
        out[g.name] = _effective(inputs, g, raw) if raw else None
    return out


def _effective(inputs: Inputs, g: JobGroup, raw: list[dict[str, Any]]) -> Term:
    """The one term a pod's required podAffinity terms act as: the pods matching all of them."""
    resolved = [_resolve_term(inputs, g, t) for t in raw]
    targets = frozenset.intersection(*(r.targets for r in resolved))
    peer_keys = set.intersection(*({(q.object_id, q.group) for q in r.peers} for r in resolved))
    return Term(None, None, targets, tuple(q for q in resolved[0].peers if (q.object_id, q.group) in peer_keys),
                frozenset(k for r in resolved for k in r.keys))


def _joinable(inputs: Inputs, n: str, eff: Term, anti: AntiTerms) -> Term:
    """The matches n can join: not those that repel it (or it them) where its affinity would
    find them, unless every match does (``conflicts`` says what that means)."""
    targets = frozenset(h for h in eff.targets if h == n or not repelled(inputs, anti, n, eff, h))
    peers = tuple(q for q in eff.peers if not peer_repelled(inputs, anti, n, eff, q))
    if (targets - {n}) or peers or (n in targets and not (eff.targets - {n}) and not eff.peers):
        return Term(eff.selector, eff.namespaces, targets, peers, eff.keys)
    return eff


def _pod_affinity(inputs: Inputs, anti: AntiTerms
                  ) -> tuple[dict[str, Term | None], dict[str, tuple[Term, ...]], dict[str, Term]]:
    """Required podAffinity: the scheduler counts, per topology domain, the existing pods that match
    ALL of the pod's required affinity terms, and needs one in the node's domain of every term's
    key (kube-scheduler InterPodAffinity plugin, satisfyPodAffinity). So the terms act as one
    effective term whose targets match every term. A term on the zone key, or on the hostname
    (same node, hence same zone), ties zones; terms on other keys only need the targets to exist."""
    required: dict[str, Term | None] = {}
    zone_ties: dict[str, tuple[Term, ...]] = {}
    host_ties: dict[str, Term] = {}
    for g in inputs.with_pods:
        raw = required_terms(g.spec, "podAffinity")
        eff: Term | None = None
        joined: Term | None = None
        if raw:
            eff = joined = _joinable(inputs, g.name, _effective(inputs, g, raw), anti)
        if joined is not None and joined.peers:
            eff = _through_peers(inputs, g.name, joined)
        required[g.name] = eff
        tied = any(t.get("topologyKey") in (inputs.zone_key, HOSTNAME_LABEL) for t in raw)
        zone_ties[g.name] = (eff,) if eff is not None and tied else ()
        if joined is not None and any(t.get("topologyKey") == HOSTNAME_LABEL for t in raw):
            host_ties[g.name] = _through_peers(inputs, g.name, joined, HOSTNAME_LABEL) if joined.peers else joined
    return required, zone_ties, host_ties


def _through_peers(inputs: Inputs, n: str, eff: Term, key: str = "") -> Term:
    """A peer that itself follows (zone or hostname key) only groups of this job, and not its own
    pods, runs only where those groups' pods are: following it is following them. Such a peer is
    replaced by those groups (all but `n`, which cannot be the first of them through the peer).
    With `key` (the hostname: where a group follows a peer onto its node), only a peer that
    follows them on that key too: one in their zone may be on a node none of them is on."""
    targets = set(eff.targets)
    kept = []
    for q in eff.peers:
        followed = _peer_follows(inputs, q)
        if key and not all(t.get("topologyKey") == key for t in q.follows):
            followed = None
        if followed is not None and followed - {n}:
            targets |= followed - {n}
        else:
            kept.append(q)
    if len(kept) == len(eff.peers):
        return eff
    return Term(eff.selector, eff.namespaces, frozenset(targets), tuple(kept), eff.keys)


def _peer_follows(inputs: Inputs, q: AffinityPeer) -> frozenset[str] | None:
    """The groups of this job a peer's required podAffinity follows, when that is all it can
    follow (no other peer, not itself) on the zone or hostname key; else None."""
    if not q.follows or not any(t.get("topologyKey") in (inputs.zone_key, HOSTNAME_LABEL) for t in q.follows):
        return None
    labels = dict(q.labels)
    if all(isinstance(t.get("labelSelector"), dict) and selector_matches(t["labelSelector"], labels) for t in q.follows):
        return None  # it may be the first of its own pods, anywhere
    groups = set(inputs.names)
    for t in q.follows:
        got = peer_term_matches(inputs, q, t)
        if got is None or any(p.object_id != q.object_id or p.group != q.group for p in got[1]):
            return None
        groups &= set(got[0])
    return frozenset(groups) or None


def _first(required: Mapping[str, Term | None], r: Race) -> bool:
    """Peer r.peer always runs before group r.group: the group follows only peers, this one among
    them, in one zone at a time."""
    e = required.get(r.group)
    return (e is not None and not e.targets and bool(r.peer.one_zone) and len(r.peer.zones) == 1
            and any((q.object_id, q.group) == (r.peer.object_id, r.peer.group) for q in e.peers)
            and all(q.one_zone == r.peer.one_zone for q in e.peers))


def _taken(inputs: Inputs, required: Mapping[str, Term | None], races: tuple[Race, ...]) -> dict[str, frozenset[str]]:
    """The zones a repelling peer that always runs first takes from each group (``_first``): its
    one zone on the zone key, every zone on a key all nodes share."""
    out: dict[str, set[str]] = {n: set() for n in inputs.names}
    for r in races:
        if _first(required, r):
            out[r.group] |= set(inputs.all_zones) if r.scope == "cluster" else set(r.peer.zones)
    return {n: frozenset(z) for n, z in out.items()}


def _repels(inputs: Inputs, anti: Mapping[str, list[tuple[dict[str, Any], Term]]]) -> dict[str, set[str]]:
    """Required podAntiAffinity on the zone key among the job's groups. It is symmetric for
    placement: the scheduler honours the incoming pod's terms and those of running pods alike."""
    repels: dict[str, set[str]] = {n: set() for n in inputs.names}
    for n in inputs.names:
        for raw, t in anti[n]:
            if raw.get("topologyKey") != inputs.zone_key:
                continue
            for h in t.targets:
                repels[n].add(h)
                repels[h].add(n)
    return repels


def _never_together(inputs: Inputs,
                    anti: Mapping[str, list[tuple[dict[str, Any], Term]]]) -> frozenset[tuple[str, str, str]]:
    """Groups repelled on a key every node shares (the region of a one-region cluster): the second
    never finds a node. A group that repels itself so runs one pod at most."""
    out: set[tuple[str, str, str]] = set()
    for n in inputs.names:
        for raw, t in anti[n]:
            key = str(raw.get("topologyKey", ""))
            if key_scope(inputs, key) != "cluster":
                continue
            for h in t.targets:
                out.add((min(n, h), max(n, h), key))
    return frozenset(out)


def _races(inputs: Inputs, anti: Mapping[str, list[tuple[dict[str, Any], Term]]]) -> tuple[Race, ...]:
    """podAntiAffinity between a group of the job and pods outside it, on the zone key or a key
    every node shares: the group's own terms, and the peers' terms that select the group."""
    found: dict[tuple[str, str, str, str], Race] = {}
    for n in inputs.names:
        for raw, t in anti[n]:
            key = str(raw.get("topologyKey", ""))
            scope = key_scope(inputs, key)
            if scope in ("zone", "cluster"):
                for q in t.peers:
                    found.setdefault((n, q.object_id, q.group, key), Race(n, q, key, scope))
    job = inputs.job
    for q in inputs.peers.with_anti():
        if q.object_id == job.object_id:
            continue
        for raw in q.anti:
            key = str(raw.get("topologyKey", ""))
            scope = key_scope(inputs, key)
            if scope not in ("zone", "cluster"):
                continue
            nss = term_namespaces(raw, q.namespace, inputs.known_namespaces, inputs.namespace_labels)
            if nss is not None and job.namespace not in nss:
                continue
            sel = raw.get("labelSelector")
            for n in inputs.names:
                if isinstance(sel, dict) and selector_matches(sel, inputs.groups[n].label_map):
                    found.setdefault((n, q.object_id, q.group, key), Race(n, q, key, scope))
    return tuple(found[k] for k in sorted(found))
