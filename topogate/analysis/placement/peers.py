"""Peers: pods outside the job (other jobs' groups) that affinity selectors may match.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.placement.model import JobPlacement
from topogate.analysis.scheduling import NodeClass, PoolFit, fit_pools, selector_matches
from topogate.core.labels import Pairs
from topogate.k8s.jobs import DEFAULT_NAMESPACE, GROUP_LABEL, TrainingJob
from topogate.k8s.pods import plain_template

__all__ = ["AffinityPeer", "PeerIndex", "peers_of", "template_peers"]


@dataclass(frozen=True)
class AffinityPeer:
    object_id: str  # the object the pods belong to (never matched against its own job)
    group: str
    namespace: str
    labels: Pairs
    zones: tuple[str, ...]  # where its pods can land; () = it never runs


class PeerIndex:
    """Peers by namespace and label, so matching a selector costs the matches, not all peers."""

    def __init__(self, peers: Iterable[AffinityPeer] = ()) -> None:
        self._peers: list[AffinityPeer] = [p for p in peers if p.zones]
        self._by_ns: dict[str, list[int]] = {}
        self._by_label: dict[tuple[str, str, str], list[int]] = {}
        self._by_key: dict[tuple[str, str], list[int]] = {}
        for i, p in enumerate(self._peers):
            self._by_ns.setdefault(p.namespace, []).append(i)
            for k, v in p.labels:
                self._by_label.setdefault((p.namespace, k, v), []).append(i)
                self._by_key.setdefault((p.namespace, k), []).append(i)

    @property
    def namespaces(self) -> tuple[str, ...]:
        return tuple(sorted(self._by_ns))

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
    """Every group of already placed jobs, as peers for the others."""
    out: list[AffinityPeer] = []
    for job, pl in placements:
        for g in job.groups:
            gp = pl.group(g.name)
            if gp is not None and g.pods > 0:
                out.append(AffinityPeer(job.object_id, g.name, job.namespace, g.labels, gp.zones))
    return out


def _template_pods(kind: str, spec: Mapping[str, Any]) -> int:
    """Pods a workload's controller keeps running: replicas (default 1), a Job's parallelism;
    a DaemonSet's are counted as one (it runs on every node it fits); a CronJob's come and go."""
    if kind == "CronJob":
        return 0
    key = {"Job": "parallelism", "Pod": "", "DaemonSet": ""}.get(kind, "replicas")
    raw = spec.get(key, 1) if key else 1
    return raw if isinstance(raw, int) and not isinstance(raw, bool) and raw > 0 else (1 if raw is None else 0)


def template_peers(
    objects: Iterable[Mapping[str, Any]], classes: tuple[NodeClass, ...], cache: dict[Any, tuple[PoolFit, ...]],
) -> list[AffinityPeer]:
    """The pods of the workloads among the manifests that belong to no training job (a feature
    store's Deployment, a StatefulSet): any of them can be what a podAffinity term follows. Where
    they land is where their node filters let them (their own pod affinity is not followed)."""
    out: list[AffinityPeer] = []
    for obj in objects:
        kind, md = str(obj.get("kind", "")), obj.get("metadata")
        if not isinstance(md, dict):
            continue
        name = str(md.get("name", ""))
        tpl = plain_template(kind, name, obj)
        spec = obj.get("spec")
        if tpl is None or GROUP_LABEL in tpl.labels or not isinstance(spec, dict) or not _template_pods(kind, spec):
            continue
        ns = str(md.get("namespace") or DEFAULT_NAMESPACE)
        zones = tuple(sorted({f.zone for f in fit_pools(tpl.spec, classes, cache) if f.fits}))
        out.append(AffinityPeer(f"{kind}/{ns}/{name}", f"{kind}/{name}", ns, tuple(sorted(tpl.labels.items())), zones))
    return out
