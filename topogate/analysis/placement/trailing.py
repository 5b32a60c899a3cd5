"""Trailing sets across jobs: groups of several jobs and workloads of one cluster whose pods all
land in the zone of the first of them, because each follows (required podAffinity on the zone
or hostname key) only pods of the set.

``fixpoint.trailing_sets`` finds such sets inside one job. A chain through another job escapes
it: a worker that follows another job's launcher, which follows the first job's master, can land
only where the master is, though no term of the job ties the two. The scheduler's rule
(InterPodAffinity, satisfyPodAffinity): a pod with required podAffinity goes into a domain of
each term's key that holds an existing pod matching all its terms; when no pod anywhere matches
them and the pod matches them itself, it may go anywhere (the first of its kind).

So, for a set K where every member's matching pods are all pods of K:
- a member that does not match its own terms waits until one of K runs, then joins its zone;
- a member that does (a possible first) goes anywhere only while none of K it matches runs;
- a member of one pod whose terms tie no zones is a possible first too, and chooses once.
When every possible first matches every other possible first, the first pod of K to be bound is
the only one that chooses its zone, and by induction on the order pods are bound, every later pod
finds its matches in that zone alone. What this reads of pods outside the manifests is what the
rest of the placement analysis reads: none.

The induction holds while no pod of K is replaced: the terms are IgnoredDuringExecution, and a
possible first that is recreated (a Deployment's rollout runs the old and the new pod at once)
chooses again. So only the judged job's own groups may be its possible firsts, as inside one job
(``fixpoint.trailing_sets``), where a recreated coordinator is the same risk; the pods of other
jobs and workloads, which live and die on their own, may only follow. A term whose
matchLabelKeys or mismatchLabelKeys name a label the template does not carry (a per-pod label a
controller adds: an index, a template hash) selects per pod at run time: its group is no member.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from topogate.analysis.placement.peers import PeerIndex
from topogate.analysis.placement.terms import required_terms, term_namespaces
from topogate.analysis.scheduling import HOSTNAME_LABEL, with_label_keys
from topogate.k8s.jobs import TrainingJob

__all__ = ["trailing_across"]

Group = tuple[str, str]  # (object id, group name)

DEFAULT_SCHEDULER = "default-scheduler"


def _matches(job: TrainingJob, spec: Mapping[str, object], labels: Mapping[str, str], index: PeerIndex,
             known: set[str], ns_labels: Mapping[str, Mapping[str, str]], zone_key: str) -> frozenset[Group] | None:
    """The groups whose pods match all the group's required podAffinity terms, when one of the
    terms ties zones (zone key, or the hostname: one node is in one zone); else None."""
    raw = required_terms(spec, "podAffinity")
    if not raw or not any(t.get("topologyKey") in (zone_key, HOSTNAME_LABEL) for t in raw):
        return None
    for t in raw:
        for keys in (t.get("matchLabelKeys"), t.get("mismatchLabelKeys")):
            if isinstance(keys, list) and any(str(k) not in labels for k in keys):
                return frozenset()  # narrowed per pod by a label only the pod has: no member
    found: frozenset[Group] | None = None
    for t in raw:
        sel = with_label_keys(t.get("labelSelector"), labels, t.get("matchLabelKeys"), t.get("mismatchLabelKeys"))
        nss = term_namespaces(t, job.namespace, known | {job.namespace}, ns_labels)
        hits = frozenset((p.object_id, p.group) for p in index.match(sel, nss))
        found = hits if found is None else found & hits
    return found


def trailing_across(everyone: Sequence[TrainingJob], index: PeerIndex, known: set[str],
                    ns_labels: Mapping[str, Mapping[str, str]], zone_key: str) -> dict[str, tuple[frozenset[str], ...]]:
    """Per job (object id), the sets of its groups that a trailing set of the cluster holds in one
    zone (two or more of its groups each, the set's possible firsts all its own). ``index`` holds every group of ``everyone`` and the
    pods of the workloads not placed like a job (never members: their pods go where their node
    filters let them)."""
    follows: dict[Group, frozenset[Group]] = {}
    anchors: set[Group] = set()  # one pod whose zone no term ties: it goes anywhere, once
    for job in everyone:
        for g in job.groups:
            if g.pods <= 0:
                continue
            name = g.spec.get("schedulerName")
            if name not in (None, "", DEFAULT_SCHEDULER):
                continue  # another scheduler: its reading of podAffinity is not modelled here
            m = _matches(job, g.spec, g.label_map, index, known, ns_labels, zone_key)
            if m:
                follows[(job.object_id, g.name)] = m
            elif m is None and g.pods == 1:
                anchors.add((job.object_id, g.name))
                follows[(job.object_id, g.name)] = frozenset()
    # The largest set whose members follow only members: drop any that follows something else.
    members = set(follows)
    changed = True
    while changed:
        changed = False
        for k in sorted(members):
            if not follows[k] <= members:
                members.discard(k)
                changed = True
    out: dict[str, list[frozenset[str]]] = {}
    for component in _components(members, follows):
        firsts = [k for k in component if k in follows[k] or k in anchors]
        if not firsts or not all(a == b or b in follows[a] for a in firsts for b in firsts):
            continue  # none starts, or two possible firsts each free of the other: two zones
        owners = {oid for oid, _ in firsts}
        if len(owners) != 1:
            continue  # a first of another job or workload may be recreated apart (module doc)
        owner = next(iter(owners))
        groups = {group for oid, group in component if oid == owner}
        if len(groups) > 1:
            out.setdefault(owner, []).append(frozenset(groups))
    return {oid: tuple(sorted(sets, key=sorted)) for oid, sets in sorted(out.items())}


def _components(members: set[Group], follows: Mapping[Group, frozenset[Group]]) -> list[list[Group]]:
    """Members connected by following, either way, each component sorted."""
    edges: dict[Group, set[Group]] = {k: set() for k in members}
    for k in members:
        for h in follows[k]:
            edges[k].add(h)
            edges[h].add(k)
    seen: set[Group] = set()
    out: list[list[Group]] = []
    for k in sorted(members):
        if k in seen:
            continue
        todo, comp = [k], []
        seen.add(k)
        while todo:
            m = todo.pop()
            comp.append(m)
            for h in sorted(edges[m] - seen):
                seen.add(h)
                todo.append(h)
        out.append(sorted(comp))
    return out
