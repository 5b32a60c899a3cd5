"""`topogate explain`: where each group can land and why not elsewhere; each flow's verdict
and the policy (and line) that decided it."""

from __future__ import annotations

import json

from report_support import BROKEN, CLEAN, CNP, CNP_AT

from topogate.report.explain import explain_json, explain_text


def test_text_groups_and_pools() -> None:
    out = explain_text(BROKEN)
    assert out.startswith("PyTorchJob/ml-team/llama-ft (cluster gpu-east) at jobs/llama.yaml:1:1\n")
    assert "  colocated: NO\n    Master has no zone constraint and may land in us-east-1b\n" in out
    assert "  Master: 1 pod at jobs/llama.yaml:9:7\n    can land in: us-east-1a, us-east-1b\n" in out
    assert "    no  us-east-1c/gpu-h100: taint gpu=present:NoSchedule not tolerated" in out
    assert "    no  us-east-1b/cpu: nodeAffinity node-type In [gpu] does not match" in out
    assert "    ok  us-east-1a/gpu-a100" in out
    assert "capacity: needs 32 GPUs; zone us-east-1a holds 32: fits" in out


def test_text_flows_denied_first_with_deciding_policy() -> None:
    out = explain_text(BROKEN)
    flows = out.split("Required flows\n", 1)[1].splitlines()
    assert flows[0] == "  DENY  Worker (us-east-1a) -> Master (us-east-1b) TCP/* nccl"
    assert flows[2] == f"      decided by {CNP} at {CNP_AT}"
    assert "  DENY  Worker (us-east-1a) -> Master (us-east-1b) TCP/23456 rendezvous" in flows
    assert out.endswith("\n2 of 5 required flows blocked\n")
    assert explain_text(CLEAN).endswith("\nall 3 required flows allowed\n")


def test_json_has_every_field() -> None:
    d = explain_json(BROKEN)
    json.dumps(d)  # serialisable as is
    assert d["object"] == BROKEN.object and d["kind"] == "PyTorchJob"
    assert d["namespace"] == "ml-team" and d["name"] == "llama-ft"
    assert d["position"] == {"file": "jobs/llama.yaml", "line": 1, "column": 1}
    assert d["inventoryPosition"] == {"file": "inventory.yaml", "line": 40, "column": 3}
    assert d["colocated"] is False and d["schedulable"] is True
    assert d["splitReasons"] == list(BROKEN.split_reasons)
    assert d["capacity"] == {"fits": True, "has": 32, "needs": 32, "zone": "us-east-1a"}
    assert d["zones"] == ["us-east-1a", "us-east-1b"]
    master = d["groups"][0]
    assert master["labels"] == {"app": "llama", "role": "master"}
    assert master["pools"][2] == {"zone": "us-east-1c", "pool": "gpu-h100", "feasible": False,
                                  "reason": "taint gpu=present:NoSchedule not tolerated"}
    denied = [f for f in d["flows"] if not f["allowed"]]
    assert len(denied) == d["blocked"] == 2
    assert denied[1] == {
        "from": "Worker", "to": "Master", "fromZone": "us-east-1a", "toZone": "us-east-1b",
        "port": 23456, "protocol": "TCP", "purpose": "rendezvous", "allowed": False,
        "reason": denied[1]["reason"], "decidedBy": CNP,
        "decidedAt": {"file": CNP_AT.file, "line": CNP_AT.line, "column": CNP_AT.column},
    }
    dns = [f for f in d["flows"] if f["purpose"] == "dns"][0]
    assert dns["decidedAt"] is None  # unknown position is null, not "<unknown>"
