"""Flow-log lines made from a live fixture's pods, with the bytes each job must be given.

A flow between two addresses of the VPC is seen by both network interfaces (an egress record
where it leaves, an ingress record where it arrives), as VPC Flow Logs writes it; a peer
outside the snapshot has no interface of ours, so only the local record exists.
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

FIELDS = ("version account-id interface-id az-id pkt-srcaddr pkt-dstaddr bytes start end "
          "action log-status")
ACCOUNT = "123456789012"
JOB = "PyTorchJob/ml-demo/train"


@dataclass(frozen=True)
class Addr:
    ip: str
    zone: str
    zone_id: str
    job: str  # "" for no training job


def addresses(snapshot: Path) -> dict[str, Addr]:
    items = json.loads(snapshot.read_text())["items"]
    nodes = {i["metadata"]["name"]: i for i in items if i["kind"] == "Node"}
    out: dict[str, Addr] = {}
    for n in nodes.values():
        lab = n["metadata"]["labels"]
        for a in n["status"]["addresses"]:
            if a["type"] == "InternalIP":
                out[a["address"]] = Addr(a["address"], lab["topology.kubernetes.io/zone"],
                                         lab["topology.k8s.aws/zone-id"], "")
    for p in items:
        if p["kind"] != "Pod" or not p["spec"].get("nodeName"):
            continue
        lab = nodes[p["spec"]["nodeName"]]["metadata"]["labels"]
        job = p["metadata"].get("labels", {}).get("training.kubeflow.org/job-name")
        out[p["status"]["podIP"]] = Addr(p["status"]["podIP"], lab["topology.kubernetes.io/zone"],
                                         lab["topology.k8s.aws/zone-id"],
                                         f"PyTorchJob/{p['metadata']['namespace']}/{job}" if job else "")
    return out


@dataclass(frozen=True)
class Flow:
    src: str
    dst: str
    bytes: int
    day: dt.date
    minute: int = 0  # minutes after midnight UTC


def _epoch(day: dt.date, minute: int) -> int:
    return int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp()) + minute * 60


def records(flows: list[Flow], book: dict[str, Addr]) -> dict[dt.date, list[str]]:
    """Flow-log lines per day, both interfaces' records of each flow, plus one NODATA line."""
    out: dict[dt.date, list[str]] = defaultdict(list)
    for i, f in enumerate(flows):
        t0 = _epoch(f.day, f.minute)
        for side in (f.src, f.dst):
            a = book.get(side)
            if a is None:
                continue
            out[f.day].append(f"5 {ACCOUNT} eni-{i:04x}{side.replace('.', '')[-4:]} {a.zone_id} "
                              f"{f.src} {f.dst} {f.bytes} {t0} {t0 + 60} ACCEPT OK")
    for day in list(out):
        t0 = _epoch(day, 600)
        out[day].append(f"5 {ACCOUNT} eni-0idle use1-az4 - - - {t0} {t0 + 60} - NODATA")
    return out


def truth(flows: list[Flow], book: dict[str, Addr]) -> dict[str, object]:
    """What the attribution must say: per job bytes and zone pairs; the other inter-AZ bytes."""
    jobs: dict[str, int] = defaultdict(int)
    pairs: dict[tuple[str, str, str], int] = defaultdict(int)
    other = unknown = 0
    for f in flows:
        a, b = book.get(f.src), book.get(f.dst)
        if a is None or b is None:
            unknown += f.bytes
            continue
        if a.zone == b.zone:
            continue
        for here, there in ((a, b), (b, a)):  # each interface's record
            job = here.job or there.job
            if job:
                jobs[job] += f.bytes
                pairs[(job, here.zone, there.zone)] += f.bytes
            else:
                other += f.bytes
    return {"jobs": dict(jobs), "pairs": dict(pairs), "other": other, "unknown": unknown}


def s3_key(day: dt.date, n: int) -> str:
    return (f"AWSLogs/{ACCOUNT}/vpcflowlogs/us-east-1/{day:%Y/%m/%d}/{ACCOUNT}_vpcflowlogs_"
            f"us-east-1_fl-0abc_{day:%Y%m%d}T0000Z_{n:04d}.log.gz")


def s3_body(lines: list[str]) -> bytes:
    return gzip.compress(("\n".join([FIELDS, *lines]) + "\n").encode(), mtime=0)
