"""Snapshots and API answers of the wrong shape (issue 21, item 9): a hand-made or truncated
export, a proxy or a broken server gives fields of the wrong type; each is one line and exit 2
(a file, at the item's line) or 75 (the server), never a traceback read as "drift found".

The API cases use the stand-in list API of tests/live_support.py (no real API server serves
malformed objects on demand); the `kubernetes` client reaching it is the real one.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

pytest.register_assert_rewrite("live_support")
pytest_plugins = ["live_support"]
from live_support import LIVE, REPO, StandIn, run, write_kubeconfig  # noqa: E402

INV = "fixtures/live/eks/inventory.yaml"
OK = LIVE / "eks" / "live-ok.json"


@pytest.fixture(autouse=True)
def _repo_cwd(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(REPO)


def _set(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for p in parents:
        doc = doc[int(p)] if isinstance(doc, list) else doc.setdefault(p, {})
    if isinstance(doc, list):
        doc[int(last)] = value
    else:
        doc[last] = value


# (kind of the item, field, value, what the message says): the six root causes of the
# 244 tracebacks in 3,000 fuzzed snapshots, and the fields beside them the readers use.
CASES = [
    ("Node", "metadata", "x", "metadata must be a mapping"),
    ("Node", "metadata.labels", ["a"], "metadata.labels must be a mapping"),
    ("Node", "metadata.labels", "zone=a", "metadata.labels must be a mapping"),
    ("Node", "status.allocatable", 8, "status.allocatable must be a mapping"),
    ("Node", "status", [], "status must be a mapping"),
    ("Node", "spec.taints", {"key": "a"}, "spec.taints must be a list"),
    ("Node", "spec.taints", ["NoSchedule"], "spec.taints[0] must be a mapping"),
    ("Node", "spec", "x", "spec must be a mapping"),
    # What drift compares is typed as served (issue 21, fuzzed): `value: false`, `0`, a label
    # of `true`, a GPU count of "x", "-8" or "8e0" read as "" or 0 and gave "no drift".
    ("Node", "spec.taints", [{"key": "a", "value": False, "effect": "NoSchedule"}],
     "spec.taints[0].value must be a string"),
    ("Node", "spec.taints", [{"key": "a", "value": 0, "effect": "NoSchedule"}],
     "spec.taints[0].value must be a string"),
    ("Node", "metadata.labels", {"node-role": True}, "must be a string"),
    ("Node", "status.allocatable", {"nvidia.com/gpu": "x"}, "must be a whole number"),
    ("Node", "status.allocatable", {"nvidia.com/gpu": "-8"}, "must be a whole number"),
    ("Node", "status.allocatable", {"nvidia.com/gpu": "8.5"}, "must be a whole number"),
    ("Pod", "spec.nodeName", {"a": 1}, "spec.nodeName must be a scalar"),
    ("Pod", "spec.containers", "x", "spec.containers must be a list"),
    ("Pod", "status.conditions", "x", "status.conditions must be a list"),
    ("Pod", "status.conditions", [1], "status.conditions[0] must be a mapping"),
    ("Pod", "metadata.ownerReferences", "x", "metadata.ownerReferences must be a list"),
    ("Pod", "metadata.labels", [], "metadata.labels must be a mapping"),
    ("PyTorchJob", "metadata.name", ["x"], "metadata.name must be a scalar"),
    ("CiliumNetworkPolicy", "spec", "x", "spec must be a mapping"),
]


def _mutated(kind: str, path: str, value: Any) -> tuple[dict[str, Any], int]:
    doc = json.loads(OK.read_text())
    i = next(i for i, o in enumerate(doc["items"]) if o["kind"] == kind)
    _set(doc["items"][i], path, value)
    return doc, i


@pytest.mark.parametrize(("kind", "path", "value", "says"), CASES, ids=lambda v: str(v)[:30])
@pytest.mark.parametrize("command", ["drift", "check"])
def test_mistyped_snapshot_field_is_bad_input_at_its_item(tmp_path: Path, command: str, kind: str,
                                                          path: str, value: Any, says: str) -> None:
    doc, i = _mutated(kind, path, value)
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(doc, indent=1))
    live = ("--live",) if command == "check" else ()
    code, out, err = run(command, INV, *live, "--from-file", str(f))
    assert code == 2, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "snap.json:" in err and f"items[{i}] {kind}" in err and says in err, err
    line = int(err.split("snap.json:", 1)[1].split(":", 1)[0])
    assert line > 1 and '"kind": "' + kind + '"' in "\n".join(
        f.read_text().splitlines()[line - 1:line + 40]), "the line is the item's own"


def test_items_that_are_not_a_list_in_a_file(tmp_path: Path) -> None:
    f = tmp_path / "snap.json"
    f.write_text('{"kind": "List", "items": {"a": 1}}')
    code, _, err = run("drift", INV, "--from-file", str(f))
    assert code == 2 and "`items` is not a list" in err


def _serve_mutated(standin: StandIn, kind: str, path: str, value: Any) -> None:
    doc = json.loads(OK.read_text())
    standin.serve(*doc["items"])
    from live_support import PATHS

    items = standin.lists[PATHS[kind][0]]
    items[0] = copy.deepcopy(items[0])
    _set(items[0], path, value)


@pytest.mark.parametrize(("kind", "path", "value", "says"), CASES, ids=lambda v: str(v)[:30])
def test_mistyped_field_from_the_api_is_temporary(standin: StandIn, tmp_path: Path, kind: str,
                                                  path: str, value: Any, says: str) -> None:
    _serve_mutated(standin, kind, path, value)
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", standin.url)
    code, out, err = run("check", INV, "--live", "--kubeconfig", str(kubeconfig))
    assert code == 75, (out, err)
    assert len(err.strip().splitlines()) == 1, err
    assert "is malformed" in err and says in err and "[exit 75]" in err, err


@pytest.mark.parametrize("body", [
    [], "x", {"items": "x"}, {"items": [1]}, {"items": [], "metadata": "x"},
    {"items": [], "metadata": {"continue": 5}}, {"items": [{"metadata": 3}]},
], ids=str)
def test_list_page_of_the_wrong_shape_is_temporary(monkeypatch: pytest.MonkeyPatch, body: Any) -> None:
    # A page body of any shape, straight into list_all (the stand-in serves only well-formed
    # lists): what a proxy or a broken server could send.
    from topogate.core.exitcodes import ExitCode
    from topogate.live import client, http
    from topogate.live.errors import LiveError

    monkeypatch.setattr(http, "get", lambda *a: http.Answer(200, json.dumps(body).encode()))
    with pytest.raises(LiveError) as err:
        client.list_all(object(), client.NODES, "https://127.0.0.1:1")
    assert err.value.code == ExitCode.TEMPORARY
    assert "run again later" in str(err.value)


# --- item 6: pods on nodes without the zone label are in an unknown zone, never in none ---


def _moved_to_unlabelled(tmp_path: Path, pods: tuple[str, ...], *, gone: bool = False) -> Path:
    doc = json.loads(OK.read_text())
    node = copy.deepcopy(next(o for o in doc["items"] if o["kind"] == "Node"
                              and o["metadata"]["name"] == "ip-10-0-2-41.ec2.internal"))
    node["metadata"]["name"] = "ip-10-0-9-9.ec2.internal"
    for k in ("topology.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/zone"):
        node["metadata"]["labels"].pop(k, None)
    if not gone:
        doc["items"].insert(0, node)
    for o in doc["items"]:
        if o["kind"] == "Pod" and o["metadata"]["name"] in pods:
            o["spec"]["nodeName"] = node["metadata"]["name"]
    f = tmp_path / "snap.json"
    f.write_text(json.dumps(doc, indent=1))
    return f


@pytest.mark.parametrize("gone", [False, True], ids=["unlabelled-node", "node-not-listed"])
def test_workers_on_nodes_without_the_zone_label_are_a_finding(tmp_path: Path, gone: bool) -> None:
    f = _moved_to_unlabelled(tmp_path, ("train-worker-2", "train-worker-3"), gone=gone)
    code, out, err = run("check", INV, "--live", "--from-file", str(f), "--format", "json")
    assert code == 1, (out, err)
    report = json.loads(out)
    found = [x for x in report["findings"] if x["rule"] == "TG206"]
    assert len(found) == 1, report["findings"]
    msg = found[0]["message"]
    assert "train-worker-2 -> ip-10-0-9-9.ec2.internal -> (unknown zone)" in msg, msg
    assert "topology.kubernetes.io/zone" in msg
    (job,) = report["workloads"]
    workers = next(g for g in job["groups"] if g["name"] == "worker")
    assert workers["zones"] != ["us-east-1a"], "the summary must not place every worker in us-east-1a"
    assert not job["colocated"]


def test_whole_job_on_unlabelled_nodes_is_still_a_finding(tmp_path: Path) -> None:
    f = _moved_to_unlabelled(tmp_path, ("train-master-0", "train-worker-0", "train-worker-1",
                                        "train-worker-2", "train-worker-3"))
    code, out, _ = run("check", INV, "--live", "--from-file", str(f), "--format", "json")
    assert code == 1
    assert [x["rule"] for x in json.loads(out)["findings"]].count("TG206") == 1
