"""One position per rule (issue 9, item 6): every finding and every explanation cites a file
that exists and the deciding rule's own line, for allowed and denied flows alike."""

from __future__ import annotations

import json
import re
from pathlib import Path

from conftest import invoke

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
INCIDENT = ROOT / "fixtures" / "incident"
CITED = re.compile(r"\(([^()\s]+\.ya?ml):(\d+)(?::\d+)?\)")


def cli(*args: str) -> tuple[int, str]:
    r = invoke(*args)
    return r.exit_code, r.stdout


def line_of(file: str, n: int) -> str:
    return Path(file).read_text().splitlines()[n - 1]


def test_explain_of_generated_tree_cites_the_inventory_not_a_scratch_path() -> None:
    code, out = cli("explain", str(LAB), "train")
    assert code == 0
    assert "(generated)" not in out
    cites = CITED.findall(out)
    assert cites and all(Path(f).is_file() for f, _ in cites)
    # The generated policy comes from the workload's inventory entry.
    assert {(Path(f).name, line_of(f, int(n)).strip()) for f, n in cites} == {("inventory.yaml", "- name: train")}


def test_explain_json_every_decided_flow_has_a_real_position() -> None:
    code, out = cli("explain", str(LAB), "train", "--format", "json")
    flows = json.loads(out)["flows"]
    decided = [f for f in flows if f["decidedBy"]]
    assert decided, "allowed flows name the rule that allows them too"
    for f in decided:
        assert Path(f["decidedAt"]["file"]).is_file(), f


def test_denied_by_default_deny_cites_the_enforcing_section() -> None:
    code, out = cli("check", str(LAB), str(INCIDENT / "broken"), "--format", "json")
    hb = [f for f in json.loads(out)["findings"] if f["rule"] == "TG101"]
    assert hb
    for f in hb:
        (cite,) = CITED.findall(f["message"])
        # The enforcing policy's egress rules: the list under its `egress:` key.
        assert line_of(cite[0], int(cite[1]) - 1).strip() == "egress:", f["message"]


def test_explain_cites_rule_lines_for_allowed_and_denied(tmp_path: Path) -> None:
    job = (ROOT / "fixtures" / "rules" / "TG110-unprotected-job" / "pass" / "manifests.yaml").read_text()
    job = job.split("---\napiVersion: cilium.io/v2")[0]
    (tmp_path / "job.yaml").write_text(job)
    (tmp_path / "policy.yaml").write_text("""\
apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata:
  name: train
  namespace: ml-demo
spec:
  endpointSelector:
    matchLabels: {app: train}
  egress:
  - toEndpoints:
    - matchLabels: {app: train}
  - toEndpoints:
    - matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}
    toPorts:
    - ports: [{port: "53", protocol: UDP}, {port: "53", protocol: TCP}]
  egressDeny:
  - toEndpoints:
    - matchLabels: {app: train}
    toPorts:
    - ports: [{port: "23456", protocol: TCP}]
""")
    code, out = cli("explain", str(LAB), "train", str(tmp_path))
    policy = str(tmp_path / "policy.yaml")
    lines = {}
    for flow, reason in re.findall(r"^  (\S.*)\n      (.*)$", out, re.M):
        lines[flow] = {(Path(f).name, int(n)) for f, n in CITED.findall(reason)}
    rendezvous = next(v for k, v in lines.items() if "rendezvous" in k)
    assert rendezvous == {("policy.yaml", 17)}  # the egressDeny rule, not the policy's line 1
    dns = next(v for k, v in lines.items() if "UDP/53" in k)
    assert ("policy.yaml", 12) in dns  # egress rule 1
    assert line_of(policy, 17).strip().startswith("- toEndpoints")
