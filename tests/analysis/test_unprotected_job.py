"""TG110 for jobs no pod policy can select: hostNetwork pods carry the node's identity, so the
usual fix ("apply its generated policy") would change nothing; the warning says what would."""

from __future__ import annotations

from pathlib import Path

from check_support import RULES, run_case


def test_host_network_job_is_told_what_can_protect_it(tmp_path: Path) -> None:
    out = run_case(RULES / "TG110-unprotected-job" / "fail", tmp_path)
    hits = {f.object: f for f in out.result.findings if f.rule == "TG110"}
    assert set(hits) == {"PyTorchJob/ml-demo/train", "PyTorchJob/ml-demo/nccl-host"}
    host = hits["PyTorchJob/ml-demo/nccl-host"]
    assert host.severity == "warning"
    assert "runs every pod with hostNetwork: true (Master, Worker)" in host.message
    assert "no CiliumNetworkPolicy or NetworkPolicy can select them" in host.message
    assert "drop hostNetwork: true" in host.message and "nodeSelector" in host.message
    assert "apply its generated policy" not in host.message
    # the ordinary unprotected job keeps the ordinary fix
    assert "apply its generated policy" in hits["PyTorchJob/ml-demo/train"].message
    # and the hostNetwork job's open boundary is an error of its own, naming its groups
    assert any(f.rule == "TG107" and "nccl-host (Master, Worker, network zone gpu, hostNetwork)" in f.message
               for f in out.result.findings)
