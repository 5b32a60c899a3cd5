"""check's proofs held to Cilium's engine: every flow the map decides (the job flows, the boundary,
who may reach a job, the doors) for the policies `topogate generate` writes, recorded as the
proofs ask `PolicySet.evaluate` and `PolicySet.closed`, then asked of cilium-oracle over the same
policy objects, pods (the proofs' witnesses and members, as pods with their labels) and entities.

The recording wraps the two methods and hands their answers back unchanged (a spy: the proofs
run as they always do). A `closed` side (no port can pass) is asked of the oracle on the ports
a proof would use (a few of every protocol).
"""

from __future__ import annotations

import random
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from cilium_cases import ENTITY_LIKE
from cilium_support import CiliumOracle

from topogate.analysis.map.build import build_map
from topogate.analysis.netpolicy import Peer, PodClass, PolicySet
from topogate.generators import render_tree
from topogate.policies import FACTS
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import collect
from topogate.tree import writer

POLICY_KINDS = ("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy", "ClusterNetworkPolicy")
# Ports a closed side is asked on: the ones jobs use, and the ends.
CLOSED_PORTS = ((1, "TCP"), (22, "TCP"), (53, "UDP"), (53, "TCP"), (443, "TCP"), (23456, "TCP"), (65535, "UDP"))


@dataclass
class Recorded:
    """What the proofs asked: (src, dst, port, proto) -> (egress allowed, ingress allowed), and
    the sides they found closed: (pod, peer, dst, direction)."""

    flows: dict[tuple[Peer, Peer, int, str], tuple[bool, bool]] = field(default_factory=dict)
    closed: set[tuple[PodClass, Peer, Peer, str]] = field(default_factory=set)
    psets: list[PolicySet] = field(default_factory=list)


def record(monkeypatch: pytest.MonkeyPatch) -> Recorded:
    rec = Recorded()
    evaluate, closed = PolicySet.evaluate, PolicySet.closed

    def spy_evaluate(self: PolicySet, src: Peer, dst: Peer, port: int, protocol: str) -> Any:
        v = evaluate(self, src, dst, port, protocol)
        if not any(p is self for p in rec.psets):
            rec.psets.append(self)
        rec.flows[(src, dst, int(port), protocol.upper())] = (v.egress.allowed, v.ingress.allowed)
        return v

    def spy_closed(self: PolicySet, pod: PodClass, peer: Peer, dst: Peer, direction: str) -> bool:
        got = closed(self, pod, peer, dst, direction)
        if got:
            rec.closed.add((pod, peer, dst, direction))
        return got

    monkeypatch.setattr(PolicySet, "evaluate", spy_evaluate)
    monkeypatch.setattr(PolicySet, "closed", spy_closed)
    return rec


def generated(inventory: Path) -> tuple[Any, list[Any]]:
    """The inventory and the objects of its generated tree (built with the real kustomize)."""
    inv = load_inventory(inventory)
    out = inventory.parent / "out"
    writer.write_tree(str(out), render_tree(inv, str(out)))
    return inv, collect([str(out / "clusters" / c.name) for c in inv.clusters], also_inside=[str(inventory)])


def _pod(p: PodClass) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "x",
                                            **({"ports": [{"name": n, "containerPort": num, "protocol": pr}
                                                          for n, num, pr in p.ports]} if p.ports else {})}]}
    if p.service_account:
        spec["serviceAccountName"] = p.service_account
    return {"metadata": {"name": "p", "namespace": p.namespace, "labels": dict(p.labels)}, "spec": spec}


def _endpoint(name: str, peer: Peer) -> dict[str, Any] | None:
    if isinstance(peer, PodClass):
        return {"name": name, "pod": _pod(peer)}
    if peer.fqdn:
        return None  # the oracle cannot resolve a name (no DNS proxy): not asked
    if peer.cidr:
        return {"name": name, "cidr": peer.cidr.split("/")[0]} if peer.cidr.endswith(("/32", "/128")) else None
    if peer.entity in ENTITY_LIKE:
        ep: dict[str, Any] = {"name": name, "entity": peer.entity}
        if peer.labels:
            ep["nodeLabels"] = dict(peer.labels)
        return ep
    return None


@dataclass
class ProofTally:
    asked: int = 0
    agreed: int = 0
    skipped: int = 0  # peers the oracle cannot express (an FQDN, a CIDR range)
    disagreements: list[str] = field(default_factory=list)


def compare(rec: Recorded, objects: list[Any], settings: dict[str, Any], oracle: CiliumOracle,
            rnd: random.Random, limit: int, tally: ProofTally) -> None:
    """Ask the oracle (one case) a sample of what the proofs decided."""
    policies = [o.obj for o in objects if o.kind in POLICY_KINDS]
    namespaces: dict[str, dict[str, str]] = {}
    for o in objects:
        if o.kind == "Namespace":
            namespaces[o.name] = dict((o.obj.get("metadata") or {}).get("labels") or {})
    names: dict[Peer, str] = {}
    endpoints: list[dict[str, Any]] = []

    def name_of(peer: Peer) -> str | None:
        if peer not in names:
            ep = _endpoint(f"e{len(names)}", peer)
            if ep is None:
                return None
            names[peer] = ep["name"]
            endpoints.append(ep)
            if isinstance(peer, PodClass):
                labels = namespaces.setdefault(peer.namespace, {})
                labels.update(dict(peer.namespace_labels))
        return names[peer]

    queries: list[tuple[str, Any, tuple[bool, bool] | None]] = []
    flows = sorted(rec.flows.items(), key=repr)
    for (src, dst, port, proto), answer in rnd.sample(flows, min(limit, len(flows))):
        a, b = name_of(src), name_of(dst)
        if a is None or b is None or proto not in ("TCP", "UDP", "SCTP"):
            tally.skipped += 1
            continue
        queries.append((f"{src} -> {dst} {port}/{proto}", {"from": a, "to": b, "port": port, "proto": proto}, answer))
    closed = sorted(rec.closed, key=repr)
    for pod, peer, dst, direction in rnd.sample(closed, min(limit // 4, len(closed))):
        src = pod if direction == "egress" else peer
        a, b = name_of(src), name_of(dst)
        if a is None or b is None:
            tally.skipped += 1
            continue
        for port, proto in CLOSED_PORTS:
            queries.append((f"closed {direction} of {pod} with {peer} on {port}/{proto}",
                            {"from": a, "to": b, "port": port, "proto": proto, "side": direction}, None))
    if not queries:
        return
    answer = oracle.ask({"settings": settings, "namespaces": [{"name": n, "labels": v} for n, v in namespaces.items()],
                         "policies": policies, "endpoints": endpoints, "flows": [q[1] for q in queries]})
    assert not answer.get("error"), answer.get("error")
    for (what, q, ours), got in zip(queries, answer["flows"], strict=True):
        assert not got.get("error"), got
        theirs = tuple(s != "denied" for s in (got["egress"], got["ingress"]))
        tally.asked += 1
        if ours is None:  # a closed side: Cilium denies that side on every port asked
            ok = not theirs[0 if q["side"] == "egress" else 1]
        else:
            ok = theirs == ours
        if ok:
            tally.agreed += 1
        else:
            tally.disagreements.append(f"{what}: topogate {ours or 'closed'}, cilium {theirs}")


def settings_variants(rnd: random.Random) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    """(oracle settings, the inventory's cilium: block) pairs: the defaults, and agents whose
    settings change what the generated policies do."""
    yield {}, {}
    yield {"labels": ["!k8s:topogate.dev/replica-group"]}, {"labels": "!k8s:topogate.dev/replica-group"}
    yield {"enforcement": "always"}, {"policyEnforcement": "always"}
    yield {"clusterName": "east"}, {"clusterName": "east"}
    yield {"allowLocalhost": "policy", "apiServer": "world"}, {"allowLocalhost": "policy", "kubeAPIServer": "world"}


def with_block(inventory: Path, block: dict[str, Any], tmp: Path) -> Path:
    """A copy of the inventory's directory (its bases with it) whose every cluster has `block`."""
    d = tmp / f"inv-{len(list(tmp.glob('inv-*')))}"
    shutil.copytree(inventory.parent, d)
    doc = yaml.safe_load(inventory.read_text(encoding="utf-8"))
    for c in doc["clusters"]:
        if block:
            c["cilium"] = {"version": "1.20.2", **block}
    out = d / inventory.name
    out.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return out


def run_inventory(inventory: Path, settings: dict[str, Any], block: dict[str, Any], tmp: Path,
                  monkeypatch: pytest.MonkeyPatch, oracle: CiliumOracle, rnd: random.Random, limit: int,
                  tally: ProofTally) -> None:
    path = with_block(inventory, block, tmp)
    inv, objects = generated(path)
    with monkeypatch.context() as m:
        rec = record(m)
        build_map(inv, objects, facts=FACTS)  # the proofs the rules ask for run with the map
    compare(rec, objects, settings, oracle, rnd, limit, tally)
