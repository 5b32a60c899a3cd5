"""The boundary proof (TG107) over every port and protocol, the pods no policy selects, and
what a finding says when nothing enforces the boundary at all."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import yaml
from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
CASES = ROOT / "fixtures" / "cases" / "boundary"


def findings(*args: str) -> tuple[int, list[dict[str, object]]]:
    r = invoke("check", *args, "--format", "json")
    return r.exit_code, json.loads(r.stdout)["findings"]


def test_range_below_the_probe_port_is_found_with_its_rule() -> None:
    # Regression: TCP 1-23455 to `entities: [cluster]` passed when only 23456 was probed, while
    # `topogate trace` said ALLOWED on port 22 (the MPI launcher's SSH).
    code, fs = findings(str(LAB), str(CASES / "mpi-low-ports.yaml"))
    opened = [f for f in fs if f["rule"] == "TG107"]
    assert code == 1 and opened, fs
    # the wide rule opens the job's own ingress too (TG112); nothing else is wrong with the job
    assert {f["rule"] for f in fs} == {"TG107", "TG112"}
    msg = next(str(f["message"]) for f in opened if str(f["message"]).startswith("MPIJob/ml-demo/train"))
    assert "network zone gpu" in msg and "network zone general" in msg
    assert "on 1-23455/TCP" in msg and "22/TCP (MPI launcher SSH)" in msg and "23456" not in msg
    assert "egress rule 0 of CiliumNetworkPolicy/ml-demo/cluster-low-ports" in msg
    # each finding sits on the opening rule itself, in the file that holds it
    text = (CASES / "mpi-low-ports.yaml").read_text().splitlines()
    for f in opened:
        assert str(f["file"]).endswith("mpi-low-ports.yaml")
        line = text[int(f["line"]) - 1]
        assert line.strip().startswith(("- fromEntities", "- toEntities")), line
        assert int(f["column"]) == line.index("-") + 3  # the rule mapping after "- "


def test_udp_and_sctp_are_part_of_the_boundary(tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all((CASES / "mpi-low-ports.yaml").read_text()))
    wide = docs[1]
    for rule in (*wide["spec"]["ingress"], *wide["spec"]["egress"]):
        rule["toPorts"] = [{"ports": [{"port": "4000", "endPort": 4010, "protocol": "UDP"},
                                      {"port": "9000", "protocol": "SCTP"}]}]
    f = tmp_path / "udp.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    code, fs = findings(str(LAB), str(f))
    msgs = [str(x["message"]) for x in fs if x["rule"] == "TG107"]
    assert code == 1 and msgs
    assert any("on 4000-4010/UDP, 9000/SCTP" in m for m in msgs), msgs
    assert not any("/TCP" in m for m in msgs)


def test_nothing_enforcing_the_boundary_says_what_to_include(tmp_path: Path) -> None:
    job = next(yaml.safe_load_all((CASES / "mpi-low-ports.yaml").read_text()))
    f = tmp_path / "job.yaml"
    f.write_text(yaml.safe_dump(job))
    code, fs = findings(str(LAB), str(f))
    opened = [f for f in fs if f["rule"] == "TG107"]
    assert code == 1 and len(opened) == 1, fs
    msg = str(opened[0]["message"])
    assert "nothing among the checked paths enforces the boundary" in msg
    assert "topogate generate" in msg and "network" in msg and "narrow" not in msg
    assert str(opened[0]["file"]).endswith("job.yaml")


def test_generated_policies_close_every_port(tmp_path: Path) -> None:
    # The lab's own generated tree: every port of every protocol is closed between zones.
    code, fs = findings(str(LAB))
    assert (code, fs) == (0, [])


def test_job_opened_to_the_cluster_is_reported_at_the_widest_rule(tmp_path: Path) -> None:
    # Regression: with the boundary policies in place, `endpointSelector: {}` and
    # `fromEntities/toEntities: [cluster]` in the job's namespace let every pod reach the Master.
    from check_support import RULES, run_case

    out = run_case(RULES / "TG112-job-open-ingress" / "fail", tmp_path)
    (hit,) = [f for f in out.result.findings if f.rule == "TG112"]
    assert hit.severity == "error" and out.exit_code == 1
    assert "PyTorchJob/ml-demo/train (Master, Worker)" in hit.message
    assert "1-65535/TCP, 1-65535/UDP, 1-65535/SCTP" in hit.message
    assert "an unlabelled pod of namespace ml-demo" in hit.message
    assert "ingress rule 0 of CiliumNetworkPolicy/ml-demo/allow-cluster" in hit.message
    assert hit.file.endswith("ciliumnetworkpolicy.yaml") and hit.line > 60


def test_declared_scrapers_may_use_the_metrics_port_only(tmp_path: Path) -> None:
    # The inventory must sit beside its bases, and an untracked file of the checkout is never
    # read: a scratch copy of the lab, outside any git work tree.
    lab = shutil.copytree(LAB.parent, tmp_path / "lab")
    inv = lab / "inventory.yaml"
    inv.write_text(LAB.read_text().replace("  placement: pin\n", "  placement: pin\n  metrics: {port: 9090}\n"))
    code, fs = findings(str(inv))
    assert (code, fs) == (0, []), fs


def test_zones_without_jobs_are_asked_in_every_managed_namespace(tmp_path: Path) -> None:
    # No job among the paths: the label-only pods of ops and train-a face each other in `llm`
    # (nothing decides there) and in `vision`, where a policy opens ops to the whole cluster.
    multi = ROOT / "fixtures" / "multi" / "inventory.yaml"
    cnp = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
           "metadata": {"name": "ops-out", "namespace": "vision"},
           "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/network-zone": "ops"}},
                    "egress": [{"toEntities": ["cluster"]}]}}
    f = tmp_path / "ops.yaml"
    f.write_text(yaml.safe_dump(cnp))
    code, fs = findings(str(multi), str(f), "--cluster", "gpu-west")
    msgs = [str(x["message"]) for x in fs if x["rule"] == "TG107"]
    assert code == 1 and msgs, fs
    assert any(m.startswith("a pod of network zone ops in namespace vision can reach "
                            "a pod of network zone train-a in namespace vision") for m in msgs), msgs


def test_ingress_from_another_job_named_by_label_is_reported(tmp_path: Path) -> None:
    docs = list(yaml.safe_load_all((ROOT / "fixtures/rules/TG107-opens-boundary/pass/manifests.yaml").read_text()))
    train_pol = next(d for d in docs if d["metadata"]["name"] == "train-job")
    etl_pol = next(d for d in docs if d["metadata"]["name"] == "etl-job")
    train_pol["spec"]["ingress"].append({"fromEndpoints": [{"matchLabels": {"app": "etl"}}],
                                         "toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}]}]})
    etl_pol["spec"]["egress"].append({"toEndpoints": [{"matchLabels": {"app": "train"}}]})
    f = tmp_path / "jobs.yaml"
    f.write_text(yaml.safe_dump_all(docs))
    code, fs = findings(str(LAB), str(f))
    (hit,) = [x for x in fs if x["rule"] == "TG112"]
    assert "PyTorchJob/ml-demo/train" in str(hit["message"]) and "on 8080/TCP" in str(hit["message"])
    assert "PyTorchJob/ml-demo/etl can connect" in str(hit["message"])


# hostNetwork pods (issue 9): Cilium gives them the node's identity, never their labels.
HOSTNET = CASES / "hostnet-job.yaml"
GENERAL_CLOSED = {
    "apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
    "metadata": {"name": "general-closed"},
    "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/network-zone": "general"}},
             "ingress": [{"fromEndpoints": [{"matchLabels": {"k8s:topogate.dev/network-zone": "general"}}]}],
             "egress": [{"toEndpoints": [{"matchLabels": {"k8s:topogate.dev/network-zone": "general"}}]}]}}


def _hostnet_case(tmp_path: Path, *extra: dict[str, object], name: str = "case.yaml") -> tuple[int, list[dict[str, object]]]:
    f = tmp_path / name
    f.write_text(yaml.safe_dump_all([*yaml.safe_load_all(HOSTNET.read_text()), *extra]))
    return findings(str(LAB), str(f))


def test_host_network_job_is_open_beside_the_generated_policies() -> None:
    # Regression: the proof asked the job's labels, which the generated policies select, and
    # said "ok"; Cilium gives these pods the node's identity, which no pod policy selects.
    code, fs = findings(str(LAB), str(HOSTNET))
    opened = {str(f["message"]).split(" on ")[0]: f for f in fs if f["rule"] == "TG107"}
    assert code == 1, fs
    job = "PyTorchJob/ml-demo/train (Master, Worker, network zone gpu, hostNetwork)"
    rep = "a pod of network zone general in namespace ml-demo"
    assert set(opened) == {f"{job} can reach {rep}", f"{rep} can reach {job}"}, fs
    out, into = (str(opened[k]["message"]) for k in (f"{job} can reach {rep}", f"{rep} can reach {job}"))
    for msg in (out, into):
        assert "1-65535/TCP, 1-65535/UDP, 1-65535/SCTP" in msg and "Fix: drop hostNetwork: true" in msg
        assert "host policy" in msg and "topogate generate" not in msg
    assert "remote-node" in out and "nothing on the receiving side closes" in out
    assert "no CiliumNetworkPolicy or NetworkPolicy applies to their ingress" in into
    # both sit on the Master's `hostNetwork: true`
    text = HOSTNET.read_text().splitlines()
    for f in opened.values():
        assert f["severity"] == "error" and str(f["file"]).endswith("hostnet-job.yaml")
        assert text[int(f["line"]) - 1].strip() == "hostNetwork: true", text[int(f["line"]) - 1]


def test_host_network_job_as_seen_by_the_other_zones_policies(tmp_path: Path) -> None:
    # Zone general enforces both directions and names only its own pods: the hostNetwork pods
    # neither get in (remote-node is not admitted) nor are reached (egress does not allow it).
    code, fs = _hostnet_case(tmp_path, GENERAL_CLOSED)
    msgs = [str(f["message"]) for f in fs if f["rule"] == "TG107"]
    assert not [m for m in msgs if "network zone general" in m], msgs
    # A pod nobody manages, somewhere in another zone, still has nothing to stop either side.
    assert len(msgs) == 2 and all("an unlabelled pod in a namespace no policy manages" in m for m in msgs)
    # `cluster` admits the node's identity: the sender's finding cites that rule at its line.
    opened = copy.deepcopy(GENERAL_CLOSED)
    opened["spec"]["ingress"].append({"fromEntities": ["cluster"]})  # type: ignore[index]
    code, fs = _hostnet_case(tmp_path, opened, name="opened.yaml")
    (hit,) = [f for f in fs if f["rule"] == "TG107" and str(f["message"]).startswith("PyTorchJob/ml-demo/train")
              and "network zone general in namespace" in str(f["message"])]
    assert "opened by ingress rule 1 of CiliumClusterwideNetworkPolicy/general-closed" in str(hit["message"])
    text = (tmp_path / "opened.yaml").read_text().splitlines()
    assert "fromEntities" in text[int(hit["line"]) - 1]


def test_entity_rule_of_another_job_reaches_host_network_pods(tmp_path: Path) -> None:
    # No label selector names a hostNetwork pod, but `toEntities: [remote-node]` does.
    docs = list(yaml.safe_load_all((ROOT / "fixtures/rules/TG107-opens-boundary/pass/manifests.yaml").read_text()))
    etl = next(d for d in docs if d["metadata"]["name"] == "etl")
    nodes = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
             "metadata": {"name": "etl-nodes", "namespace": "ml-demo"},
             "spec": {"endpointSelector": {"matchLabels": {"app": "etl"}}, "egress": [{"toEntities": ["remote-node"]}]}}
    for g in etl["spec"]["pytorchReplicaSpecs"].values():
        g["template"]["metadata"]["labels"]["topogate.dev/network-zone"] = "general"
    code, fs = _hostnet_case(tmp_path, GENERAL_CLOSED, etl, nodes)
    (hit,) = [f for f in fs if f["rule"] == "TG107" and str(f["message"]).startswith("PyTorchJob/ml-demo/etl")]
    msg = str(hit["message"])
    assert "can reach PyTorchJob/ml-demo/train (Master, Worker, network zone gpu, hostNetwork)" in msg
    assert "opened by egress rule 0 of CiliumNetworkPolicy/ml-demo/etl-nodes" in msg


def test_host_policy_among_paths_turns_the_finding_into_a_warning(tmp_path: Path) -> None:
    host = {"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
            "metadata": {"name": "gpu-nodes"},
            "spec": {"nodeSelector": {"matchLabels": {"node-type": "gpu"}}, "egress": [{"toEntities": ["host"]}]}}
    code, fs = _hostnet_case(tmp_path, host)
    opened = [f for f in fs if f["rule"] == "TG107"]
    assert len(opened) == 2 and {f["severity"] for f in opened} == {"warning"}, fs
    assert all("CiliumClusterwideNetworkPolicy/gpu-nodes" in str(f["message"])
               and "may be too strict" in str(f["message"]) for f in opened)
    assert [f for f in fs if f["rule"] == "TG120"] and code == 0


def test_rules_that_cannot_select_host_network_pods_are_not_blamed_for_their_ingress(tmp_path: Path) -> None:
    # Regression: TG112 named `endpointSelector: {}` + `fromEntities: [cluster]` as what opens a
    # hostNetwork job, while TG109 rightly said that policy selects no pod there.
    wide = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
            "metadata": {"name": "allow-cluster", "namespace": "ml-demo"},
            "spec": {"endpointSelector": {}, "ingress": [{"fromEntities": ["cluster"]}]}}
    code, fs = _hostnet_case(tmp_path, wide)
    assert not [f for f in fs if f["rule"] == "TG112"], fs
    assert any(f["rule"] == "TG109" and "allow-cluster" in str(f["message"]) for f in fs)
    assert any(f["rule"] == "TG107" and str(f["message"]).startswith("a pod of network zone general")
               and "hostNetwork" in str(f["message"]) for f in fs)
