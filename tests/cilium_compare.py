"""topogate's answer and Cilium's on one generated case (tests/cilium_cases.py), and a shrinker
that cuts a disagreeing case down to what still disagrees.

topogate is asked as a user asks it: the case's objects written as YAML and collected like PATHs,
the agent's settings as the `cilium:` block of a one-cluster inventory (`--inventory`), and
`topogate.trace.trace` (what `topogate trace` runs) per flow with `--port PORT/PROTO`. Cilium is
asked through tests/cilium_support.CiliumOracle. A side that is not a pod carries no policy, so
Cilium's "none" is compared as allowed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from cilium_cases import oracle_request, pod_name
from cilium_support import CiliumOracle, schema_errors
from crd_support import network_policy_api_validator

from topogate.sources.manifests import collect
from topogate.trace import TraceError, trace

# A side's answer: "allowed", "denied", or an error text.
Side = str
Answer = tuple[Side, Side]

INVENTORY = "inventory.yaml"


def inventory(settings: dict[str, Any]) -> dict[str, Any] | None:
    """A one-cluster inventory carrying the case's agent settings, or None for none."""
    block = cilium_block(settings)
    if block is None:
        return None
    return {"apiVersion": "topogate.dev/v1alpha1", "kind": "Inventory", "metadata": {"name": "oracle"},
            "clusters": [{"name": "oracle", "provider": "other", "region": "r",
                          "zones": [{"name": "z", "pools": [{"name": "p", "nodes": 1}]}],
                          "networkZones": [{"name": "n", "zones": ["z"]}], "cilium": block}],
            "workloads": []}


# The oracle's settings (cilium-config's words) and the inventory's `cilium:` keys.
_BLOCK = {"labels": "labels", "policyCIDRMatchMode": "policyCIDRMatchMode",
          "enableNodeSelectorLabels": "enableNodeSelectorLabels", "allowLocalhost": "allowLocalhost",
          "enforcement": "policyEnforcement", "clusterName": "clusterName", "apiServer": "kubeAPIServer",
          "enableK8sClusterNetworkPolicy": "enableK8sClusterNetworkPolicy"}


def cilium_block(settings: dict[str, Any]) -> dict[str, Any] | None:
    """The inventory's `cilium:` block for the oracle's settings (None: the defaults)."""
    if not settings:
        return None
    block: dict[str, Any] = {"version": "1.20.2"}
    for k, v in settings.items():
        block[_BLOCK[k]] = " ".join(v) if isinstance(v, list) else v
    return block


def write_case(c: dict[str, Any], where: Path) -> tuple[str, str | None]:
    where.mkdir(parents=True, exist_ok=True)
    for old in where.glob("*.yaml"):
        old.unlink()
    docs = [*c["namespaces"], *c["pods"], *c["policies"]]
    (where / "case.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False), encoding="utf-8")
    inv = inventory(c["settings"])
    inv_path = None
    if inv is not None:
        inv_path = str(where / INVENTORY)
        Path(inv_path).write_text(yaml.safe_dump(inv, sort_keys=False), encoding="utf-8")
    return str(where / "case.yaml"), inv_path


def topogate_answers(c: dict[str, Any], where: Path) -> list[Answer]:
    path, inv = write_case(c, where)
    try:
        objects = collect([path])
    except Exception as err:  # noqa: BLE001 - reported as the answer of every flow
        return [(f"error: {err}", f"error: {err}")] * len(c["flows"])
    out: list[Answer] = []
    for f in c["flows"]:
        try:
            r = trace(objects, f["from"], f["to"], f"{f['port']}/{f['proto']}", inv)
        except TraceError as err:
            out.append((f"error: {err.message}", f"error: {err.message}"))
            continue
        v = r.classes[0].verdict
        out.append(("allowed" if v.egress.allowed else "denied", "allowed" if v.ingress.allowed else "denied"))
    return out


def _fqdn(f: dict[str, Any]) -> bool:
    return str(f["from"]).startswith("fqdn:") or str(f["to"]).startswith("fqdn:")


@dataclass
class Asked:
    """Cilium's answer for the case's flows (FQDN flows: None), and what else it said."""

    flows: list[Answer | None]
    redirect: list[bool]
    refused: dict[int, str]  # policy index -> the agent's reason
    raw: dict[str, Any]


def cilium_answers(c: dict[str, Any], oracle: CiliumOracle) -> Asked:
    ans = oracle.ask(oracle_request(c))
    if ans.get("error"):
        raise AssertionError(f"cilium-oracle could not read the case: {ans['error']}")
    refused = {i: p["error"] for i, p in enumerate(ans.get("policies") or []) if p.get("error")}
    decode = [p["error"] for p in ans.get("policies") or [] if p.get("decode")]
    if decode:
        raise AssertionError(f"the generator wrote an object the agent cannot decode: {decode[0]}")
    bad = [e for e in ans.get("endpoints") or [] if e.get("error")]
    if bad:
        raise AssertionError(f"cilium-oracle: endpoint {bad[0]['name']}: {bad[0]['error']}")
    flows: list[Answer | None] = []
    redirect: list[bool] = []
    it: Iterator[dict[str, Any]] = iter(ans.get("flows") or [])
    for f in c["flows"]:
        if _fqdn(f):
            flows.append(None)
            redirect.append(False)
            continue
        a = next(it)
        if a.get("error"):
            raise AssertionError(f"cilium-oracle: flow {f}: {a['error']}")
        flows.append(tuple("allowed" if s == "none" else s for s in (a["egress"], a["ingress"])))  # type: ignore[arg-type]
        redirect.append(bool(a.get("egressRedirect") or a.get("ingressRedirect")))
    return Asked(flows, redirect, refused, ans)


@dataclass
class Disagreement:
    seed: int
    flow: dict[str, Any]
    topogate: Answer
    cilium: Answer
    case: dict[str, Any]  # shrunk when `shrunk`
    shrunk: bool = False
    klass: str = ""

    def render(self) -> str:
        head = (f"seed {self.seed}: {self.flow['from']} -> {self.flow['to']} {self.flow['port']}/"
                f"{self.flow['proto']}: topogate egress {self.topogate[0]}, ingress {self.topogate[1]}; "
                f"cilium egress {self.cilium[0]}, ingress {self.cilium[1]}  [{self.klass}]")
        body = {k: self.case[k] for k in ("settings", "namespaces", "pods", "policies") if self.case.get(k)}
        kept = "shrunk reproducer" if self.shrunk else "reproducer (not shrunk: time budget)"
        return f"{head}\n  {kept}:\n" + "\n".join("    " + line for line in
                                                 yaml.safe_dump(body, sort_keys=False).splitlines())


@dataclass
class Tally:
    cases: int = 0
    queries: int = 0
    agreed: int = 0
    exceptions: dict[str, int] = field(default_factory=dict)
    disagreements: list[Disagreement] = field(default_factory=list)
    refused: int = 0

    def exception(self, name: str) -> None:
        self.exceptions[name] = self.exceptions.get(name, 0) + 1


def api_errors(c: dict[str, Any]) -> list[str]:
    """What the API server would refuse among the case's policies: the pinned Cilium CRDs' schema,
    ClusterNetworkPolicy's CRD, and NetworkPolicy's peer rule (one of podSelector,
    namespaceSelector, ipBlock; ipBlock alone). Such a case is no case: nothing reaches an agent."""
    out: list[str] = []
    for p in c["policies"]:
        out += schema_errors(p)
        if p.get("kind") == "ClusterNetworkPolicy":
            v = network_policy_api_validator("ClusterNetworkPolicy", str(p.get("apiVersion")))
            out += [e.message for e in v.iter_errors(p)] if v is not None else []
        if p.get("kind") == "NetworkPolicy":
            spec = p.get("spec") or {}
            for d, k in (("ingress", "from"), ("egress", "to")):
                for rule in spec.get(d) or []:
                    for peer in (rule or {}).get(k) or []:
                        if not peer or ("ipBlock" in peer and len(peer) > 1):
                            out.append(f"{d} {k} peer {peer}: must be one of podSelector/namespaceSelector, or ipBlock")
    return out


def compare_case(seed: int, c: dict[str, Any], oracle: CiliumOracle, where: Path, tally: Tally) -> None:
    bad = api_errors(c)
    assert not bad, f"seed {seed}: the generator wrote what the API server refuses: {bad[0]}"
    asked = cilium_answers(c, oracle)
    ours = topogate_answers(c, where)
    tally.cases += 1
    tally.refused += len(asked.refused)
    for f, mine, theirs, redirected in zip(c["flows"], ours, asked.flows, asked.redirect, strict=True):
        if theirs is None:
            tally.exception("FQDN (toFQDNs learns addresses from the DNS proxy: not asked)")
            continue
        tally.queries += 1
        if redirected:
            tally.exception("L7 (the flow goes to Cilium's proxy: compared at L4 only)")
        if mine == theirs:
            tally.agreed += 1
        else:
            tally.disagreements.append(Disagreement(seed, f, mine, theirs, c))


def _paths(node: Any, here: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every deletable place under `node`, shallow first."""
    level: list[tuple[Any, ...]] = []
    deeper: list[tuple[Any, ...]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            level.append((*here, k))
            deeper += list(_paths(v, (*here, k)))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            level.append((*here, i))
            deeper += list(_paths(v, (*here, i)))
    yield from level
    yield from deeper


def _delete(c: dict[str, Any], path: tuple[Any, ...]) -> dict[str, Any] | None:
    out = json.loads(json.dumps(c))
    node: Any = out
    for p in path[:-1]:
        node = node[p]
    last = path[-1]
    if isinstance(node, dict):
        if last not in node:
            return None
        del node[last]
    elif isinstance(node, list) and isinstance(last, int) and last < len(node):
        del node[last]
    else:
        return None
    return out


# What the shrinker may delete: parts of the policies, the pods' labels and ports, Namespace
# labels, settings; never an object's identity (kind, names) nor the flow's own endpoints.
_KEEP = {"apiVersion", "kind", "name", "namespace", "metadata", "spec", "containers", "image"}


def _deletable(path: tuple[Any, ...]) -> bool:
    if len(path) < 2 or path[0] not in ("settings", "namespaces", "pods", "policies"):
        return False
    if path[0] == "namespaces" and len(path) == 2:
        return False
    return path[-1] not in _KEEP


def shrink(d: Disagreement, oracle: CiliumOracle, where: Path, deadline: float) -> Disagreement:
    """The smallest case (one flow) that still gets the same two answers."""
    c = dict(d.case)
    c["flows"] = [d.flow]
    names = {d.flow["from"], d.flow["to"]}
    c["endpoints"] = [e for e in c["endpoints"] if e["name"] in names]
    c["pods"] = [p for p in c["pods"] if pod_name(p) in names]

    def still(cand: dict[str, Any]) -> bool:
        if api_errors(cand):
            return False
        try:
            theirs = cilium_answers(cand, oracle).flows[0]
        except AssertionError:
            return False
        return theirs == d.cilium and topogate_answers(cand, where)[0] == d.topogate

    if not still(c):
        return d
    progress = True
    while progress and time.monotonic() < deadline:
        progress = False
        for path in list(_paths(c)):
            if time.monotonic() >= deadline:
                break
            if not _deletable(path):
                continue
            cand = _delete(c, path)
            if cand is not None and still(cand):
                c = cand
                progress = True
                break
    return Disagreement(d.seed, d.flow, d.topogate, d.cilium, c, shrunk=time.monotonic() < deadline)


def klass(d: Disagreement, oracle: CiliumOracle) -> str:
    """A name for the kind of disagreement, read off the shrunk case (for the summary only)."""
    if cilium_answers(d.case, oracle).refused:
        return "policy the agent refuses"
    text = json.dumps(d.case["policies"])
    settings = d.case["settings"]
    filtered = ("topology.kubernetes.io", "kubernetes.io/hostname", "pod-template-hash", "beta.kubernetes.io")
    if any(k in text for k in filtered) or settings.get("labels"):
        return "identity labels"
    if "reserved:" in text:
        return "reserved: selector"
    if "cluster-mesh" in text:
        return "cluster-mesh entity"
    if "kube-apiserver" in (d.flow["from"], d.flow["to"]) or settings.get("apiServer"):
        return "kube-apiserver identity"
    if "0.0.0.0/0" in text:
        return "world vs 0.0.0.0/0"
    if '"ClusterNetworkPolicy"' in text or settings.get("enableK8sClusterNetworkPolicy"):
        return "ClusterNetworkPolicy"
    if '"NetworkPolicy"' in text and "policyTypes" in text:
        return "NetworkPolicy policyTypes"
    if settings:
        return "settings: " + ", ".join(sorted(settings))
    return "other"
