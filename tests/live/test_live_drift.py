"""`topogate drift`: the imported EKS inventory against recorded node lists.

The same against the real kube-apiserver, with the nodes created in it: tests/oracles/test_cluster_live.py.
A 5xx, which a real server cannot be made to answer, on the stand-in of tests/live_support.py.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from topogate.live.drift import compare
from topogate.live.nodes import parse_node
from topogate.report import REPORTERS
from topogate.sources.inventory import load_inventory

pytest.register_assert_rewrite("live_support")
pytest_plugins = ["live_support"]
from live_support import LIVE, REPO, TOKEN, StandIn, run, write_kubeconfig  # noqa: E402

INV = LIVE / "eks" / "inventory.yaml"
INV_REL = "fixtures/live/eks/inventory.yaml"
DRIFTED = LIVE / "eks-nodes-drifted.json"

EXPECTED = [  # (rule, line, object) of the drifted snapshot: see fixtures/live/README.md
    ("TG201", 9, "Zone/eks/us-east-1d"),
    ("TG205", 14, "Nodes/eks/us-east-1a/karpenter-sh-nodepool-cpu-spot"),
    ("TG204", 16, "Pool/eks/us-east-1a/gpu-p4d"),
    ("TG202", 26, "Pool/eks/us-east-1b/gpu-p4d"),
    ("TG203", 26, "Pool/eks/us-east-1b/gpu-p4d"),
    ("TG203", 36, "Pool/eks/us-east-1c/gpu-spot"),
]


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)  # findings name the inventory as given: relative to the repo


def test_no_drift_against_the_list_it_was_imported_from() -> None:
    code, out, err = run("drift", INV_REL, "--from-file", "fixtures/live/eks-nodes.json")
    assert (code, err) == (0, "")
    assert out == ("drift of cluster eks against fixtures/live/eks-nodes.json: 11 nodes in 3 zones "
                   "compared with 7 pools in 3 zones\n\nok: 0 errors, 0 warnings in 0 workloads\n")


def test_drift_findings_at_the_inventory_lines_they_concern() -> None:
    code, out, err = run("drift", INV_REL, "--from-file", str(DRIFTED), "--format", "json")
    assert code == 1 and err.startswith("drift of cluster eks against ")
    found = [(f["rule"], f["line"], f["object"]) for f in json.loads(out)["findings"]]
    assert found == EXPECTED
    lines = INV.read_text().splitlines()
    assert lines[9 - 1].strip() == "- name: eks"
    assert lines[14 - 1].strip() == "- name: us-east-1a"
    assert lines[26 - 1].strip().startswith("- name: gpu-p4d")
    assert lines[36 - 1].strip().startswith("- name: gpu-spot")
    messages = {f["rule"]: f["message"] for f in json.loads(out)["findings"]}
    assert messages["TG204"] == ("pool gpu-p4d in us-east-1a: 7 GPU(s) per node allocatable in the "
                                 "cluster, the inventory says gpusPerNode 8: ip-10-0-1-42.ec2.internal")


@pytest.mark.parametrize("fmt", sorted(REPORTERS))
def test_every_report_format_carries_the_drift(fmt: str) -> None:
    code, out, _ = run("drift", INV_REL, "--from-file", str(DRIFTED), "--format", fmt)
    assert code == 1
    for rule in {r for r, _, _ in EXPECTED}:
        assert rule in out, fmt
    if fmt == "sarif":
        assert len(json.loads(out)["runs"][0]["results"]) == len(EXPECTED)


# STAND-IN: a 5xx on demand, which a real API server cannot be made to answer (401 and 403
# against the real one: tests/oracles/test_cluster_live.py).
@pytest.mark.parametrize(("status", "code"), [(503, 75)])
def test_live_drift_errors_are_one_line(standin: StandIn, tmp_path: Path, status: int, code: int) -> None:
    standin.serve_file("eks-nodes.json")
    standin.faults["/api/v1/nodes"] = [status]
    kc = write_kubeconfig(tmp_path / "kubeconfig", standin.url)
    rc, out, err = run("drift", INV_REL, "--kubeconfig", str(kc))
    assert (rc, out) == (code, "")
    assert err.startswith("topogate drift: ") and err.count("\n") == 1 and TOKEN not in err


def test_a_waiver_hides_an_autoscaled_pool(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    shutil.copytree(INV.parent / "bases", tmp_path / "bases")
    inv.write_text(INV.read_text() + (
        "waivers:\n- {rule: pool-size-drift, object: Pool/eks/us-east-1b/gpu-p4d, "
        "reason: the node group scales with the queue}\n"))
    code, out, _ = run("drift", str(inv), "--from-file", str(DRIFTED), "--format", "json")
    assert code == 1
    assert "TG202" not in {f["rule"] for f in json.loads(out)["findings"]}


def test_bad_invocations_exit_2() -> None:
    code, _, err = run("drift", "fixtures/multi/inventory.yaml", "--from-file", str(DRIFTED))
    assert code == 2 and "pass --cluster NAME" in err
    code, _, err = run("drift", INV_REL, "--from-file", str(DRIFTED), "--cluster", "nope")
    assert code == 2 and "no such cluster" in err
    code, _, err = run("drift", "fixtures/bad/bad-enum/inventory.yaml", "--from-file", str(DRIFTED))
    assert code == 2 and err.startswith("fixtures/bad/bad-enum/inventory.yaml:")
    assert err.endswith("in the inventory; nothing was written.\n")


def _node(name: str, zone: str | None, labels: dict[str, str], gpus: int = 0) -> dict[str, object]:
    lab = dict(labels)
    if zone is not None:
        lab["topology.kubernetes.io/zone"] = zone
    return {"kind": "Node", "metadata": {"name": name, "labels": lab},
            "status": {"allocatable": {"nvidia.com/gpu": str(gpus)}}}


def test_matching_by_labels_and_nodes_without_a_zone() -> None:
    """A hand-written inventory names pools its own way: nodes match by the pool's labels."""
    c = load_inventory(REPO / "fixtures" / "lab" / "inventory.yaml", read_bases=False).clusters[0]
    nodes = [parse_node(_node("g1", "zone-a", {"node-type": "gpu"}, 4), c.zone_label),
             parse_node(_node("c1", "zone-b", {"node-type": "cpu"}), c.zone_label),
             parse_node(_node("c2", "zone-b", {"node-type": "cpu"}), c.zone_label),
             parse_node(_node("lost", None, {"node-type": "cpu"}), c.zone_label)]
    facts = [(f.kind, f.object) for f in compare(c, nodes)]
    # the lab's gpu pool has 2 nodes of 4 GPUs, tainted gpu=present: one node, untainted
    assert ("pool-size", "Pool/lab/zone-a/gpu") in facts
    assert ("scheduling", "Pool/lab/zone-a/gpu") in facts
    assert ("undescribed", "Nodes/lab/no-zone") in facts
    assert not [f for f in facts if f[1].startswith("Pool/lab/zone-b")]


def test_drift_takes_the_report_options_check_has(tmp_path: Path) -> None:
    # -o, --select/--ignore and -q/-v were check's only; drift reports findings through the
    # same output path and takes the same options (cli.common.report_options).
    rules = sorted({r for r, _, _ in EXPECTED})
    keep = rules[0]
    report = tmp_path / "drift.sarif"
    code, out, _ = run("drift", INV_REL, "--from-file", str(DRIFTED), "--format", "json",
                       "--select", keep, "-o", str(report))
    data = json.loads(out)
    assert code == 1 and {f["rule"] for f in data["findings"]} == {keep}
    hidden = sum(1 for r, _, _ in EXPECTED if r != keep)
    if hidden:
        assert data["summary"]["deselected"]["count"] == hidden
    assert json.loads(report.read_text())["version"] == "2.1.0"
    code, out, _ = run("drift", INV_REL, "--from-file", str(DRIFTED), "--ignore", ",".join(rules), "-q")
    assert code == 0 and out.rstrip().endswith("in 0 workloads")
    code, _, err = run("drift", INV_REL, "--from-file", str(DRIFTED), "--select", "zone-drfit")
    assert code == 2 and "did you mean zone-drift?" in err


@pytest.mark.parametrize("size,fires", [("{min: 1, max: 4}", False), ("{min: 3, max: 8}", True), ("2", True)])
def test_an_autoscaled_pool_drifts_only_outside_its_min_and_max(tmp_path: Path, size: str, fires: bool) -> None:
    """gpu-p4d in us-east-1b has 1 node in the drifted list where the inventory counted 2: a pool
    its autoscaler sizes declares `nodes: {min, max}`, and only a count outside them is drift."""
    inv = tmp_path / "inventory.yaml"
    shutil.copytree(INV.parent / "bases", tmp_path / "bases")
    lines = INV.read_text().splitlines(keepends=True)
    assert lines[27 - 1].strip() == "nodes: 2"  # gpu-p4d in us-east-1b
    lines[27 - 1] = lines[27 - 1].replace("nodes: 2", f"nodes: {size}")
    inv.write_text("".join(lines))
    code, out, _ = run("drift", str(inv), "--from-file", str(DRIFTED), "--format", "json")
    sizes = [f["message"] for f in json.loads(out)["findings"] if f["rule"] == "TG202"]
    assert bool(sizes) is fires, sizes
    if size.startswith("{min: 3"):
        assert sizes == ["pool gpu-p4d in us-east-1b has 1 node(s) in the cluster, the inventory says 3 to 8 "
                         "(autoscaled): ip-10-0-2-41.ec2.internal"]
