"""Required podAffinity whose every match repels the pod: the same pods followed and repelled.

The scheduler places a pod with required podAffinity only on a node whose domain (of each
term's key) already runs a pod matching all its terms, or anywhere when no such pod exists yet
and the pod matches its terms itself ("the first pod in a series that have affinity to
themselves", InterPodAffinity satisfyPodAffinity). Required podAntiAffinity, its own or that of a
pod already running, keeps it out of the domain of every pod it selects (satisfyPodAntiAffinity,
satisfyExistingPodsAntiAffinity). When every pod the affinity matches is also repelled in a domain
at least as wide as the affinity's (the same key; the hostname inside any; a key every node shares
around any), no existing pod can satisfy the affinity. A matched pod that can run only in a
domain holding pods that repel the pod (its own required podAffinity, on a key inside the
affinity's, matches only such pods, and not itself) repels it there too:

- a group that does not match its own affinity never starts;
- a group that does starts only while no matching pod exists: its first pod only, and only if it
  comes before every other matching pod (order-dependent, a pending risk); a second pod of a
  group that repels itself too never starts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.domains import covers
from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.placement.peers import AffinityPeer
from topogate.analysis.placement.terms import Term, peer_term_matches, term_namespaces
from topogate.analysis.scheduling import selector_matches
from topogate.core.words import plural

__all__ = ["AntiTerms", "Contradiction", "contradictions", "peer_repelled", "repelled"]


@dataclass(frozen=True)
class Contradiction:
    group: str
    followed: tuple[str, ...]  # what its affinity matches besides itself, named for a message
    never: bool  # it never starts (its affinity does not match itself)
    at_most_one: bool  # only its first pod starts
    must_be_first: bool  # it starts only before every pod it follows

    def message(self, pods: int) -> str:
        them = ", ".join(self.followed)
        if self.never:
            return (f"{self.group} requires podAffinity with {them}, which it repels on the same key (podAntiAffinity: "
                    "its own, theirs, or that of the pods they follow there): no pod can satisfy it, it never starts")
        if self.at_most_one:
            return (f"{self.group} requires podAffinity with pods it also repels on the same key (podAntiAffinity): "
                    f"only its first pod starts, the other {plural(pods - 1, 'pod')} stay Pending")
        return (f"{self.group} requires podAffinity with pods it repels on the same key (podAntiAffinity): it starts "
                f"only if it comes before {them}; whichever of them starts first, it stays Pending")


AntiTerms = Mapping[str, Sequence[tuple[dict[str, Any], Term]]]


def contradictions(inputs: Inputs, required: Mapping[str, Term | None], anti: AntiTerms) -> dict[str, Contradiction]:
    out: dict[str, Contradiction] = {}
    for n in inputs.names:
        e = required[n]
        if e is None:
            continue
        others: list[str] = sorted(e.targets - {n})
        peers = list(e.peers)
        if not others and not peers and n not in e.targets:
            continue  # nothing to follow: "requires pods that do not exist" (feasible)
        if not all(repelled(inputs, anti, n, e, h) for h in others):
            continue
        if not all(peer_repelled(inputs, anti, n, e, q) for q in peers):
            continue
        names = (*others, *(q.name for q in peers))
        if n not in e.targets:
            if names:
                out[n] = Contradiction(n, names, True, False, False)
            continue
        pods = inputs.groups[n].pods
        if repelled(inputs, anti, n, e, n) and pods >= 2:
            out[n] = Contradiction(n, names, False, True, False)
        elif names:
            out[n] = Contradiction(n, names, False, False, True)
    return out


def _covered(inputs: Inputs, e: Term, key: str) -> bool:
    return any(covers(inputs, k, key) for k in e.keys)


def repelled(inputs: Inputs, anti: AntiTerms, n: str, e: Term, h: str) -> bool:
    """Group h's pods, where n's affinity would find them, repel n (n's terms or h's)."""
    if any(h in t.targets and _covered(inputs, e, str(raw.get("topologyKey", ""))) for raw, t in anti[n]):
        return True
    return any(n in t.targets and _covered(inputs, e, str(raw.get("topologyKey", ""))) for raw, t in anti[h])


def peer_repelled(inputs: Inputs, anti: AntiTerms, n: str, e: Term, q: AffinityPeer) -> bool:
    """Peer q's pods, where n's affinity would find them, repel n (n's terms or q's), or bring a
    pod that does (``_trails_repellers``)."""
    return _repels(inputs, anti, n, e, q) or _trails_repellers(inputs, anti, n, e, q)


def _repels(inputs: Inputs, anti: AntiTerms, n: str, e: Term, q: AffinityPeer) -> bool:
    for raw, t in anti[n]:
        if any((p.object_id, p.group) == (q.object_id, q.group) for p in t.peers) and _covered(
                inputs, e, str(raw.get("topologyKey", ""))):
            return True
    labels = inputs.groups[n].label_map
    for raw in q.anti:
        nss = term_namespaces(raw, q.namespace, inputs.known_namespaces, inputs.namespace_labels)
        if nss is not None and inputs.job.namespace not in nss:
            continue
        sel = raw.get("labelSelector")
        if isinstance(sel, dict) and selector_matches(sel, labels) and _covered(inputs, e, str(raw.get("topologyKey", ""))):
            return True
    return False


def _trails_repellers(inputs: Inputs, anti: AntiTerms, n: str, e: Term, q: AffinityPeer) -> bool:
    """Peer q runs only in a domain of n's affinity that runs a pod repelling n: a required
    podAffinity term of q, on a key inside n's affinity's (the same zone, say), matches pods
    that all repel n there, and not q itself (q is never the first of its own series). Where n
    would find q, such a pod runs: a Master following its Workers by zone, whose Workers repel
    n by zone, repels n too."""
    for raw in q.follows:
        got = peer_term_matches(inputs, q, raw)
        if got is None or got[2] or not any(covers(inputs, str(raw.get("topologyKey", "")), k) for k in e.keys):
            continue  # (matching itself, q may start first, with no pod of the series beside it)
        groups, peers = got[0], [p for p in got[1] if (p.object_id, p.group) != (q.object_id, q.group)]
        if (groups or peers) and all(repelled(inputs, anti, n, e, h) for h in groups) and all(
                _repels(inputs, anti, n, e, p) for p in peers):
            return True
    return False
