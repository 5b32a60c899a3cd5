"""The real `kubernetes` client against the stand-in list API (tests/live_support.py).

STAND-IN, for what a real API server cannot be made to show on demand: a continue token that
expires in the middle of a list (410, once and twice), 5xx and 429, the exact requests the
client sends (limit, continue), and a training-job CRD that is not installed (the session's real
server has them all). 401, 403, TLS and the commands themselves run against the real
kube-apiserver in tests/oracles/test_cluster_live.py. The client and its kubeconfig loading are real.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from topogate.core.exitcodes import ExitCode
from topogate.live.client import JOB_RESOURCES, NODES, Target, api_client, list_all
from topogate.live.errors import LiveError
from topogate.live.snapshot import fetch

pytest.register_assert_rewrite("live_support")
pytest_plugins = ["live_support"]
from live_support import TOKEN, StandIn, write_kubeconfig  # noqa: E402

NODE_PATH = "/api/v1/nodes"


def _client(standin: StandIn, tmp_path: Path, token: str = TOKEN) -> tuple[object, str]:
    return api_client(Target(kubeconfig=str(write_kubeconfig(tmp_path / "kubeconfig", standin.url, token))))


def test_lists_page_by_page_with_limit_and_continue(standin: StandIn, tmp_path: Path) -> None:
    standin.serve_file("eks-nodes.json")
    api, server = _client(standin, tmp_path)
    got = list_all(api, NODES, server, chunk=4)
    assert server == standin.url
    assert got.requests == 3 and not got.restarted
    assert [n["metadata"]["name"] for n in got.items] == sorted(
        n["metadata"]["name"] for n in standin.lists[NODE_PATH])
    # items of a built-in list carry no kind on the wire; the client side restores it
    assert {(n["kind"], n["apiVersion"]) for n in got.items} == {("Node", "v1")}
    queries = standin.lists_of(NODE_PATH)
    assert [q["limit"] for q in queries] == [["4"]] * 3
    assert "continue" not in queries[0] and all("continue" in q for q in queries[1:])


def test_expired_continue_restarts_the_list_once(standin: StandIn, tmp_path: Path) -> None:
    standin.serve_file("eks-nodes.json")
    standin.faults[NODE_PATH] = [410]
    api, server = _client(standin, tmp_path)
    got = list_all(api, NODES, server, chunk=4)
    assert got.restarted and len(got.items) == 11
    assert len({n["metadata"]["name"] for n in got.items}) == 11  # no page counted twice
    queries = standin.lists_of(NODE_PATH)
    # page 1, the expired page 2, then the whole list again from the start
    assert ["continue" in q for q in queries] == [False, True, False, True, True]


def test_expired_twice_is_temporary(standin: StandIn, tmp_path: Path) -> None:
    standin.serve_file("eks-nodes.json")
    standin.faults[NODE_PATH] = [410, 410]
    api, server = _client(standin, tmp_path)
    with pytest.raises(LiveError) as err:
        list_all(api, NODES, server, chunk=4)
    assert err.value.code == ExitCode.TEMPORARY and "410" in str(err.value)


@pytest.mark.parametrize(("status", "code", "words"), [
    (500, ExitCode.TEMPORARY, "run again later"),
    (503, ExitCode.TEMPORARY, "run again later"),
    (429, ExitCode.TEMPORARY, "run again later"),
])
def test_error_statuses_map_to_the_audit_exit_codes(standin: StandIn, tmp_path: Path, status: int,
                                                    code: ExitCode, words: str) -> None:
    standin.serve_file("eks-nodes.json")
    standin.faults[NODE_PATH] = [status]
    api, server = _client(standin, tmp_path)
    with pytest.raises(LiveError) as err:
        list_all(api, NODES, server)
    assert err.value.code == code
    line = err.value.line("drift")
    assert words in line and "\n" not in line and TOKEN not in line


def test_a_crd_that_is_not_installed_is_none_not_an_error(standin: StandIn, tmp_path: Path) -> None:
    standin.serve_file("eks-nodes.json")
    api, server = _client(standin, tmp_path)
    got = list_all(api, JOB_RESOURCES[0], server)
    assert not got.installed and got.items == ()


def test_snapshot_reads_only_with_get(standin: StandIn, tmp_path: Path) -> None:
    standin.serve_file("eks-nodes.json")
    standin.install("CiliumNetworkPolicy")
    kc = write_kubeconfig(tmp_path / "kubeconfig", standin.url)
    snap = fetch(Target(kubeconfig=str(kc), chunk=5), workloads=True)
    assert len(snap.nodes) == 11 and snap.source == f"live:{standin.url}"
    assert "pytorchjobs.kubeflow.org" in snap.not_installed
    assert "ciliumnetworkpolicies.cilium.io" not in snap.not_installed
    assert {m for m, _, _, _ in standin.requests} == {"GET"}
    assert all("limit" in q for _, _, q, _ in standin.requests)


def test_unreachable_server_is_temporary(tmp_path: Path) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    api, server = api_client(Target(kubeconfig=str(write_kubeconfig(
        tmp_path / "kc", f"http://127.0.0.1:{port}"))))
    with pytest.raises(LiveError) as err:
        list_all(api, NODES, server)
    assert err.value.code == ExitCode.TEMPORARY and "cannot reach" in str(err.value)


def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    # A listening socket nobody accepts from: the kernel completes the connection, no reply comes.
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
        api, server = api_client(Target(kubeconfig=str(write_kubeconfig(tmp_path / "kc", url))))
        with pytest.raises(LiveError) as err:
            list_all(api, NODES, server, timeout=0.5)
    assert err.value.code == ExitCode.TEMPORARY and "Timeout" in str(err.value)


def test_kubeconfig_problems_are_configuration_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(LiveError) as err:
        api_client(Target(kubeconfig=str(tmp_path / "missing")))
    assert err.value.code == ExitCode.CONFIG and "no such kubeconfig" in str(err.value)
    kc = write_kubeconfig(tmp_path / "kc", "http://127.0.0.1:9")
    with pytest.raises(LiveError) as err:
        api_client(Target(kubeconfig=str(kc), context="no-such-context"))
    assert err.value.code == ExitCode.CONFIG and "no-such-context" in str(err.value)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(LiveError) as err:
        api_client(Target())
    assert err.value.code == ExitCode.CONFIG and "--from-file" in str(err.value)


def test_an_unexpected_client_failure_is_one_line_without_its_text() -> None:
    from topogate.live.errors import from_exception

    err = from_exception(RuntimeError(f"Authorization: Bearer {TOKEN}"), "nodes", "https://k")
    assert err.code == ExitCode.TEMPORARY and "RuntimeError" in str(err) and TOKEN not in str(err)


def test_gpu_quantities_that_are_not_whole_counts_count_as_zero() -> None:
    from topogate.live.nodes import parse_node

    def gpus(v: object) -> int:
        node = {"metadata": {"name": "n"}, "status": {"allocatable": {"nvidia.com/gpu": v, "amd.com/gpu": "2"}}}
        return parse_node(node, "topology.kubernetes.io/zone").gpus

    # "1e0" is a whole count as the API server reads it; "-3", "1500m" and "1.5" are not
    assert [gpus("8"), gpus(4), gpus("-3"), gpus("1500m"), gpus("1.5"), gpus("1e0")] == [10, 6, 2, 2, 2, 3]


def test_a_404_on_a_list_every_api_server_serves_is_a_configuration_error() -> None:
    """A 404 on /api/v1/nodes: the kubeconfig's server is not an API server's root (a proxy
    path, another service). Running again changes nothing (78, not 2 or 75). The real server
    showing it: tests/oracles/test_cluster_live.py."""
    from topogate.live.errors import from_api_status

    err = from_api_status(404, b"404 page not found", "nodes", "https://k/prefix")
    assert err.code == ExitCode.CONFIG and "not a Kubernetes API server's address" in str(err)
