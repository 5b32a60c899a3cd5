"""The boundary probe: does any policy let a job talk to a pod of another network zone?
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from topogate.analysis.netpolicy import PodClass
from topogate.analysis.result import JobMap
from topogate.inventory.model import NETWORK_ZONE_LABEL, Cluster, Position

if TYPE_CHECKING:
    from topogate.analysis.map import _ClusterMap


# The port the boundary probe asks about: the PyTorch rendezvous port, the connection a split job
# needs first. A policy that opens a boundary wide (entities, empty selectors, port ranges) opens
# it too; each extra port costs two evaluations per job and network zone (measured: the probe
# was half of all evaluations at 5,000 jobs with two ports).
PROBE_PORTS = (23456,)


@dataclass(frozen=True)
class Opening:
    cluster: str
    src_object: str
    src_group: str
    src_nz: str
    dst_object: str
    dst_group: str
    dst_nz: str
    port: int
    reason: str
    decided_by: str
    pos: Position


def _network_zone_of(cluster: Cluster, jm: JobMap) -> str | None:
    nzs = {n.name for z in jm.zones if (n := cluster.network_zone_of(z))}
    return nzs.pop() if len(nzs) == 1 else None


def _boundary_probe(cm: _ClusterMap, cluster: Cluster,
                    jobs: list[tuple[JobMap, dict[str, PodClass]]],
                    reps: dict[str, tuple[str, PodClass | None, str]]) -> list[Opening]:
    """Does any policy let a job talk to a pod of another network zone? One representative per
    network zone keeps this linear in jobs while still catching wide allows (entities, `{}`);
    the probe asks about the ports training uses (PROBE_PORTS), not every port, so a policy
    that opens only, say, 8080 across the boundary is not this rule's business."""
    out: list[Opening] = []
    if len(reps) < 2:
        return out
    for jm, classes in jobs:
        nz = _network_zone_of(cluster, jm)
        if nz is None or not jm.groups:
            continue
        first = jm.groups[0].name
        mine = classes[first]
        for other_nz, (robj, rep, rgroup) in sorted(reps.items()):
            if other_nz == nz:
                continue
            rpc = rep or PodClass(jm.namespace, ((NETWORK_ZONE_LABEL, other_nz),),
                                  cm.pset.namespace_labels(jm.namespace))
            for src, dst, s_obj, s_grp, d_obj, d_grp, s_nz, d_nz in (
                (mine, rpc, jm.object, first, robj, rgroup, nz, other_nz),
                (rpc, mine, robj, rgroup, jm.object, first, other_nz, nz),
            ):
                hit = next(((port, cm.pset.evaluate(src, dst, port, "TCP")) for port in PROBE_PORTS
                            if cm.pset.allows(src, dst, port, "TCP")), None)
                if hit is not None:
                    port, v = hit
                    rule = v.ingress.decided_by or v.egress.decided_by
                    where = cm.locate_rule(rule) if rule else jm.pos
                    out.append(Opening(cluster.name, s_obj, s_grp, s_nz, d_obj, d_grp, d_nz,
                                       port, v.reason, str(rule.policy) if rule else "", where))
    # one finding per (policy position, network-zone pair) is enough to act on
    seen: set[tuple[Any, ...]] = set()
    uniq: list[Opening] = []
    for o in out:
        key = (o.pos, o.src_nz, o.dst_nz, o.src_object, o.dst_object)
        if key not in seen:
            seen.add(key)
            uniq.append(o)
    return uniq
