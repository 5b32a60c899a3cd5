"""One reading of a resource quantity, held to the real kube-apiserver's.

topogate counts GPUs where a job asks for them (`check`), where a node offers them and where a
running pod holds them (`--live`); all three read quantities through topogate.k8s.quantity. The
oracle is the API server of tests/cluster_support.py: a Pod whose container limits an extended
resource to a quantity is accepted exactly when that quantity is a whole, non-negative count
(apimachinery's parser, then the integer rule for extended resources), and the count the server
stores is the one topogate reads.
"""

from __future__ import annotations

import http.client
import json
import random
import ssl
from typing import Any

from cluster_support import Cluster

from topogate.k8s import quantity
from topogate.k8s.kinds import pod_gpus
from topogate.live.nodes import parse_node

SEED = 34
# The grammar's pieces, and what lies just outside it.
SIGNS = ("", "", "+", "-")
WHOLES = ("", "0", "8", "08", "1000", "16", "9223372036854775807")
FRACS = (None, None, "", "0", "5", "000", "125")
SUFFIXES = ("", "", "m", "k", "Ki", "M", "Mi", "n", "u", "e0", "e3", "E-3", "e+2", "e", "x", "G", "1")
ODD = ("²", " 8", "8 ", "0x8", "1_0", "８", "", "8e", "1e99", "1e-99", ".", "+.e1")


def _cases(n: int) -> list[Any]:
    rnd = random.Random(SEED)
    out: list[Any] = [8, 0, 8.0, 8.5, -1, True, "+8", "8e0", "8000m", "8.0", "1Ki", *ODD]
    while len(out) < n:
        frac = rnd.choice(FRACS)
        out.append(rnd.choice(SIGNS) + rnd.choice(WHOLES) + ("" if frac is None else "." + frac)
                   + rnd.choice(SUFFIXES))
    return out


def test_readings_of_the_apimachinery_grammar() -> None:
    assert quantity.whole("+8") == 8
    assert quantity.whole("8e0") == quantity.whole("8000m") == quantity.whole(8.0) == 8
    assert quantity.whole("1Ki") == 1024
    assert quantity.whole("-8") is None and quantity.whole("8.5") is None and quantity.whole("²") is None
    assert quantity.parse("1e999999999") is None  # refused, not computed
    assert quantity.whole("k") == quantity.whole("+") == 0 and quantity.whole("") is None
    assert quantity.whole(" 8\u00a0") == 8
    assert quantity.count(True) == 0


def test_a_gaudi_node_counts_what_a_gaudi_job_asks() -> None:
    """`--live` counts a node's GPUs with the table `check` counts a job's by."""
    node = {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}},
            "status": {"allocatable": {"habana.ai/gaudi": "8"}}}
    spec = {"containers": [{"resources": {"limits": {"habana.ai/gaudi": "+8"}}}]}
    assert parse_node(node, "topology.kubernetes.io/zone").gpus == pod_gpus(spec) == 8


def _dry_run_pod(cluster: Cluster, context: ssl.SSLContext, value: Any) -> tuple[int, Any]:
    """(status, stored limit) of a server-side dry-run create of a Pod limiting nvidia.com/gpu."""
    host, port = cluster.server.removeprefix("https://").rsplit(":", 1)
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "q", "namespace": "default"},
            "spec": {"containers": [{"name": "c", "image": "x",
                                     "resources": {"limits": {"nvidia.com/gpu": value}}}]}}
    conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    try:
        conn.request("POST", "/api/v1/namespaces/default/pods?dryRun=All", json.dumps(body),
                     {"Authorization": f"Bearer {cluster.token}", "Content-Type": "application/json"})
        resp = conn.getresponse()
        data = json.loads(resp.read())
    finally:
        conn.close()
    if resp.status != 201:
        return resp.status, None
    return resp.status, data["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]


def test_counts_agree_with_the_api_server(kube_cluster: Cluster) -> None:
    context = ssl.create_default_context(cafile=str(kube_cluster.pki.ca))
    disagree = []
    cases = _cases(240)
    for value in cases:
        status, stored = _dry_run_pod(kube_cluster, context, value)
        ours = quantity.whole(value)
        theirs = quantity.whole(stored) if status == 201 else None
        # Past 2**63 the server keeps the largest int64 for some spellings: both read a count.
        same = ours == theirs or (ours is not None and theirs is not None and min(ours, theirs) >= 2**63 - 1)
        if status not in (201, 400, 422) or (status == 201) != (ours is not None) or not same:
            disagree.append(f"{value!r}: server {status} {stored!r}, topogate {ours!r}")
    assert not disagree, f"{len(disagree)} of {len(cases)} disagree:\n" + "\n".join(disagree)
