"""The boundary proof (TG107) over every port and protocol, the pods no policy selects, and
what a finding says when nothing enforces the boundary at all."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import yaml
from click.testing import CliRunner

from topogate.cli import main

ROOT = Path(__file__).resolve().parents[1]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
CASES = ROOT / "fixtures" / "cases" / "boundary"


def findings(*args: str) -> tuple[int, list[dict[str, object]]]:
    r = CliRunner().invoke(main, ["check", *args, "--format", "json"])
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


def test_declared_scrapers_may_use_the_metrics_port_only() -> None:
    # The inventory must sit beside its bases (inside the repository): a scratch copy there.
    inv = LAB.parent / f".test-metrics-{uuid.uuid4().hex[:8]}.yaml"
    inv.write_text(LAB.read_text().replace("  placement: pin\n", "  placement: pin\n  metrics: {port: 9090}\n"))
    try:
        code, fs = findings(str(inv))
        assert (code, fs) == (0, []), fs
    finally:
        inv.unlink()


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
