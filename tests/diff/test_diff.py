"""`topogate diff`: every flow a change opens or closes, and the rule deciding it on each side.

Trees are read for real (kubectl kustomize for the inventory's base; real git for --base, in a
scratch repository). Every reported row is confirmed by `trace` on both trees, and every change
`trace` sees between the fixture pods is among the rows, for one deletion at a time of a rule
or a selector in policies of several shapes."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import GIT_ENV, invoke, run_cli
from render_support import door_widened_repo, mermaid_blocks, topogate

from topogate.diff import DiffResult, diff_trees, same_trees
from topogate.diff.render import REPORT, collapsed

REPO = Path(__file__).resolve().parents[2]
LAB = REPO / "fixtures" / "lab"
INCIDENT = REPO / "fixtures" / "incident"
COORD = "ml-demo/Group/train/Deployment/coordinator"
WORKERS = "ml-demo/Group/train/Job/gpu-workers"

# fixtures/incident broken -> fixed, one line per row (protocols of one range joined):
# change, sender -> receiver, ports, boundary, the deciding line at the base | at the head.
# The zone-a witness pods (`zone=zone-a`) are the workers: what the fix opens to them is told once,
# in the workers' rows.
INCIDENT_ROWS = [
    f"closed ml-demo:zone=zone-b -> {COORD} 1-65535/TCP,UDP,SCTP maybe | broken/policies.yaml:33:5 | fixed/policies.yaml:13:3",
    f"closed {COORD} -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP maybe | broken/policies.yaml:33:5 | fixed/policies.yaml:16:3",
    f"opened {COORD} -> {WORKERS} 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:33:3 | fixed/policies.yaml:16:5",
    f"opened {WORKERS} -> {COORD} 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:14:3 | fixed/policies.yaml:16:5",
    "opened kube-apiserver -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:30:3 | -",
    "opened remote-node -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:30:3 | -",
    "opened world -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:30:3 | -",
    "opened ml-demo:zone=zone-b -> host 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> kube-apiserver 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> remote-node 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> world 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:33:3 | -",
    "opened kube-system:k8s-app=kube-dns -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP - | broken/policies.yaml:30:3 | -",
    # DNS on 53 was open before (the zone-b policy's DNS rule) and stays open
    "opened ml-demo:zone=zone-b -> kube-system:k8s-app=kube-dns 1-52/TCP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> kube-system:k8s-app=kube-dns 54-65535/TCP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> kube-system:k8s-app=kube-dns 1-52/UDP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> kube-system:k8s-app=kube-dns 54-65535/UDP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> kube-system:k8s-app=kube-dns 1-65535/SCTP - | broken/policies.yaml:33:3 | -",
    "opened ml-demo:zone=zone-b -> any pod of a namespace no inventory manages 1-65535/TCP,UDP,SCTP - | "
    "broken/policies.yaml:33:3 | -",
    "opened any pod of a namespace no inventory manages -> ml-demo:zone=zone-b 1-65535/TCP,UDP,SCTP - | "
    "broken/policies.yaml:30:3 | -",
]


def _compact(d: DiffResult, strip: str = "") -> list[str]:
    def at(where: str) -> str:
        return where.replace(strip, "") or "-"
    return [f"{r.change} {r.src.shown} -> {r.dst.shown} {ports} {r.boundary or '-'} | {at(r.base.where)} | "
            f"{at(r.head.where)}" for r, ports in collapsed(d.rows)]


def _diff(tmp: Path, base: list[str], head: list[str], inventory: Path = LAB / "inventory.yaml") -> DiffResult:
    b, h = same_trees(str(inventory), base, head, str(tmp))
    return diff_trees(b, h, "base")


def test_a_tree_against_itself_is_empty(tmp_path: Path) -> None:
    for tree in ("broken", "fixed"):
        d = _diff(tmp_path, [str(INCIDENT / tree)], [str(INCIDENT / tree)])
        assert d.rows == () and d.members > 5 and d.clusters == ("lab",)
        assert "no connectivity change" in REPORT.render(d, "text")


def test_incident_broken_to_fixed_gives_exactly_the_expected_rows(tmp_path: Path) -> None:
    d = _diff(tmp_path, [str(INCIDENT / "broken")], [str(INCIDENT / "fixed")])
    assert _compact(d, "fixtures/incident/") == INCIDENT_ROWS
    # The fix opens the coordinator <-> workers flows the broken tree dropped, each side named.
    row = next(r for r in d.rows if r.src.shown == COORD and r.dst.shown == WORKERS and r.protocol == "TCP")
    assert row.base.words == "default deny (egress of CiliumNetworkPolicy/ml-demo/zone-b-only)"
    assert row.head.words == "allowed by egress rule 0 of CiliumNetworkPolicy/ml-demo/zone-a-only"
    assert (row.job, row.src.nz, row.dst.nz) == ("Group/ml-demo/train", "gpu", "gpu")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The lab inventory and the broken incident (as m/) committed on main; the work tree then
    holds the fixed one."""
    r = tmp_path / "repo"
    shutil.copytree(LAB, r)
    shutil.copytree(INCIDENT / "broken", r / "m")
    _git(r, "init", "-q", "-b", "main")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "broken")
    shutil.rmtree(r / "m")
    shutil.copytree(INCIDENT / "fixed", r / "m")
    monkeypatch.chdir(r)
    return r


def _cli(*args: str) -> tuple[int, str, str]:
    return run_cli("diff", *args)


def test_base_from_a_git_worktree_names_the_repository_files(repo: Path) -> None:
    code, out, _ = _cli("inventory.yaml", "m", "--base", "main", "--format", "json")
    assert code == 0
    got = json.loads(out)
    assert got["summary"] == {"rows": 47, "opened": 41, "closed": 6, "openedAcrossBoundary": 0}
    first = got["rows"][0]
    assert (first["base"]["file"], first["base"]["line"], first["base"]["column"]) == ("m/policies.yaml", 33, 5)
    assert (first["head"]["file"], first["head"]["line"], first["head"]["column"]) == ("m/policies.yaml", 13, 3)
    # The worktree is gone again, and nothing of the user's repository changed.
    listed = subprocess.run(["git", "worktree", "list"], capture_output=True, text=True, check=True).stdout
    assert len(listed.splitlines()) == 1
    status = subprocess.run(["git", "status", "--porcelain"], capture_output=True, text=True, check=True).stdout
    assert sorted(status.split()) == ["M", "M", "m/coordinator.yaml", "m/policies.yaml"]


def test_head_equal_to_base_is_empty_and_exit_zero(repo: Path) -> None:
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fixed")
    code, out, _ = _cli("inventory.yaml", "m", "--base", "HEAD", "--fail-on", "any")
    assert code == 0 and out.startswith("topogate diff: no connectivity change since HEAD")


def test_fail_on_opened_boundary(repo: Path) -> None:
    # A rule letting pods of the general network zone into the gpu zone's pods: crossed.
    pol = repo / "m" / "policies.yaml"
    docs = [d for d in yaml.safe_load_all(pol.read_text()) if d]
    docs[0]["spec"]["ingress"].append({"fromEndpoints": [{"matchLabels": {"topogate.dev/network-zone": "general"}}],
                                       "toPorts": [{"ports": [{"port": "8080", "protocol": "TCP"}]}]})
    pol.write_text(yaml.safe_dump_all(docs))
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "fixed")
    code, out, _ = _cli("inventory.yaml", "m", "--base", "HEAD~0", "--fail-on", "opened-boundary")
    assert code == 0  # HEAD against itself
    code, out, _ = _cli("inventory.yaml", "m", "--base", "HEAD~1", "--fail-on", "opened-boundary",
                        "--format", "json")
    assert code == 1
    crossed = [r for r in json.loads(out)["rows"] if r["boundary"] == "crossed" and r["change"] == "opened"]
    assert {(r["from"]["name"], r["to"]["name"], r["start"], r["end"], r["protocol"]) for r in crossed} == {
        ("ml-demo:topogate.dev/network-zone=general", COORD, 8080, 8080, "TCP"),
        ("ml-demo:topogate.dev/network-zone=general", WORKERS, 8080, 8080, "TCP")}  # zone=zone-a's pods are WORKERS
    assert _cli("inventory.yaml", "m", "--base", "HEAD~1")[0] == 0  # without --fail-on: exit 0


def test_bad_base_is_one_line_exit_2(repo: Path) -> None:
    code, _, err = _cli("inventory.yaml", "m", "--base", "no-such-ref")
    assert code == 2 and "'no-such-ref' is not a commit here" in err and len(err.splitlines()) == 1
    code, _, err = _cli("inventory.yaml", "-", "--base", "main")
    assert code == 2 and "standard input" in err
    code, _, err = _cli("inventory.yaml", str(INCIDENT / "fixed"), "--base", "main")
    assert code == 2 and "is outside the git work tree" in err


def test_output_file_takes_the_format_of_its_extension(repo: Path, tmp_path: Path) -> None:
    code, out, _ = _cli("inventory.yaml", "m", "--base", "main", "-o", str(tmp_path / "diff.sarif"))
    assert code == 0 and out.startswith("topogate diff: 47 connectivity changes")
    assert json.loads((tmp_path / "diff.sarif").read_text())["version"] == "2.1.0"


def test_formats_render_the_same_rows(tmp_path: Path) -> None:
    d = _diff(tmp_path, [str(INCIDENT / "broken")], [str(INCIDENT / "fixed")])
    md = REPORT.render(d, "markdown")
    assert md.count("| opened |") + md.count("| closed |") == len(collapsed(d.rows))
    assert "```mermaid" in md and "linkStyle" in md
    sarif = json.loads(REPORT.render(d, "sarif"))
    results = sarif["runs"][0]["results"]
    assert all(r["level"] == "note" and r["locations"] for r in results)
    regions = [r["locations"][0]["physicalLocation"]["region"] for r in results]
    assert all(g["startLine"] >= 1 and g["startColumn"] >= 1 for g in regions)  # the rule's own line and column
    assert sum(r["message"]["text"].count(" -> ") for r in results) == len(collapsed(d.rows))
    assert len(json.loads(REPORT.render(d, "json"))["rows"]) == len(d.rows)


def test_check_changed_since_markdown_ends_with_the_diff(repo: Path, tmp_path: Path) -> None:
    got = invoke("check", "inventory.yaml", "m", "--changed-since", "main", "--format", "markdown",
                 "-o", str(tmp_path / "report.md"))
    assert got.exit_code == 0, got.output
    section = got.stdout[got.stdout.index("### Connectivity changes since main"):]
    assert f"| opened | {COORD} | {WORKERS} | 1-65535/TCP,UDP,SCTP |" in section
    assert "m/policies.yaml:33" in section and "```mermaid" in section
    assert (tmp_path / "report.md").read_text().endswith(section)
    # Text and JSON reports are as before: the diff belongs to the pull-request comment.
    text = invoke("check", "inventory.yaml", "m", "--changed-since", "main", "--format", "text")
    assert "Connectivity changes" not in text.stdout


def test_widening_a_door_shows_in_the_diff_picture(tmp_path: Path) -> None:
    repo = door_widened_repo(tmp_path)  # fixtures/multi's datasets door: TCP 9000 -> 9000-9100
    _, md = topogate("diff", "inventory.yaml", "--base", "HEAD", "--format", "markdown", cwd=repo)
    (picture,) = mermaid_blocks(md)
    nodes = dict(re.findall(r'^    (n\d+)\["([^"]*)"\]$', picture, flags=re.M))
    edges = re.findall(r'^  (n\d+) -->\|"([^"]*)"\| (n\d+)$', picture, flags=re.M)
    opened = {(nodes[a], label, nodes[b]) for a, label, b in edges}
    # one edge for the door the change widens, from the job (both its groups), not one a group
    assert ("ml-team/PyTorchJob/llama-ft (Master, Worker)",
            "opened by CiliumNetworkPolicy/ml-team/topogate-llama-ft 9001-9100/TCP", "storage:app=s3-gateway") in opened
    # nothing else moved
    assert all(label == "opened by CiliumNetworkPolicy/ml-team/topogate-llama-ft 9001-9100/TCP"
               for _, label, _ in opened)


OPEN = """apiVersion: cilium.io/v2
kind: CiliumNetworkPolicy
metadata: {name: open-metrics, namespace: ml-team}
spec:
  endpointSelector: {matchLabels: {topogate.dev/workload: llama-ft}}
  ingress:
  - fromEntities: [%s]
    toPorts: [{ports: [{port: "8080", protocol: TCP}]}]
"""


def test_one_rule_opening_a_job_to_the_world_is_one_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rule letting `world` reach a job on one port: one row for the job (both its groups), no
    FQDN sender (a name selects a destination only), no name nobody wrote (`w.` of a wildcard),
    no witness row repeating the job's; `--fail-on opened-from-world` fails on it."""
    r = tmp_path / "repo"
    shutil.copytree(REPO / "fixtures" / "multi", r)
    monkeypatch.chdir(r)
    assert invoke("generate", "inventory.yaml", "-o", "deploy").exit_code == 0
    (r / "extra").mkdir()
    (r / "extra" / "open.yaml").write_text(OPEN % "host")
    _git(r, "init", "-q", "-b", "main")
    _git(r, "add", "-A")
    _git(r, "commit", "-qm", "base")
    code, _, _ = _cli("inventory.yaml", "deploy", "extra", "--base", "main", "--fail-on", "opened-from-world")
    assert code == 0
    (r / "extra" / "open.yaml").write_text(OPEN % "world")
    code, out, _ = _cli("inventory.yaml", "deploy", "extra", "--base", "main", "--format", "json",
                        "--fail-on", "opened-from-world")
    assert code == 1
    rows = [(x["cluster"], x["from"]["name"], x["to"]["name"], x["start"]) for x in json.loads(out)["rows"]]
    assert ("gpu-east", "world", "ml-team/PyTorchJob/llama-ft (Master, Worker)", 8080) in rows
    assert [x for x in rows if x[0] == "gpu-east"] == [("gpu-east", "world", "ml-team/PyTorchJob/llama-ft (Master, Worker)",
                                                        8080)]
    assert not any(x[1].startswith("fqdn:") or "w." in x[1] for x in rows)


def test_a_new_job_that_cannot_run_is_named(repo: Path) -> None:
    (repo / "m" / "stuck.yaml").write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: stuck, namespace: ml-demo}\nspec:\n"
        "  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n        spec:\n"
        "          nodeSelector: {gpu-model: none}\n          containers: [{name: c, image: x}]\n")
    _git(repo, "add", "-A")
    code, out, _ = _cli("inventory.yaml", "m", "--base", "main", "--format", "json")
    assert code == 0
    assert ("cluster lab: PyTorchJob/ml-demo/stuck is new and cannot run: Master fit no node (no flow of its is "
            "compared; `topogate check` says why)") in json.loads(out)["notes"]
