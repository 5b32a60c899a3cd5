"""Peers: pods outside the job (other jobs' groups) that affinity selectors may match.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.placement.model import JobPlacement
from topogate.analysis.scheduling import NodeClass, PoolFit, fit_pools, selector_matches, with_label_keys
from topogate.core.labels import Pairs
from topogate.k8s.jobs import DEFAULT_NAMESPACE, GROUP_LABEL, JobGroup, TrainingJob
from topogate.k8s.kinds import pod_gpus
from topogate.k8s.pods import PlainTemplate, plain_template

__all__ = ["UNPLACED_KINDS", "AffinityPeer", "PeerIndex", "peers_of", "template_peers", "workload_jobs"]


@dataclass(frozen=True)
class AffinityPeer:
    object_id: str  # the object the pods belong to (never matched against its own job)
    group: str
    namespace: str
    labels: Pairs
    # Where its pods can be bound in some run, its own job stranded or not; () = it never runs.
    zones: tuple[str, ...]
    pods: int = 1
    # Its pods are in one zone at a time (one pod, or a group held in one zone): peers with the
    # same key share that zone. "" when its pods may spread.
    one_zone: str = ""
    pools: tuple[tuple[str, str], ...] = ()  # (zone, pool) its pods can run on; () = unknown
    # Its required podAntiAffinity terms (matchLabelKeys merged), which repel the pods they select
    # from wherever its pods run.
    anti: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    # Its required podAffinity terms (matchLabelKeys merged): where its pods can be depends on
    # the pods they follow.
    follows: tuple[dict[str, Any], ...] = field(default=(), compare=False)
    # The pools its pods fit (() = unknown) and the GPUs each asks for: whether all of its pods
    # may be bound away from a group that follows it (follow.follower_risks).
    fits: tuple[PoolFit, ...] = field(default=(), compare=False)
    gpus_per_pod: int = field(default=0, compare=False)

    @property
    def name(self) -> str:
        """How a message names it: a workload by its object, a group of a job with its job."""
        kind = self.object_id.split("/", 1)[0]
        return self.object_id if self.group.startswith(f"{kind}/") else f"{self.group} of {self.object_id}"


def anti_terms(spec: Mapping[str, Any], labels: Mapping[str, str],
               which: str = "podAntiAffinity") -> tuple[dict[str, Any], ...]:
    """A pod spec's required podAntiAffinity (or podAffinity) terms, matchLabelKeys and
    mismatchLabelKeys merged into their selectors (as the API server does for a pod of these
    labels)."""
    aff = spec.get("affinity")
    block = aff.get(which) if isinstance(aff, dict) else None
    terms = block.get("requiredDuringSchedulingIgnoredDuringExecution") if isinstance(block, dict) else None
    out = []
    for t in terms if isinstance(terms, list) else []:
        if isinstance(t, dict):
            sel = with_label_keys(t.get("labelSelector"), labels, t.get("matchLabelKeys"), t.get("mismatchLabelKeys"))
            out.append({**t, "labelSelector": sel})
    return tuple(out)


class PeerIndex:
    """Peers by namespace and label, so matching a selector costs the matches, not all peers."""

    def __init__(self, peers: Iterable[AffinityPeer] = (), keep_unplaced: bool = False) -> None:
        # A peer that never runs has no pods to match (unless asked: who could ever match).
        self._peers: list[AffinityPeer] = [p for p in peers if p.zones or keep_unplaced]
        self._by_ns: dict[str, list[int]] = {}
        self._by_label: dict[tuple[str, str, str], list[int]] = {}
        self._by_key: dict[tuple[str, str], list[int]] = {}
        self._anti = [p for p in self._peers if p.anti]
        for i, p in enumerate(self._peers):
            self._by_ns.setdefault(p.namespace, []).append(i)
            for k, v in p.labels:
                self._by_label.setdefault((p.namespace, k, v), []).append(i)
                self._by_key.setdefault((p.namespace, k), []).append(i)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_ns))

    def with_anti(self) -> list[AffinityPeer]:
        """The peers with required podAntiAffinity terms (which may repel the job's pods)."""
        return self._anti

    def by_id(self, object_id: str) -> list[AffinityPeer]:
        return [p for p in self._peers if p.object_id == object_id]

    def _candidates(self, selector: Mapping[str, Any], ns: str) -> list[int]:
        ml = selector.get("matchLabels")
        postings: list[list[int]] = []
        if isinstance(ml, dict):
            postings += [self._by_label.get((ns, str(k), str(v)), []) for k, v in ml.items()]
        for req in selector.get("matchExpressions") or []:
            if not isinstance(req, dict):
                continue
            key = str(req.get("key", ""))
            if req.get("operator") == "In":
                vals = req.get("values") if isinstance(req.get("values"), list) else []
                assert isinstance(vals, list)
                postings.append(sorted({i for v in vals for i in self._by_label.get((ns, key, str(v)), [])}))
            elif req.get("operator") == "Exists":
                postings.append(self._by_key.get((ns, key), []))
        if postings:
            return min(postings, key=len)
        return self._by_ns.get(ns, [])

    def match(self, selector: Any, namespaces: frozenset[str] | None, exclude: str = "") -> list[AffinityPeer]:
        if not isinstance(selector, dict):
            return []
        out: list[AffinityPeer] = []
        for ns in sorted(self._by_ns) if namespaces is None else sorted(namespaces):
            for i in self._candidates(selector, ns):
                p = self._peers[i]
                if p.object_id != exclude and selector_matches(selector, dict(p.labels)):
                    out.append(p)
        return out


def peers_of(placements: Iterable[tuple[TrainingJob, JobPlacement]]) -> list[AffinityPeer]:
    """Every group of already placed jobs, as peers for the others: where its pods can be bound in
    some run (its ``reach``, wider than the zones of a placement that runs the whole job)."""
    out: list[AffinityPeer] = []
    for job, pl in placements:
        for g in job.groups:
            gp = pl.group(g.name)
            if gp is None or g.pods <= 0:
                continue
            # Groups of one unit held in one zone share it: one key for all of them.
            one = ""
            if gp.held and gp.unit >= 0:
                one = f"{job.object_id}#unit{gp.unit}"
            elif g.pods == 1:
                one = f"{job.object_id}#{g.name}"
            fits = tuple(f for f in gp.fits if f.fits and f.zone in gp.reach)
            pools = tuple(sorted({(f.zone, f.pool) for f in fits}))
            out.append(AffinityPeer(job.object_id, g.name, job.namespace, g.labels, gp.reach, g.pods, one, pools,
                                    anti_terms(g.spec, g.label_map), anti_terms(g.spec, g.label_map, "podAffinity"),
                                    fits, g.gpus_per_pod))
    return out


def _template_pods(kind: str, spec: Mapping[str, Any]) -> int:
    """Pods a workload's controller keeps running: replicas (default 1), a Job's parallelism;
    a DaemonSet's are counted as one (it runs on every node it fits); a CronJob's come and go."""
    if kind == "CronJob":
        return 0
    key = {"Job": "parallelism", "Pod": "", "DaemonSet": ""}.get(kind, "replicas")
    raw = spec.get(key, 1) if key else 1
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else (1 if raw is None else 0)


# Workloads whose pods are not placed like a job's: a DaemonSet runs one on every node it fits, a
# CronJob's come and go. Their pods are peers where their node filters let them.
UNPLACED_KINDS = ("DaemonSet", "CronJob")


def _plain_workloads(objects: Iterable[Mapping[str, Any]]) -> Iterator[tuple[str, str, str, PlainTemplate, int]]:
    """(kind, name, namespace, pod template, pods) of each workload among the manifests that
    belongs to no training job (a feature store's Deployment, a StatefulSet) and runs pods."""
    for obj in objects:
        kind, md = str(obj.get("kind", "")), obj.get("metadata")
        if not isinstance(md, dict):
            continue
        name = str(md.get("name", ""))
        tpl = plain_template(kind, name, obj)
        spec = obj.get("spec")
        if tpl is None or GROUP_LABEL in tpl.labels or not isinstance(spec, dict):
            continue
        pods = _template_pods(kind, spec)
        if pods:
            yield kind, name, str(md.get("namespace") or DEFAULT_NAMESPACE), tpl, pods


def workload_jobs(objects: Iterable[Mapping[str, Any]]) -> list[TrainingJob]:
    """The plain workloads, each as a job of one group named Kind/name, so that their own
    affinity, spread and filters decide where their pods can be, as for a job's."""
    out: list[TrainingJob] = []
    for kind, name, ns, tpl, pods in _plain_workloads(objects):
        group = JobGroup(f"{kind}/{name}", pods, pod_gpus(tpl.spec), tuple(sorted(tpl.labels.items())), tpl.spec,
                         tpl.path, None, f"{kind}/{ns}/{name}")
        out.append(TrainingJob(kind, name, ns, (group,)))
    return out


def template_peers(
    objects: Iterable[Mapping[str, Any]], classes: tuple[NodeClass, ...], cache: dict[Any, tuple[PoolFit, ...]],
) -> list[AffinityPeer]:
    """The pods of the plain workloads: any of them can be what a podAffinity term follows. Where
    they land is where their node filters let them (their own pod affinity is not followed)."""
    out: list[AffinityPeer] = []
    for kind, name, ns, tpl, pods in _plain_workloads(objects):
        fits = [f for f in fit_pools(tpl.spec, classes, cache) if f.fits]
        zones = tuple(sorted({f.zone for f in fits}))
        oid = f"{kind}/{ns}/{name}"
        out.append(AffinityPeer(oid, f"{kind}/{name}", ns, tuple(sorted(tpl.labels.items())), zones, pods,
                                oid if pods == 1 and kind != "DaemonSet" else "",
                                tuple(sorted({(f.zone, f.pool) for f in fits})), anti_terms(tpl.spec, tpl.labels),
                                anti_terms(tpl.spec, tpl.labels, "podAffinity")))
    return out
