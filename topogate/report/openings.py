"""What the inventory opens for a job beyond its own flows: its doors, who scrapes its metrics,
and its FQDN/CIDR egress, as the pictures draw them.

Read from the inventory objects the Cilium generator reads (Inventory.doors_of and
door_sources, Workload.metrics, Workload.egress), never from the generated YAML or a second
copy: a pull request that widens a door, moves a scraper or adds a CIDR changes the picture
because it changes the one fact both read.

- a door lets the job out when its sources include the job (the job's CNP gets the egress rule);
- a door whose target is the job's network zone lets its sources in (the door's CCNP selects
  every managed pod of that zone, the job's included, and the boundary leaves its ports open);
- `metrics:` lets the pods of the monitoring namespace in on the metrics port;
- each `egress:` entry lets the job out to its FQDN patterns and CIDRs on its ports.
"""

from __future__ import annotations

from dataclasses import dataclass

from topogate.analysis.result import JobMap
from topogate.inventory.model import Door, DoorEnd, Inventory, PortSpec, Workload

DOOR = "door"
SCRAPE = "scrape"
EGRESS = "egress"


@dataclass(frozen=True)
class Opening:
    """One declared opening of a job: a peer outside the job, the ports, the direction."""

    kind: str  # DOOR, SCRAPE or EGRESS
    inbound: bool  # the peer opens connections to the job (else the job to the peer)
    peer: str  # who or what is on the other side, in words
    ports: str  # "TCP/9000, UDP/5000-5010", or "every port"
    name: str = ""  # a door's name

    @property
    def label(self) -> str:
        """The edge's words: `door datasets TCP/9000`, `scrape TCP/9090`, `egress TCP/443`."""
        return " ".join(w for w in (self.kind, self.name, self.ports) if w)


def ports_text(ports: tuple[PortSpec, ...]) -> str:
    # No ports: the generated rule carries no toPorts, which Cilium reads as every port.
    if not ports:
        return "every port"
    return ", ".join(f"{p.protocol}/{p.port}" + (f"-{p.end_port}" if p.end_port and p.end_port > p.port else "")
                     for p in ports)


def _pods(end: DoorEnd) -> str:
    """A door's target, as it selects: a network zone, or a service's pods by namespace and labels."""
    if end.network_zone is not None:
        return f"network zone {end.network_zone}"
    labels = ", ".join(f"{k}={v}" for k, v in end.labels)
    return f"pods {labels} in namespace {end.namespace or 'default'}"


def _sources(end: DoorEnd) -> str:
    if end.network_zone is not None:
        return f"network zone {end.network_zone}"
    return f"workload{'s' if len(end.workloads) > 1 else ''} {', '.join(end.workloads)}"


def _door(d: Door, inbound: bool) -> Opening:
    return Opening(DOOR, inbound, _sources(d.source) if inbound else _pods(d.target), ports_text(d.ports), d.name)


def workload_openings(inv: Inventory, w: Workload) -> tuple[Opening, ...]:
    """Doors out (in the inventory's door order), doors in, the scraper, egress entries in order."""
    doors = inv.doors_of(w.cluster)
    out = [_door(d, False) for d in doors if w in inv.door_sources(d)]
    into = [_door(d, True) for d in doors if d.target.network_zone == w.network_zone]
    scrape = ([Opening(SCRAPE, True, f"pods of namespace {w.metrics.namespace}", ports_text((PortSpec(w.metrics.port),)))]
              if w.metrics is not None else [])
    egress = [Opening(EGRESS, False, ", ".join((*e.fqdns, *e.cidrs)), ports_text(e.ports)) for e in w.egress]
    return (*out, *into, *scrape, *egress)


def job_openings(inv: Inventory | None, job: JobMap) -> tuple[Opening, ...]:
    """The openings of the inventory workload behind `job`; none when the job is not one (or
    there is no inventory): the pictures then draw what the manifests require, as before."""
    if inv is None:
        return ()
    w = inv.workload_at(job.cluster, job.namespace, job.name, job.kind)
    return workload_openings(inv, w) if w is not None else ()


def network_zones(inv: Inventory | None, job: JobMap) -> dict[str, str]:
    """Zone -> its network zone, in the job's cluster (what the pictures draw as boundaries);
    empty without an inventory."""
    cluster = inv.cluster(job.cluster) if inv is not None else None
    return {z: nz.name for nz in cluster.network_zones for z in nz.zones} if cluster is not None else {}


__all__ = ["DOOR", "EGRESS", "SCRAPE", "Opening", "job_openings", "network_zones", "workload_openings"]
