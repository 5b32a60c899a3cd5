"""Flows in the shape `hubble observe -o json` writes them, made from a fixture's pods: the
labels Cilium gives a pod are its template's (plus what its controller stamps), prefixed
``k8s:``, with the namespace and service-account labels Cilium adds."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

EXTRA = {"Job": lambda name: {"job-name": name, "batch.kubernetes.io/job-name": name}}


def pod_labels(manifest: Path) -> tuple[str, dict[str, str]]:
    """(namespace, labels) of the pods of the one workload in `manifest`."""
    doc = yaml.safe_load(manifest.read_text())
    labels = dict(doc["spec"]["template"]["metadata"]["labels"])
    labels.update(EXTRA.get(doc["kind"], lambda _n: {})(doc["metadata"]["name"]))
    return doc["metadata"]["namespace"], labels


def endpoint(ns: str, labels: dict[str, str], pod: str, sa: str = "default") -> dict[str, Any]:
    ls = [f"k8s:{k}={v}" for k, v in labels.items()]
    ls += [f"k8s:io.kubernetes.pod.namespace={ns}", f"k8s:io.cilium.k8s.policy.serviceaccount={sa}"]
    return {"ID": 1234, "identity": 51234, "namespace": ns, "labels": sorted(ls), "pod_name": pod}


WORLD: dict[str, Any] = {"identity": 2, "labels": ["reserved:world"]}


def flow(src: dict[str, Any], src_ip: str, dst: dict[str, Any], dst_ip: str, port: int, proto: str = "TCP",
         verdict: str = "FORWARDED", reply: bool = False, reason: str | None = None) -> str:
    f: dict[str, Any] = {
        "time": "2026-12-01T10:00:00.000000000Z", "verdict": verdict, "Type": "L3_L4",
        "IP": {"source": src_ip, "destination": dst_ip, "ipVersion": "IPv4"},
        "l4": {proto: {"source_port": 40123, "destination_port": port}},
        "source": src, "destination": dst, "node_name": "lab/node-a", "is_reply": reply,
        "traffic_direction": "EGRESS",
    }
    if reason:
        f["drop_reason_desc"] = reason
    return json.dumps({"flow": f, "node_name": "lab/node-a", "time": f["time"]}, sort_keys=True)


def incident_flows(tree: Path) -> list[str]:
    """The incident's traffic: workers rendezvous with the coordinator on 29500, all ask DNS,
    workers talk NCCL among themselves, one worker reaches an outside address."""
    wns, wl = pod_labels(tree / "workers.yaml")
    cns, cl = pod_labels(tree / "coordinator.yaml")
    w, w2 = endpoint(wns, wl, "gpu-workers-0-abcde"), endpoint(wns, wl, "gpu-workers-1-fghij")
    c = endpoint(cns, cl, "coordinator-7d9f-xyz")
    dns = endpoint("kube-system", {"k8s-app": "kube-dns"}, "coredns-1")
    return [
        flow(w, "10.0.1.5", c, "10.0.2.9", 29500, verdict="DROPPED", reason="POLICY_DENIED"),
        flow(c, "10.0.2.9", w, "10.0.1.5", 29500, reply=True),
        flow(w, "10.0.1.5", dns, "10.0.0.10", 53, "UDP"),
        flow(c, "10.0.2.9", dns, "10.0.0.10", 53, "UDP"),
        flow(w2, "10.0.1.6", w, "10.0.1.5", 12345),
        flow(w, "10.0.1.5", {}, "198.51.100.7", 443),
    ]
