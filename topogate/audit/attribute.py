"""Measured inter-AZ bytes per training job: flow-log records joined with a pods-and-nodes snapshot.

Each record is what one network interface saw in one interval, and AWS bills inter-AZ transfer
on each side ($0.01/GB out of one zone, $0.01/GB into the other): the records of both
interfaces are counted, which is also what Cost Explorer's UsageQuantity adds up. A record is
inter-AZ when the snapshot places both its addresses and their zones differ; it belongs to the
job of the interface that captured it (its `az-id` side), else to the job at the other end.

Addresses are pod IPs where pods have their own VPC addresses (VPC CNI, ENI mode), node IPs in
overlay mode, where a node pair is the job's only when that job alone runs on both nodes.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from topogate.audit.flowlog import FlowRecord

BYTES_PER_GB = Decimal(10**9)  # AWS bills data transfer per GB of 10^9 bytes
POD_MODE = "pod"
NODE_MODE = "node"
MODE_TEXT = {
    POD_MODE: "pod IPs (VPC CNI / ENI mode: pods have VPC addresses)",
    NODE_MODE: "node IPs (overlay mode: a node pair counts for the job that alone runs on both)",
}
COLOCATED = "colocated: look at its doors (traffic to services in other zones)"


@dataclass(frozen=True)
class Endpoint:
    """What the snapshot says an address is."""

    kind: str  # "pod" or "node"
    name: str  # namespace/pod or the node
    zone: str  # "" when unknown
    jobs: tuple[str, ...] = ()  # the training jobs behind it (a pod: its job; a node: those on it)
    # a node: the jobs whose pods share its address (host network): all it carries in pod mode
    host_jobs: tuple[str, ...] = ()


@dataclass(frozen=True)
class AddressBook:
    """Addresses of one cluster at snapshot time, and its zone ids (az-id -> zone name)."""

    source: str
    pods: Mapping[str, Endpoint]  # pod IPs that are not their node's
    nodes: Mapping[str, Endpoint]
    zone_ids: Mapping[str, str] = field(default_factory=dict)

    def mode(self, records: Sequence[FlowRecord]) -> str:
        """Pod mode when the records carry the address of a training pod, else node mode."""
        jobs = {a for a, e in self.pods.items() if e.jobs}
        return POD_MODE if any(r.src in jobs or r.dst in jobs for r in records) else NODE_MODE

    def endpoints(self, mode: str) -> dict[str, Endpoint]:
        if mode == NODE_MODE:
            return dict(self.nodes)
        out = {a: Endpoint(e.kind, e.name, e.zone, e.host_jobs) for a, e in self.nodes.items()}
        out.update(self.pods)
        return out


@dataclass(frozen=True)
class JobEgress:
    job: str
    bytes: int
    pairs: tuple[tuple[str, str, int], ...]  # (capturing zone, other zone, bytes)
    per_day: tuple[tuple[dt.date, int], ...]
    usd: Decimal
    cause: str  # the placement finding that explains it, or COLOCATED
    over_budget: bool | None = None

    @property
    def gb(self) -> Decimal:
        return Decimal(self.bytes) / BYTES_PER_GB


@dataclass(frozen=True)
class FlowAudit:
    cluster: str
    region: str
    mode: str
    snapshot: str
    sources: tuple[str, ...]
    records: int
    jobs: tuple[JobEgress, ...]
    other_bytes: int  # inter-AZ between addresses of no training job
    unknown_bytes: int  # a peer the snapshot does not know: zone unknown, not judged
    usd_per_gb: Decimal
    billed_gb: Decimal | None  # Cost Explorer's inter-AZ usage of the cluster, same days
    warnings: tuple[str, ...] = ()
    job_budget_usd_per_day: Decimal | None = None

    @property
    def attributed_bytes(self) -> int:
        return sum(j.bytes for j in self.jobs)

    @property
    def attributed_gb(self) -> Decimal:
        return Decimal(self.attributed_bytes) / BYTES_PER_GB

    @property
    def rest_gb(self) -> Decimal | None:
        """What the bill holds beyond the jobs: other traffic, unknown peers, uncovered ENIs."""
        return None if self.billed_gb is None else self.billed_gb - self.attributed_gb

    @property
    def over_budget(self) -> tuple[JobEgress, ...]:
        return tuple(j for j in self.jobs if j.over_budget)


def _day(ts: int) -> dt.date:
    return dt.datetime.fromtimestamp(ts, dt.UTC).date()


def _owner(book: AddressBook, mode: str, rec: FlowRecord, a: Endpoint, b: Endpoint) -> str | None:
    """The job a record is billed to, or None (no job at either end, or shared nodes)."""
    here = book.zone_ids.get(rec.az_id)
    local, remote = (b, a) if here is not None and b.zone == here != a.zone else (a, b)
    if mode == NODE_MODE:
        both = sorted(set(a.jobs) & set(b.jobs))
        return both[0] if len(both) == 1 else None
    for e in (local, remote):
        if len(e.jobs) == 1:
            return e.jobs[0]
    return None


def attribute(book: AddressBook, records: Sequence[FlowRecord], start: dt.date, end: dt.date,
              usd_per_gb: Decimal, causes: Mapping[str, str], *, cluster: str, region: str,
              sources: Sequence[str], billed_gb: Decimal | None,
              job_budget: Decimal | None = None) -> FlowAudit:
    """Per job: bytes, zone pairs, days and dollars of [start, end); what stays unattributed."""
    per_job: dict[str, int] = defaultdict(int)
    pairs: dict[tuple[str, str, str], int] = defaultdict(int)
    days: dict[tuple[str, dt.date], int] = defaultdict(int)
    other = unknown = n = 0
    stray: set[str] = set()
    mode = book.mode(records)
    endpoints = book.endpoints(mode)
    for rec in records:
        day = _day(rec.start)
        if not start <= day < end:
            continue
        n += 1
        a, b = endpoints.get(rec.src), endpoints.get(rec.dst)
        if a is None or b is None or not a.zone or not b.zone:
            if a is None or b is None:
                # a known address talking to an unknown one could be either: not judged
                unknown += rec.bytes if (a or b) else 0
            continue
        if a.zone == b.zone:
            continue
        here = book.zone_ids.get(rec.az_id)
        if book.zone_ids and here not in (a.zone, b.zone):
            stray.add(rec.az_id)
        job = _owner(book, mode, rec, a, b)
        if job is None:
            other += rec.bytes
            continue
        local = here if here in (a.zone, b.zone) else a.zone
        remote = b.zone if local == a.zone else a.zone
        per_job[job] += rec.bytes
        pairs[(job, local, remote)] += rec.bytes
        days[(job, day)] += rec.bytes
    jobs = []
    for job in sorted(per_job, key=lambda j: (-per_job[j], j)):
        usd = Decimal(per_job[job]) / BYTES_PER_GB * usd_per_gb
        per_day = tuple(sorted((d, v) for (j, d), v in days.items() if j == job))
        over = None if job_budget is None else any(
            Decimal(v) / BYTES_PER_GB * usd_per_gb > job_budget for _, v in per_day)
        jobs.append(JobEgress(
            job, per_job[job],
            tuple(sorted(((lz, rz, v) for (j, lz, rz), v in pairs.items() if j == job),
                         key=lambda p: (-p[2], p[0], p[1]))),
            per_day, usd, causes.get(job, COLOCATED), over))
    warnings = [f"records captured in zone id(s) {', '.join(sorted(stray))}, which is neither "
                "endpoint's zone: a NAT gateway or load balancer between them?"] if stray else []
    return FlowAudit(cluster, region, mode, book.source, tuple(sources), n, tuple(jobs),
                     other, unknown, usd_per_gb, billed_gb, tuple(warnings), job_budget)


__all__ = ["BYTES_PER_GB", "COLOCATED", "MODE_TEXT", "NODE_MODE", "POD_MODE", "AddressBook",
           "Endpoint", "FlowAudit", "JobEgress", "attribute"]
