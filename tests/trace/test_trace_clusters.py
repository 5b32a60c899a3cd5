"""`trace` scopes policies per cluster exactly as `check` does (issue 9, item 4): a
clusterwide policy of cluster beta does not decide a flow between two pods of cluster alpha."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conftest import invoke

from topogate.analysis.map.clusters import ClusterOf, assign_clusters
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import collect

ROOT = Path(__file__).resolve().parents[2]
TWO = ROOT / "fixtures" / "trace" / "two-clusters"
INV = TWO / "inventory.yaml"
CLIENT, SERVER = "ml/Deployment/client", "ml/Deployment/server"


def trace(*args: str) -> tuple[int, dict[str, Any], str]:
    r = invoke("trace", str(TWO / "clusters"), *args, "--format", "json")
    return r.exit_code, (json.loads(r.stdout) if r.exit_code != 2 else {}), r.stderr


@pytest.mark.parametrize("extra", [("--inventory", str(INV)), ("--inventory", str(INV), "--cluster", "alpha"),
                                   ()], ids=["inventory", "cluster-flag", "paths-only"])
def test_beta_ccnp_does_not_decide_an_alpha_trace(extra: tuple[str, ...]) -> None:
    code, data, _ = trace("--from", CLIENT, "--to", SERVER, "--port", "8080", *extra)
    assert (code, data["verdict"], data["cluster"]) == (0, "allowed", "alpha")
    rule = data["classes"][0]["ingress"]["rule"]
    assert rule["policy"]["name"] == "server-from-client"
    assert rule["file"].endswith("clusters/alpha/policy.yaml") and rule["line"] == 10


def test_a_workload_of_another_cluster_than_cluster_flag_is_refused() -> None:
    code, _, err = trace("--from", CLIENT, "--to", SERVER, "--port", "8080", "--inventory", str(INV),
                         "--cluster", "beta")
    assert code == 2 and "belongs to cluster alpha, not --cluster beta" in err


def test_label_endpoints_need_a_cluster_when_paths_hold_several() -> None:
    code, _, err = trace("--from", "ml:app=client", "--to", "ml:app=server", "--port", "8080",
                         "--inventory", str(INV))
    assert code == 2 and "pass --cluster NAME" in err
    code, data, _ = trace("--from", "ml:app=client", "--to", "ml:app=server", "--port", "8080",
                          "--inventory", str(INV), "--cluster", "beta")
    assert (code, data["verdict"]) == (1, "denied")  # in beta the deny applies


def test_unknown_cluster_is_refused() -> None:
    code, _, err = trace("--from", CLIENT, "--to", SERVER, "--inventory", str(INV), "--cluster", "gamma")
    assert code == 2 and "--cluster gamma: no such cluster" in err


def test_check_and_trace_share_one_assignment() -> None:
    inv = load_inventory(str(INV))
    objects = collect([str(TWO / "clusters")])
    by_check = {c: sorted(o.ref for o in objs) for c, objs in assign_clusters(inv, objects, None).items()}
    of = ClusterOf(inv)
    by_trace: dict[str | None, list[str]] = {}
    for o in objects:
        by_trace.setdefault(of.own(o)[0], []).append(o.ref)
    assert by_check == {c: sorted(v) for c, v in by_trace.items()}
    assert set(by_check) == {"alpha", "beta"}
