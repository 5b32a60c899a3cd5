"""Semantics the upstream examples exposed (issue 9, item 7), each as our own small case:
not-modelled constructs are warnings in check (TG120), invalid selector operators are refused,
fromRequires/toRequires narrow the endpoint peers of every policy selecting the pod,
DNS is judged from UDP/53, kubeflow.org/v1 MPIJob pods carry the v1 controller's labels, an
empty JobSet is not split, and a TrainJob without its runtime is a finding."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from cilium_support import inventory_with_agent
from conftest import invoke

from topogate.k8s.jobs import find_jobs

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
JOB = (ROOT / "fixtures" / "rules" / "TG110-unprotected-job" / "pass" / "manifests.yaml").read_text()
JOB_ONLY = JOB.split("---\napiVersion: cilium.io/v2")[0]


def check(*paths: Path) -> tuple[int, list[dict[str, Any]], str]:
    r = invoke("check", str(LAB), *map(str, paths), "--format", "json")
    return r.exit_code, (json.loads(r.stdout)["findings"] if r.exit_code != 2 else []), r.stderr


def policy(tmp: Path, spec: str, name: str = "p.yaml") -> Path:
    f = tmp / name
    f.write_text("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata:\n  name: p\n"
                 "  namespace: ml-demo\nspec:\n" + spec)
    return f


def with_job(tmp: Path) -> Path:
    (tmp / "job.yaml").write_text(JOB_ONLY)
    return tmp / "job.yaml"


DNS_EGRESS = """\
  - toEndpoints:
    - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
    toPorts:
    - ports: [PORTS]
"""


@pytest.mark.parametrize(("spec", "construct", "bound"), [
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
     "    toPorts:\n    - ports: [{port: '8080', protocol: TCP}]\n      rules: {http: [{method: GET}]}\n",
     "L7 rules (http)", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  egress:\n  - toServices: [{k8sService: {serviceName: db, namespace: ml-demo}}]\n",
     "toServices", "too strict"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
     "    authentication: {mode: required}\n", "authentication.mode", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  egress:\n  - toPorts:\n    - ports: [{port: '443'}]\n"
     "      serverNames: [one.example.com]\n", "serverNames", "too permissive"),
    ("  endpointSelector: {matchLabels: {app: train}}\n  egress:\n  - toPorts:\n    - ports: [{port: '80'}]\n"
     "      listener: {envoyConfig: {kind: CiliumEnvoyConfig, name: e}, name: l}\n", "listener", "too permissive"),
])
def test_check_warns_about_what_it_does_not_model(tmp_path: Path, spec: str, construct: str, bound: str) -> None:
    f = policy(tmp_path, spec)
    code, fs, _ = check(with_job(tmp_path), f)
    hits = [x for x in fs if x["rule"] == "TG120"]
    assert len(hits) == 1, fs
    assert construct in hits[0]["message"] and bound in hits[0]["message"]
    assert hits[0]["file"] == str(f) and hits[0]["line"] > 6  # at the construct, not the policy's start


def test_a_host_policy_is_warned_about_and_a_namespaced_one_refused(tmp_path: Path) -> None:
    spec = "  nodeSelector: {matchLabels: {node-type: gpu}}\n  ingress:\n  - fromEntities: [cluster]\n"
    f = policy(tmp_path, spec)
    f.write_text(f.read_text().replace("kind: CiliumNetworkPolicy", "kind: CiliumClusterwideNetworkPolicy")
                 .replace("  namespace: ml-demo\n", ""))
    _, fs, _ = check(with_job(tmp_path), f)
    hits = [x for x in fs if x["rule"] == "TG120"]
    assert len(hits) == 1 and "nodeSelector" in hits[0]["message"] and "too permissive" in hits[0]["message"], fs
    # In a CiliumNetworkPolicy the agent refuses a nodeSelector: none of the policy is enforced.
    f.unlink()
    f = policy(tmp_path, spec, "cnp.yaml")
    _, fs, _ = check(with_job(tmp_path), f)
    refused = [x for x in fs if x["rule"] == "TG125"]
    assert len(refused) == 1 and "rule cannot have NodeSelector" in refused[0]["message"], fs
    assert refused[0]["file"] == str(f) and refused[0]["line"] == 7  # at the nodeSelector


def test_invalid_operator_is_refused_with_its_position(tmp_path: Path) -> None:
    f = policy(tmp_path, "  endpointSelector:\n    matchExpressions:\n    - {key: app, operator: in, values: [train]}\n"
                         "  ingress:\n  - {}\n")
    code, _, err = check(with_job(tmp_path), f)
    assert code == 2 and f"{f}:1:1:" in err and "operator 'in'" in err
    r = invoke("trace", str(f), "--from", "ml-demo:app=train", "--to", "world")
    assert r.exit_code == 2 and "operator 'in'" in r.stderr


def _dns_case(tmp: Path, ports: str) -> list[dict[str, Any]]:
    spec = ("  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints: [{matchLabels: {app: train}}]\n"
            "  egress:\n  - toEndpoints: [{matchLabels: {app: train}}]\n" + DNS_EGRESS.replace("PORTS", ports))
    _, fs, _ = check(with_job(tmp), policy(tmp, spec))
    return [x for x in fs if x["rule"] == "TG108"]


def test_dns_is_judged_from_udp(tmp_path: Path) -> None:
    assert _dns_case(tmp_path, "{port: '53', protocol: UDP}") == []  # only TCP/53 closed
    (tmp_path / "b").mkdir()
    closed = _dns_case(tmp_path / "b", "{port: '53', protocol: TCP}")  # only UDP/53 closed
    assert closed and all("53/UDP" in x["message"] for x in closed)


def test_mpijob_v1_pods_carry_the_v1_controller_labels() -> None:
    obj = {"apiVersion": "kubeflow.org/v1", "kind": "MPIJob", "metadata": {"name": "m", "namespace": "ml"},
           "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {}},
                                        "Worker": {"replicas": 2, "template": {}}}}}
    (job,) = find_jobs([(obj, None)])
    launcher = job.group("Launcher")
    assert launcher is not None
    assert launcher.label_map == {
        "training.kubeflow.org/job-name": "m", "training.kubeflow.org/operator-name": "mpijob-controller",
        "training.kubeflow.org/replica-type": "launcher", "training.kubeflow.org/job-role": "master"}
    obj["apiVersion"] = "kubeflow.org/v2beta1"
    (v2,) = find_jobs([(obj, None)])
    assert v2.group("Launcher").label_map["training.kubeflow.org/operator-name"] == "mpi-operator"  # type: ignore[union-attr]


def test_empty_jobset_is_not_split(tmp_path: Path) -> None:
    f = tmp_path / "js.yaml"
    f.write_text(yaml.safe_dump({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
                                 "metadata": {"name": "e", "namespace": "ml-demo"}, "spec": {"replicatedJobs": []}}))
    code, fs, _ = check(f)
    # the lab inventory's own job is not among the PATHs (TG008)
    assert sorted(x["rule"] for x in fs) == ["TG008", "TG121"]
    assert not any("split across zones ()" in x["message"] for x in fs)


def _trace(*args: str) -> tuple[int, dict[str, Any]]:
    r = invoke("trace", *args, "--format", "json")
    return r.exit_code, (json.loads(r.stdout) if r.exit_code != 2 else {"err": r.stderr})


FQDN_POLICY = """\
  endpointSelector: {matchLabels: {app: fetch}}
  egress:
  - toEndpoints:
    - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
    toPorts:
    - ports: [{port: '53', protocol: ANY}]
      rules:
        dns: [{matchPattern: DNSPATTERN}]
  - toFQDNs: [{matchPattern: '**.cilium.io'}]
"""


@pytest.mark.parametrize(("dns", "verdict"), [("'*.cluster.local'", "denied"), ("'*'", "allowed"),
                                              ("'*.cilium.io'", "allowed")])
def test_to_fqdns_needs_the_dns_rule_to_permit_the_lookup(tmp_path: Path, dns: str, verdict: str) -> None:
    f = policy(tmp_path, FQDN_POLICY.replace("DNSPATTERN", dns))
    code, data = _trace(str(f), "--from", "ml-demo:app=fetch", "--to", "fqdn:docs.cilium.io", "--port", "443")
    assert data["verdict"] == verdict, data


def test_host_network_pods_are_not_selected_by_cnps(tmp_path: Path) -> None:
    job = JOB_ONLY.replace("          affinity:", "          hostNetwork: true\n          affinity:")
    (tmp_path / "job.yaml").write_text(job)
    deny_all = policy(tmp_path, "  endpointSelector: {}\n  ingress:\n  - fromEndpoints: [{matchLabels: {nobody: x}}]\n"
                                "  egress:\n  - toEndpoints: [{matchLabels: {nobody: x}}]\n")
    _, fs, _ = check(tmp_path / "job.yaml", deny_all)
    assert not [x for x in fs if x["rule"] in ("TG101", "TG108")], fs
    code, data = _trace(str(tmp_path), "--from", "ml-demo/PyTorchJob/train/Worker", "--to", "ml-demo:app=x", "--port", "443")
    assert data["from"]["entity"] == "remote-node" and any("hostNetwork" in n for n in data["from"]["notes"])


def test_gpu_taint_tolerated_by_extended_resource_toleration(tmp_path: Path) -> None:
    inv = tmp_path / "inv.yaml"
    inv.write_text("""\
apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: ert}
clusters:
- name: eks
  provider: aws
  region: us-east-1
  zones:
  - name: us-east-1a
    pools:
    - {name: gpu, nodes: 2, gpusPerNode: 8, taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}
  networkZones:
  - {name: all, zones: [us-east-1a]}
""")
    job = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "t", "namespace": "ml"},
           "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": {"containers": [
               {"name": "pytorch", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    r = invoke("check", str(inv), str(tmp_path / "job.yaml"), "--format", "json")
    assert not [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "TG103"]
    r = invoke("explain", str(inv), "t", str(tmp_path / "job.yaml"))
    assert "ExtendedResourceToleration" in r.stdout
    del job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["resources"]  # type: ignore[index]
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(job))
    r = invoke("check", str(inv), str(tmp_path / "job.yaml"), "--format", "json")
    assert [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "TG103"]  # no GPU asked: not tolerated


def test_remote_base_is_refused_before_any_fetch(tmp_path: Path) -> None:
    # A remote base is refused at its own line before kubectl runs (nothing is fetched, so no
    # bare "exit status 128"); the URL names only the loopback address anyway.
    (tmp_path / "kustomization.yaml").write_text("resources:\n- https://127.0.0.1:9/acme/bases//train?ref=v1\n")
    code, fs, _ = check(tmp_path)
    assert code == 1  # one finding for the root, not exit 2 for the whole run
    (remote,) = [f for f in fs if f["rule"] == "TG009"]
    assert (remote["line"], remote["column"]) == (2, 3) and remote["file"].endswith("kustomization.yaml")
    assert "resources entry" in remote["message"] and "is remote" in remote["message"]
    assert "vendor it into the repository" in remote["message"] and "--exclude" in remote["message"]


HELM = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n"


def test_helm_template_in_a_directory_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "chart" / "templates").mkdir(parents=True)
    (tmp_path / "chart" / "templates" / "d.yaml").write_text(HELM)
    (tmp_path / "job.yaml").write_text(JOB)
    code, fs, _ = check(tmp_path)
    assert code == 0
    (skip,) = [f for f in fs if f["rule"] == "TG123"]
    assert skip["file"].endswith("chart/templates/d.yaml") and "Helm template" in skip["message"]
    r = invoke("trace", str(tmp_path), "--from", "ml-demo:app=train", "--to", "world",
               "--format", "json")
    assert any("Helm template" in w for w in json.loads(r.stdout)["warnings"])
    code, _, err = check(tmp_path / "chart" / "templates" / "d.yaml")  # named explicitly: still an error
    assert code == 2 and "YAML syntax error" in err


def test_policy_of_a_reserved_identity_is_named_not_dropped(tmp_path: Path) -> None:
    # A policy whose endpointSelector names a reserved identity guards Cilium's own endpoint
    # (health, init), never a pod: topogate does not apply it, and says so at the selector.
    f = tmp_path / "p.yaml"
    f.write_text("apiVersion: cilium.io/v2\nkind: CiliumClusterwideNetworkPolicy\nmetadata:\n  name: probes\n"
                 "spec:\n  endpointSelector:\n    matchLabels: {'reserved:health': ''}\n"
                 "  ingress:\n  - fromEntities: [remote-node]\n")
    code, fs, _ = check(with_job(tmp_path), f)
    (hit,) = [x for x in fs if x["rule"] == "TG120"]
    assert "reserved:health" in hit["message"] and "too permissive" in hit["message"]
    assert (hit["file"], hit["line"]) == (str(f), 7)
    code, data = _trace(str(f), "--from", "ml-demo:app=train", "--to", "health", "--port", "4240")
    assert data["verdict"] == "allowed"  # Cilium would drop it: the warning says the verdict is loose
    assert any("reserved:health" in w and "too permissive" in w for w in data["warnings"]), data


def test_cilium_policy_without_api_version_is_refused(tmp_path: Path) -> None:
    # A mis-cased `apiversion` key: kubectl refuses the object, so judging the tree without it
    # (or with it) would be a verdict about something that cannot be applied.
    f = tmp_path / "p.yaml"
    f.write_text("apiversion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata:\n  name: p\n  namespace: ml-demo\n"
                 "spec:\n  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEntities: [world]\n")
    code, _, err = check(with_job(tmp_path), f)
    assert code == 2 and f"{f}:1:1:" in err and "no apiVersion" in err and "'apiversion'" in err
    r = invoke("trace", str(f), "--from", "world", "--to", "ml-demo:app=train")
    assert r.exit_code == 2 and "no apiVersion" in r.stderr


@pytest.mark.parametrize("kind", ["cilium", "netpol"])
def test_label_at_the_wrong_indentation_is_refused(tmp_path: Path, kind: str) -> None:
    # `- matchLabels:` followed by a label at the same indentation leaves matchLabels empty and
    # makes the label a field of the selector: as written the selector would pick every pod.
    if kind == "cilium":
        f = policy(tmp_path, "  endpointSelector: {matchLabels: {app: train}}\n  ingress:\n  - fromEndpoints:\n"
                             "    - matchLabels:\n      role: monitor\n")
    else:
        f = tmp_path / "np.yaml"
        f.write_text("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata:\n  name: np\n"
                     "  namespace: ml-demo\nspec:\n  podSelector:\n    matchLabels:\n    app: train\n"
                     "  ingress:\n  - {}\n")
    code, _, err = check(with_job(tmp_path), f)
    assert code == 2 and f"{f}:1:1:" in err and "label selector field" in err
    r = invoke("trace", str(f), "--from", "world", "--to", "ml-demo:app=train")
    assert r.exit_code == 2 and "label selector field" in r.stderr


REQUIRES = """\
  endpointSelector: {matchLabels: {app: train}}
  ingress:
  - fromRequires: [{matchLabels: {tier: trusted}}]
"""
OPENS = """\
  endpointSelector: {matchLabels: {app: train}}
  ingress:
  - fromEndpoints: [{matchLabels: {role: client}}]
  - fromEntities: [world]
    toPorts: [{ports: [{port: '443'}]}]
"""


@pytest.mark.parametrize(("src", "port", "verdict"), [
    ("ml-demo:role=client,tier=trusted", "80", "allowed"),  # meets the requirement
    ("ml-demo:role=client", "80", "denied"),  # admitted by the other policy, but lacks tier=trusted
    ("world", "443", "allowed"),  # requirements narrow endpoint selectors only, not entities
])
def test_from_requires_narrows_every_policy_selecting_the_pod(tmp_path: Path, src: str, port: str,
                                                              verdict: str) -> None:
    # The requirement is written in one policy and narrows the fromEndpoints of another that
    # selects the same pods (Cilium adds it to every endpoint selector of those rules).
    # fromRequires is enforced by Cilium 1.18 (1.19's CRDs allow no item): the inventory says so.
    policy(tmp_path, REQUIRES, "a.yaml")
    (tmp_path / "b.yaml").write_text(policy(tmp_path, OPENS, "b.yaml").read_text().replace("name: p", "name: q"))
    inv = inventory_with_agent(tmp_path / "inv", {"version": "1.18"})
    code, data = _trace(str(tmp_path / "a.yaml"), str(tmp_path / "b.yaml"), "--inventory", str(inv),
                        "--from", src, "--to", "ml-demo:app=train", "--port", port)
    assert data["verdict"] == verdict, data
    assert not any("Requires" in w for w in data["warnings"])


def test_to_requires_narrows_egress_endpoints(tmp_path: Path) -> None:
    f = policy(tmp_path, "  endpointSelector: {matchLabels: {app: train}}\n  egress:\n"
                         "  - toEndpoints: [{matchLabels: {app: store}}]\n    toRequires: [{matchLabels: {zone: a}}]\n")
    inv = str(inventory_with_agent(tmp_path / "inv", {"version": "1.18.0"}))
    _, ok = _trace(str(f), "--inventory", inv, "--from", "ml-demo:app=train", "--to", "ml-demo:app=store,zone=a",
                   "--port", "9000")
    _, no = _trace(str(f), "--inventory", inv, "--from", "ml-demo:app=train", "--to", "ml-demo:app=store,zone=b",
                   "--port", "9000")
    assert (ok["verdict"], no["verdict"]) == ("allowed", "denied")
    # From 1.19 the CRD allows no item: the API server refuses the policy, and nothing of it applies.
    _, now = _trace(str(f), "--from", "ml-demo:app=train", "--to", "ml-demo:app=store,zone=b", "--port", "9000")
    assert now["verdict"] == "allowed", now
    assert any("the API server refuses this policy" in w and "toRequires" in w for w in now["warnings"]), now
