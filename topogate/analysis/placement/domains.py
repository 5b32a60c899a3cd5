"""Topology keys as domains of zones: which pods a term on a key keeps together or apart.

A key's domains are the values its nodes carry. The zone key makes one domain per zone and the
hostname one per node. Any other key is read off the inventory's node classes: one value on every
node (the region of a one-region cluster) makes the whole cluster one domain, so podAntiAffinity
on it keeps two pods off the cluster at once; a key with several values is not reasoned about here
beyond what the node filters need (its pods must exist, a node must carry it)."""

from __future__ import annotations

from typing import Literal

from topogate.analysis.placement.inputs import Inputs
from topogate.analysis.scheduling import HOSTNAME_LABEL

__all__ = ["Scope", "covers", "key_scope"]

Scope = Literal["node", "zone", "cluster", "other"]


def key_scope(inputs: Inputs, key: str) -> Scope:
    if key == HOSTNAME_LABEL:
        return "node"
    if key == inputs.zone_key:
        return "zone"
    values = {n.label_map.get(key) for n in inputs.classes}
    return "cluster" if len(values) == 1 and None not in values else "other"


def covers(inputs: Inputs, inner: str, outer: str) -> bool:
    """Every domain of key `inner` lies inside one domain of key `outer`: two pods in one
    `inner` domain are in one `outer` domain too."""
    if inner == outer:
        return True
    si, so = key_scope(inputs, inner), key_scope(inputs, outer)
    return so == "cluster" or si == "node" or (si == "zone" and so == "zone")
