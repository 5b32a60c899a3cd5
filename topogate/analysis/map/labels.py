"""What a job's pod labels and spread constraints claim about zones, against where its pods can
really land: a zone label a policy selects on that the scheduler does not honour (a label lie),
and a zone-key topologySpreadConstraint that splits, strands or may one day split a group.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.locate import position_of
from topogate.analysis.result import GroupMap, JobMap
from topogate.core.labels import DEFAULT_ZONE_LABEL, NETWORK_ZONE_LABEL
from topogate.core.position import Position
from topogate.inventory.model import Cluster
from topogate.k8s.jobs import TrainingJob
from topogate.k8s.objects import K8sObject

WELL_KNOWN_ZONE_KEYS = (DEFAULT_ZONE_LABEL, "failure-domain.beta.kubernetes.io/zone")


@dataclass(frozen=True)
class LabelLie:
    object: str
    group: str
    key: str
    value: str
    zones: tuple[str, ...]  # where the group can really land
    policies: tuple[str, ...]  # policies that select on the key
    pos: Position
    kind: str = "zone"  # "zone" or "network-zone"


@dataclass(frozen=True)
class SpreadSplit:
    object: str
    group: str
    key: str
    max_skew: int
    pods: int
    pos: Position
    effect: str = "splits"  # today: "splits" the group, "strands" pods Pending, or "latent"


def policy_keys(policies: Iterable[K8sObject]) -> dict[str, tuple[str, ...]]:
    """Label key -> refs of the policies whose selectors name it, sorted: sorted once here, as
    every group of every job asks for its keys (a fleet's policies name the same few keys, so
    sorting per group would be quadratic in jobs)."""
    out: dict[str, set[str]] = {}
    for o in policies:
        keys: set[str] = set()
        _selector_keys(o.obj.get("spec") or {}, keys)
        _selector_keys(o.obj.get("specs") or [], keys)
        for k in keys:
            out.setdefault(k, set()).add(o.ref)
    return {k: tuple(sorted(refs)) for k, refs in out.items()}


def _selector_keys(obj: Any, out: set[str]) -> None:
    """Every label key any selector in a policy names (prefixes stripped)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "matchLabels" and isinstance(v, dict):
                out.update(_strip(str(x)) for x in v)
            elif k == "matchExpressions" and isinstance(v, list):
                out.update(_strip(str(e.get("key"))) for e in v if isinstance(e, dict))
            elif isinstance(v, (dict, list)):  # a scalar holds no selector
                _selector_keys(v, out)
    elif isinstance(obj, list):
        for x in obj:
            if isinstance(x, (dict, list)):
                _selector_keys(x, out)


def _strip(key: str) -> str:
    for prefix in ("k8s:", "any:"):
        if key.startswith(prefix):
            return key[len(prefix):]
    return key


def label_lies(cluster: Cluster, keys: Mapping[str, tuple[str, ...]], jm: JobMap) -> list[LabelLie]:
    """`keys`: from `policy_keys`."""
    out: list[LabelLie] = []
    zone_keys = {cluster.zone_label, *WELL_KNOWN_ZONE_KEYS}
    zone_names = {z.name for z in cluster.zones}
    for g in jm.groups:
        for key, value in g.labels:
            used_by = keys.get(key, ())
            if not used_by or not g.zones:
                continue
            if key == NETWORK_ZONE_LABEL:
                nz = cluster.network_zone(value)
                allowed = set(nz.zones) if nz else set()
                if not set(g.zones) <= allowed:
                    out.append(LabelLie(jm.object, g.name, key, value, g.zones, used_by, g.pos,
                                        "network-zone"))
            elif key in zone_keys or value in zone_names:
                if set(g.zones) != {value}:
                    out.append(LabelLie(jm.object, g.name, key, value, g.zones, used_by, g.pos))
    return out


def spread_splits(cluster: Cluster, obj: K8sObject | None, job: TrainingJob,
                  jm: JobMap) -> list[SpreadSplit]:
    """`obj`: the job's own object among the manifests, for the constraint's position."""
    out: list[SpreadSplit] = []
    zone_keys = {cluster.zone_label, *WELL_KNOWN_ZONE_KEYS}
    for g in job.groups:
        for i, c in enumerate(g.spec.get("topologySpreadConstraints") or []):
            if (isinstance(c, dict) and c.get("topologyKey") in zone_keys
                    and c.get("whenUnsatisfiable", "DoNotSchedule") == "DoNotSchedule"):
                path = (*g.template_path, "spec", "topologySpreadConstraints", i)
                pos = obj.locate(path) if obj is not None and g.template_path else position_of(g.source)
                gm = next((x for x in jm.groups if x.name == g.name), None)
                out.append(SpreadSplit(job.object_id, g.name, str(c.get("topologyKey")),
                                       int(c.get("maxSkew", 1) or 1), g.pods, pos,
                                       _spread_effect(jm, gm)))
    return out


def _spread_effect(jm: JobMap, gm: GroupMap | None) -> str:
    if gm is not None and (gm.splits or len(gm.zones) > 1):
        return "splits"
    if not jm.schedulable and any("spread" in r for r in jm.unschedulable_reasons):
        return "strands"
    return "latent"

__all__ = ["LabelLie", "SpreadSplit", "WELL_KNOWN_ZONE_KEYS", "label_lies", "policy_keys",
           "spread_splits"]
