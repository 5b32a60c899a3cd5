"""One pod identity: `check` and `trace` give every pod the same pod class (layout issue, fact 1).

For every pod template of every manifest under fixtures/ (training jobs' replica groups and plain
workloads), the class check's map computes (analysis.map.cluster.ClusterMap.job_map, and
analysis.map.pods.pod_class for plain templates) must equal the class trace resolves for
`ns/Kind/name[/group]`. Before they shared topogate.k8s.pods, check left the service account
None and ignored sidecar ports while trace defaulted it to `default`: a policy on
`io.cilium.k8s.policy.serviceaccount: default` gave TG101 under check and ALLOWED under trace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from conftest import invoke

from topogate.analysis.map.cluster import HOST_NETWORK_PEER, POLICY_KINDS, ClusterMap
from topogate.analysis.map.pods import pod_class, pod_template
from topogate.analysis.netpolicy import Peer, PolicyError
from topogate.k8s.objects import K8sObject
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import ManifestError, collect
from topogate.trace import evaluate as trace_evaluate
from topogate.trace import resolve as trace_resolve
from topogate.trace.model import TraceError

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures"
LAB = FIXTURES / "lab" / "inventory.yaml"


def _manifest_files() -> Iterator[Path]:
    for f in sorted(FIXTURES.rglob("*.yaml")):
        rel = f.relative_to(FIXTURES).parts
        if rel[0] in ("golden", "bad", "fuzz-corpus") or f.name.startswith("kustomization"):
            continue
        yield f


def _objects(f: Path) -> list[K8sObject]:
    try:
        return collect([str(f)])
    except ManifestError:
        return []  # not a manifest (an inventory, a values file): no pod template to compare


def differences(objects: list[K8sObject]) -> list[str]:
    """Every pod template whose check class differs from its trace class, in words."""
    inv = load_inventory(LAB)
    try:
        cm = ClusterMap(inv, inv.clusters[0], objects, [])
    except PolicyError:
        # a malformed policy (its own fixture): pod identity does not depend on the policies
        objects = [o for o in objects if o.kind not in POLICY_KINDS]
        cm = ClusterMap(inv, inv.clusters[0], objects, [])
    out: list[str] = []
    for job in cm.jobs:
        _, classes, _ = cm.job_map(job)
        for g in job.groups:
            spec = f"{job.namespace}/{job.kind}/{job.name}/{g.name}"
            # a hostNetwork pod is no Cilium endpoint: both see the node's entity instead
            expected = HOST_NETWORK_PEER if g.spec.get("hostNetwork") is True else classes[g.name]
            out += _compare(objects, spec, expected)
    for o in objects:
        tpl = pod_template(o)
        if tpl is not None:
            ns = o.namespace or "default"
            out += _compare(objects, f"{ns}/{o.kind}/{o.name}", pod_class(ns, tpl.labels, tpl.spec, cm.pset))
    return out


def _compare(objects: list[K8sObject], spec: str, expected: Peer) -> list[str]:
    try:
        got = trace_evaluate.trace(objects, spec, "default:topogate.test/peer=1").src.peer
    except TraceError as e:
        return [f"{spec}: trace cannot resolve it ({e})"]
    return [] if got == expected else [f"{spec}: check {expected!r} != trace {got!r}"]


@pytest.mark.parametrize("f", list(_manifest_files()), ids=lambda p: str(p.relative_to(FIXTURES)))
def test_check_and_trace_agree_on_every_pod(f: Path) -> None:
    objects = _objects(f)
    assert differences(objects) == []


def test_fixtures_hold_pod_templates() -> None:
    # the comparison above is not vacuous: it covers jobs and plain workloads of many files
    files = [f for f in _manifest_files() if any(pod_template(o) is not None or o.kind in ("PyTorchJob", "MPIJob")
                                                for o in _objects(f))]
    assert len(files) >= 20


def test_a_divergence_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second opinion on the service account, as trace once had, is caught."""
    objects = _objects(FIXTURES / "incident" / "broken" / "workers.yaml") + _objects(
        FIXTURES / "incident" / "broken" / "coordinator.yaml")
    assert differences(objects) == []
    real = trace_resolve.pod_identity

    def other(ns, labels, spec):  # type: ignore[no-untyped-def]
        who = real(ns, labels, spec)
        return type(who)(who.namespace, who.labels, "trace-only", who.named_ports)

    monkeypatch.setattr(trace_resolve, "pod_identity", other)
    assert differences(objects)


SA_POLICY = {
    "apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
    "metadata": {"name": "by-account", "namespace": "ml-demo"},
    "spec": {"endpointSelector": {}, "ingress": [{"fromEndpoints": [
        {"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "default"}}]}],
        "egress": [{"toEndpoints": [{"matchLabels": {"io.cilium.k8s.policy.serviceaccount": "default"}}]},
                   {"toEndpoints": [{"matchLabels": {"k8s:io.kubernetes.pod.namespace": "kube-system",
                                                     "k8s-app": "kube-dns"}}],
                    "toPorts": [{"ports": [{"port": "53", "protocol": "ANY"}]}]}]},
}


def test_a_policy_on_the_default_service_account(tmp_path: Path) -> None:
    """The reviewer's example: check and trace now give the same answer (allowed)."""
    (tmp_path / "policy.yaml").write_text(yaml.safe_dump(SA_POLICY))
    for part in ("coordinator.yaml", "workers.yaml"):
        (tmp_path / part).write_text((FIXTURES / "incident" / "fixed" / part).read_text())
    run = invoke("check", str(LAB), str(tmp_path), "--format", "json")
    found = {f["rule"] for f in json.loads(run.stdout)["findings"]}
    assert "TG101" not in found, run.stdout
    traced = invoke("trace", str(tmp_path), "--from", "ml-demo/Job/gpu-workers",
                    "--to", "ml-demo/Deployment/coordinator")
    assert traced.exit_code == 0, traced.output
