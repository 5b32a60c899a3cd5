"""Node classes: the nodes of one inventory pool as the scheduler's filters see them, and the
filters' verdict on one class.

Node labels.  A pool's nodes carry the pool's labels plus ``<cluster.zone_label>: <zone>``, and the
well-known labels every kubelet/cloud sets unless the pool overrides them:
``topology.kubernetes.io/region: <cluster.region>``, ``kubernetes.io/os: linux``,
``kubernetes.io/arch: amd64`` (https://kubernetes.io/docs/reference/labels-annotations-taints/).
``kubernetes.io/hostname`` is unique per node and node names are not in the inventory, so it is
*unknown* (``UNKNOWN``): how each operator treats it is in ``node_affinity``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.scheduling.devices import class_counts
from topogate.core.labels import ARCH_LABEL, HOSTNAME_LABEL, OS_LABEL, REGION_LABEL, Pairs
from topogate.inventory.model import Cluster, Taint


class Unknown:
    """The value of a label that every node has but whose value the inventory does not know."""

    def __repr__(self) -> str:
        return "<unknown>"


UNKNOWN = Unknown()
LabelValue = str | Unknown


@dataclass(frozen=True)
class NodeClass:
    """The nodes of one pool, as the scheduler's filters see them."""

    cluster: str
    zone: str
    pool: str
    labels: Pairs
    taints: tuple[Taint, ...] = ()
    nodes: int = 0
    gpus_per_node: int = 0
    devices: tuple[tuple[str, int], ...] = ()  # DRA devices per node by DeviceClass, sorted: (class, count)

    @property
    def label_map(self) -> dict[str, str]:
        return dict(self.labels)

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


def node_classes(cluster: Cluster, device_classes: Mapping[str, Mapping[str, Any]] | None = None) -> tuple[NodeClass, ...]:
    """One node class per pool of the cluster, sorted by (zone, pool); `device_classes` (the
    DeviceClasses among the manifests, by name) decide which class a pool's driver-declared
    devices belong to (``devices.class_counts``)."""
    out: list[NodeClass] = []
    for zone in cluster.zones:
        for pool in zone.pools:
            labels: dict[str, str] = {OS_LABEL: "linux", ARCH_LABEL: "amd64"}
            if cluster.region:
                labels[REGION_LABEL] = cluster.region
            labels.update(pool.label_map)
            # The zone label is the zone the pool is declared in, whatever the pool's labels say:
            # the inventory is the source of truth for where a node is.
            labels[cluster.zone_label] = zone.name
            out.append(NodeClass(
                cluster.name, zone.name, pool.name, tuple(sorted(labels.items())), pool.taints,
                pool.nodes, pool.gpus_per_node, class_counts(pool.devices, device_classes or {}),
            ))
    return tuple(sorted(out, key=lambda n: (n.zone, n.pool)))


@dataclass(frozen=True)
class Removal:
    """One constraint that keeps a pod off a node class.

    ``constraint`` is one of nodeSelector, nodeAffinity, nodeName, taint, gpus, nodes;
    ``key`` the label key, ``key=value:effect`` of a taint, or the GPU resource.
    """

    constraint: str
    key: str
    message: str

    def __str__(self) -> str:
        return self.message


AFFINITY_CONSTRAINTS = ("nodeSelector", "nodeAffinity", "nodeName")


@dataclass(frozen=True)
class PoolFit:
    """The verdict of the node filters for one pod spec on one node class."""

    node: NodeClass
    reasons: tuple[Removal, ...] = ()
    notes: tuple[str, ...] = ()  # assumptions the fit relies on (e.g. an admission plugin's toleration)
    # Devices per node of the kinds this pod uses, when it claims DRA devices (None: the node's
    # GPUs, as a device plugin advertises them): what capacity counts for it.
    dra_per_node: int | None = None

    @property
    def gpus_per_node(self) -> int:
        """GPUs (or claimed DRA devices) a node of this class offers this pod."""
        return self.node.gpus_per_node if self.dra_per_node is None else self.dra_per_node

    @property
    def zone(self) -> str:
        return self.node.zone

    @property
    def pool(self) -> str:
        return self.node.pool

    @property
    def fits(self) -> bool:
        return not self.reasons

    @property
    def affinity_ok(self) -> bool:
        """nodeSelector, node affinity and nodeName pass (topology spread's nodeAffinityPolicy)."""
        return not any(r.constraint in AFFINITY_CONSTRAINTS for r in self.reasons)

    @property
    def taints_ok(self) -> bool:
        """Every blocking taint is tolerated (topology spread's nodeTaintsPolicy)."""
        return not any(r.constraint == "taint" for r in self.reasons)

    @property
    def reason(self) -> str:
        return "; ".join(r.message for r in self.reasons)

    @property
    def undeclared_keys(self) -> tuple[str, ...]:
        """Label keys the pod's nodeSelector or required node affinity names that this node class
        does not carry at all (not a node name): a label the inventory may be missing."""
        labels = self.node.label_map
        keys = {k for r in self.reasons if r.constraint in ("nodeSelector", "nodeAffinity")
                for k in r.key.split(",") if k and k != HOSTNAME_LABEL and k not in labels}
        return tuple(sorted(keys))
