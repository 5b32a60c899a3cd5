"""Measured inter-AZ bytes per training job: flow-log records joined with a pods-and-nodes snapshot.

Each record is what one network interface saw in one interval, and AWS bills inter-AZ transfer
on each side ($0.01/GB out of one zone, $0.01/GB into the other): the records of both
interfaces are counted, which is also what Cost Explorer's UsageQuantity adds up. A record is
inter-AZ when the snapshot places both its addresses and their zones differ; it belongs to the
job of the interface that captured it (its `az-id` side), else to the job at the other end.

Addresses are pod IPs where pods have their own VPC addresses (VPC CNI, ENI mode), node IPs in
overlay mode, where a node pair is the job's only when that job alone runs on both nodes.

Records are summed as they are read (`Tally.add`), never held: memory grows with the distinct
(job, zone pair, day) keys, not with the records (a 1 GiB object of tiny lines is still a few
sums). Which mode applies is known only once every record was seen (pod mode when any record
carries a training pod's address), so each record is added under both, and `Tally.audit` keeps
the one that applies.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
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
MAX_STRAY_ZONE_IDS = 20  # zone ids named in the NAT warning; the rest are counted


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

    def job_pods(self) -> frozenset[str]:
        """The addresses of training pods: a record carrying one means pod mode."""
        return frozenset(a for a, e in self.pods.items() if e.jobs)

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


@dataclass
class _Sums:
    """The sums of one address mode (module doc)."""

    endpoints: dict[str, Endpoint]
    per_job: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    pairs: dict[tuple[str, str, str], int] = field(default_factory=lambda: defaultdict(int))
    days: dict[tuple[str, dt.date], int] = field(default_factory=lambda: defaultdict(int))
    other: int = 0
    unknown: int = 0
    stray: set[str] = field(default_factory=set)
    more_stray: bool = False  # zone ids beyond the first MAX_STRAY_ZONE_IDS


class Tally:
    """Flow-log records of [start, end) summed per job, zone pair and day as they are read."""

    def __init__(self, book: AddressBook, start: dt.date, end: dt.date) -> None:
        self.book, self.start, self.end = book, start, end
        self.sums = {POD_MODE: _Sums(book.endpoints(POD_MODE)), NODE_MODE: _Sums(book.endpoints(NODE_MODE))}
        self._job_pods = book.job_pods()
        self.pod_seen = False
        self.records = 0  # records in the window
        self.sources: dict[str, None] = {}  # objects and log streams read, in order, once each
        self.skipped = 0  # SKIPDATA records: AWS lost them

    def add(self, rec: FlowRecord) -> None:
        if not self.pod_seen and (rec.src in self._job_pods or rec.dst in self._job_pods):
            self.pod_seen = True
        day = _day(rec.start)
        if not self.start <= day < self.end:
            return
        self.records += 1
        for mode, sums in self.sums.items():
            _add(self.book, mode, sums, rec, day)

    @property
    def mode(self) -> str:
        """Pod mode when the records carry the address of a training pod, else node mode."""
        return POD_MODE if self.pod_seen else NODE_MODE

    def audit(self, usd_per_gb: Decimal, causes: Mapping[str, str], *, cluster: str, region: str,
              billed_gb: Decimal | None, job_budget: Decimal | None = None) -> FlowAudit:
        """Per job: bytes, zone pairs, days and dollars; what stays unattributed."""
        s = self.sums[self.mode]
        jobs = []
        for job in sorted(s.per_job, key=lambda j: (-s.per_job[j], j)):
            usd = Decimal(s.per_job[job]) / BYTES_PER_GB * usd_per_gb
            per_day = tuple(sorted((d, v) for (j, d), v in s.days.items() if j == job))
            over = None if job_budget is None else any(
                Decimal(v) / BYTES_PER_GB * usd_per_gb > job_budget for _, v in per_day)
            jobs.append(JobEgress(
                job, s.per_job[job],
                tuple(sorted(((lz, rz, v) for (j, lz, rz), v in s.pairs.items() if j == job),
                             key=lambda p: (-p[2], p[0], p[1]))),
                per_day, usd, causes.get(job, COLOCATED), over))
        more = " and others" if s.more_stray else ""
        warnings = [f"records captured in zone id(s) {', '.join(sorted(s.stray))}{more}, which is neither "
                    "endpoint's zone: a NAT gateway or load balancer between them?"] if s.stray else []
        return FlowAudit(cluster, region, self.mode, self.book.source, tuple(sorted(self.sources)), self.records,
                         tuple(jobs), s.other, s.unknown, usd_per_gb, billed_gb, tuple(warnings), job_budget)


def _add(book: AddressBook, mode: str, s: _Sums, rec: FlowRecord, day: dt.date) -> None:
    a, b = s.endpoints.get(rec.src), s.endpoints.get(rec.dst)
    if a is None or b is None or not a.zone or not b.zone:
        if a is None or b is None:
            # a known address talking to an unknown one could be either: not judged
            s.unknown += rec.bytes if (a or b) else 0
        return
    if a.zone == b.zone:
        return
    here = book.zone_ids.get(rec.az_id)
    if book.zone_ids and here not in (a.zone, b.zone) and rec.az_id not in s.stray:
        if len(s.stray) < MAX_STRAY_ZONE_IDS:
            s.stray.add(rec.az_id)
        else:
            s.more_stray = True
    job = _owner(book, mode, rec, a, b)
    if job is None:
        s.other += rec.bytes
        return
    local = here if here in (a.zone, b.zone) else a.zone
    remote = b.zone if local == a.zone else a.zone
    s.per_job[job] += rec.bytes
    s.pairs[(job, local, remote)] += rec.bytes
    s.days[(job, day)] += rec.bytes


__all__ = ["BYTES_PER_GB", "COLOCATED", "MODE_TEXT", "AddressBook", "Endpoint", "FlowAudit", "JobEgress",
           "Tally"]
