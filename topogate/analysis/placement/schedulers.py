"""Pods another scheduler places (a pod template's ``schedulerName`` other than
``default-scheduler``): what topogate reads of that scheduler, and what it assumes.

topogate models kube-scheduler's filters. For another scheduler it assumes those filters still
hold (node selectors, affinity, taints, GPUs: the schedulers below honour them too) and reads
the one thing each documents as co-location:

- KAI Scheduler (``kai-scheduler``): the annotations ``kai.scheduler/topology`` (a Topology
  object's name) and ``kai.scheduler/topology-required-placement: <node label>`` on the workload
  (its pod-grouper reads the pods' top owner: pkg/podgrouper defaultgrouper, and
  docs/topology/README.md of KAI-Scheduler): every
  pod of the workload is placed inside one domain of that label. When each value of the label is
  on the nodes of one zone (the zone label itself, the hostname, or a finer label the inventory's
  pools carry), that holds the job in one zone: its groups form one co-location unit, as Kueue's
  or a PodGroup's do. Any other label, or a required placement without ``kai.scheduler/topology``,
  is named and not read as co-location.
- Volcano (``volcano``): its Job's ``networkTopology`` (``k8s.jobs`` keeps it on the job):
  ``mode: hard`` keeps every pod inside one HyperNode of a tier up to ``highestTierAllowed``. Where
  each such HyperNode selects (``labelMatch``) nodes of one zone only, the job is held in one
  zone; HyperNodes naming nodes (``exactMatch``, ``regexMatch``), which the inventory does not
  list, are named.

Every other scheduler name is named, with the kube-scheduler placement topogate assumed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.scheduling import HOSTNAME_LABEL, NodeClass, selector_matches
from topogate.k8s.jobs import TrainingJob

__all__ = ["DEFAULT_SCHEDULER", "VOLCANO_SCHEDULER", "other_schedulers"]

DEFAULT_SCHEDULER = "default-scheduler"
KAI_SCHEDULER = "kai-scheduler"
VOLCANO_SCHEDULER = "volcano"
KAI_TOPOLOGY = "kai.scheduler/topology"
KAI_REQUIRED = "kai.scheduler/topology-required-placement"
KAI_PREFERRED = "kai.scheduler/topology-preferred-placement"
ASSUMED = ("topogate judged its node filters, pod affinity and spread as kube-scheduler's (which this "
           "scheduler is taken to honour)")


@dataclass(frozen=True)
class OtherSchedulers:
    units: tuple[frozenset[str], ...]  # groups another scheduler demonstrably holds in one zone
    notes: tuple[tuple[str, str, str], ...]  # (group, scheduler, what topogate read and assumed)


def scheduler_of(spec: Mapping[str, Any]) -> str:
    name = spec.get("schedulerName")
    return str(name) if isinstance(name, str) and name else DEFAULT_SCHEDULER


def _within_zones(classes: Sequence[NodeClass], key: str, zone_key: str) -> bool:
    """Each value of `key` is on nodes of one zone only, and every pool carries it (or the key is
    the zone label or the hostname)."""
    if key in (zone_key, HOSTNAME_LABEL):
        return True
    zone_of: dict[str, str] = {}
    for nc in classes:
        v = nc.label_map.get(key)
        if v is None:
            return False
        if zone_of.setdefault(v, nc.zone) != nc.zone:
            return False
    return bool(zone_of)


def _kai(job: TrainingJob, classes: Sequence[NodeClass], zone_key: str) -> tuple[bool, str]:
    ann = dict(job.annotations)  # KAI's pod-grouper reads the pods' top owner (its default grouper)
    required, topology = ann.get(KAI_REQUIRED, ""), ann.get(KAI_TOPOLOGY, "")
    if not required:
        pref = f" (its preferred placement on {ann[KAI_PREFERRED]} constrains nothing)" if ann.get(KAI_PREFERRED) else ""
        return False, f"{ASSUMED}; no {KAI_REQUIRED} annotation{pref}, so nothing holds the job in one zone"
    if not topology:
        return False, (f"{ASSUMED}; {KAI_REQUIRED}: {required} names no Topology ({KAI_TOPOLOGY} is not set), "
                       "so it is not read as co-location")
    if _within_zones(classes, required, zone_key):
        return True, (f"{ASSUMED}; {KAI_REQUIRED}: {required} (Topology {topology}) keeps every pod in one "
                      f"{required} domain, which lies in one zone: the job is held in one zone")
    return False, (f"{ASSUMED}; {KAI_REQUIRED}: {required} (Topology {topology}) keeps every pod in one {required} "
                   "domain, but the inventory's pools do not show each such domain inside one zone, so it is "
                   "not read as co-location")


def _volcano(job: TrainingJob, classes: Sequence[NodeClass], hypernodes: Sequence[Mapping[str, Any]]
             ) -> tuple[bool, str]:
    topo = dict(job.network_topology)
    if not job.network_topology or topo.get("mode", "hard") != "hard":  # the CRD defaults mode to hard
        what = f"networkTopology mode {topo['mode']} (a preference)" if job.network_topology else "no networkTopology"
        return False, f"{ASSUMED}; {what}, so nothing holds the job in one zone"
    tier = topo.get("highestTierAllowed")
    if isinstance(topo.get("highestTierName"), str):
        named = [(h.get("spec") or {}).get("tier") for h in hypernodes
                 if (h.get("spec") or {}).get("tierName") == topo["highestTierName"]]
        tier = max((t for t in named if isinstance(t, int)), default=None)
        if tier is None:
            return False, (f"{ASSUMED}; networkTopology mode hard names tier {topo['highestTierName']}, which no "
                           "HyperNode among the manifests has, so it is not read as co-location")
    tier = tier if isinstance(tier, int) and not isinstance(tier, bool) else 1
    held, why = _hypernodes_in_zones(classes, hypernodes, tier)
    if held:
        return True, (f"{ASSUMED}; networkTopology mode hard (highestTierAllowed {tier}) keeps every pod in one "
                      f"HyperNode of tier {tier} or lower, and each such HyperNode's nodes are in one zone: the job "
                      "is held in one zone")
    return False, f"{ASSUMED}; networkTopology mode hard (highestTierAllowed {tier}): {why}, so it is not read as co-location"


def _hypernodes_in_zones(classes: Sequence[NodeClass], hypernodes: Sequence[Mapping[str, Any]],
                         tier: int) -> tuple[bool, str]:
    by_name = {str((h.get("metadata") or {}).get("name", "")): h for h in hypernodes}
    candidates = [h for h in hypernodes if isinstance((h.get("spec") or {}).get("tier"), int)
                  and 0 < (h.get("spec") or {})["tier"] <= tier]
    if not candidates:
        return False, f"no HyperNode of tier {tier} or lower is among the manifests"
    for h in candidates:
        zones, unknown = _zones_of(h, by_name, classes, set())
        name = (h.get("metadata") or {}).get("name", "")
        if unknown:
            return False, f"HyperNode {name} names nodes ({unknown}), which the inventory does not list"
        if len(zones) > 1:
            return False, f"HyperNode {name} spans zones {', '.join(sorted(zones))}"
    return True, ""


def _zones_of(h: Mapping[str, Any], by_name: Mapping[str, Mapping[str, Any]], classes: Sequence[NodeClass],
              seen: set[str]) -> tuple[set[str], str]:
    """The zones of the nodes a HyperNode holds, and how it names nodes topogate cannot see."""
    zones: set[str] = set()
    for m in (h.get("spec") or {}).get("members") or []:
        if not isinstance(m, Mapping):
            continue
        sel = m.get("selector") if isinstance(m.get("selector"), Mapping) else {}
        assert isinstance(sel, Mapping)
        if m.get("type") == "HyperNode":
            exact = (sel.get("exactMatch") or {}).get("name") if isinstance(sel.get("exactMatch"), Mapping) else None
            child = by_name.get(str(exact)) if exact else None
            if child is None or str(exact) in seen:
                return zones, "a HyperNode member not among the manifests"
            z, unknown = _zones_of(child, by_name, classes, seen | {str(exact)})
            if unknown:
                return zones, unknown
            zones |= z
            continue
        if "labelMatch" in sel:
            lm = sel["labelMatch"]
            zones |= {nc.zone for nc in classes if nc.nodes > 0 and selector_matches(lm, nc.label_map)}
        elif "exactMatch" in sel or "regexMatch" in sel:
            return zones, "by name (exactMatch or regexMatch)"
    return zones, ""


def other_schedulers(job: TrainingJob, classes: Sequence[NodeClass], zone_key: str,
                     hypernodes: Sequence[Mapping[str, Any]] = ()) -> OtherSchedulers:
    by_scheduler: dict[str, list[str]] = {}
    for g in job.groups:
        if g.pods > 0:
            by_scheduler.setdefault(scheduler_of(g.spec), []).append(g.name)
    units: list[frozenset[str]] = []
    notes: list[tuple[str, str, str]] = []
    for sched, names in sorted(by_scheduler.items()):
        if sched == DEFAULT_SCHEDULER:
            continue
        if sched == KAI_SCHEDULER:
            held, text = _kai(job, classes, zone_key)
        elif sched == VOLCANO_SCHEDULER:
            held, text = _volcano(job, classes, hypernodes)
        else:
            held, text = False, f"{ASSUMED}; topogate reads nothing else of {sched}"
        if held:
            units.append(frozenset(names))
        notes += [(n, sched, text) for n in names]
    return OtherSchedulers(tuple(units), tuple(notes))
