"""`topogate diff` against `topogate trace`: for policies of several shapes (a CNP with port
ranges, a deny rule, DNS, FQDN and CIDR rules; a NetworkPolicy with namespace and ipBlock
peers; a CCNP with deny rules only), delete one rule or one peer selector at a time, or widen
one subject selector to every pod, and check that
- every reported row is confirmed by `trace` on both trees (the base's verdict on the base, the
  head's on the head, at both ends of the range), and
- every change `trace` sees between the fixture's pods and the entities is among the rows.
Both trees are read for real (the inventory's base built with kubectl kustomize)."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from topogate.diff import DiffResult, Tree, diff_trees, read_tree
from topogate.trace import trace

REPO = Path(__file__).resolve().parents[2]
INVENTORY = str(REPO / "fixtures" / "lab" / "inventory.yaml")
SHAPES = REPO / "fixtures" / "diff" / "shapes"
PODS = ["ml-demo/Group/train/Deployment/coordinator", "ml-demo/Group/train/Job/gpu-workers"]
ENTITIES = ["world", "kube-apiserver", "host", "remote-node"]
SECTIONS = ("ingress", "egress", "ingressDeny", "egressDeny")
PEER_LISTS = ("fromEndpoints", "toEndpoints", "from", "to", "fromEntities", "toEntities", "toCIDRSet", "toFQDNs")


def _docs() -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all((SHAPES / "policies.yaml").read_text()) if d]


def _mutations() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """(what was deleted, the policies without it), one deletion at a time."""
    docs = _docs()
    for i, doc in enumerate(docs):
        spec = doc.get("spec") or {}
        name = doc["metadata"]["name"]
        for section in SECTIONS:
            for j, rule in enumerate(spec.get(section) or []):
                out = copy.deepcopy(docs)
                del out[i]["spec"][section][j]
                yield f"{name} {section}[{j}]", out
                for key in PEER_LISTS:
                    peers = rule.get(key) or []
                    for k in range(len(peers) if len(peers) > 1 else 0):
                        out = copy.deepcopy(docs)
                        del out[i]["spec"][section][j][key][k]
                        yield f"{name} {section}[{j}].{key}[{k}]", out
        for sel in ("endpointSelector", "podSelector"):
            if (spec.get(sel) or {}).get("matchLabels"):
                out = copy.deepcopy(docs)
                out[i]["spec"][sel] = {}
                yield f"{name} {sel} widened to every pod", out


MUTATIONS = list(_mutations())


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Tree:
    return read_tree("base", INVENTORY, [str(SHAPES)], str(tmp_path_factory.mktemp("base")))


def _head(tmp: Path, docs: list[dict[str, Any]]) -> Tree:
    d = tmp / "head"
    d.mkdir()
    for f in ("coordinator.yaml", "workers.yaml"):
        (d / f).write_text((SHAPES / f).read_text())
    (d / "policies.yaml").write_text(yaml.safe_dump_all(docs))
    return read_tree("head", INVENTORY, [str(d)], str(tmp))


# trace without --inventory: it would build the inventory's base again for every call, and none
# of these policies names the cluster (io.cilium.k8s.policy.cluster), so its name changes nothing.
def _allowed(tree: Tree, src: str, dst: str, port: str) -> bool:
    return trace(tree.objects, src, dst, port).verdict == "allowed"


def _confirmed(d: DiffResult, base: Tree, head: Tree) -> int:
    n = 0
    for r in d.rows:
        if r.src.spec is None or r.dst.spec is None:
            # Only a witness whose selector requires namespace labels no Namespace here carries
            # has no trace spec.
            assert r.src.extra_ns_labels or r.dst.extra_ns_labels, r
            continue
        for port in {r.start, r.end}:
            at = f"{port}/{r.protocol}"
            assert _allowed(base, r.src.spec, r.dst.spec, at) == r.base.allowed, (r, "base", at)
            assert _allowed(head, r.src.spec, r.dst.spec, at) == r.head.allowed, (r, "head", at)
        n += 1
    return n


def _trace_changes(base: Tree, head: Tree, src: str, dst: str) -> list[tuple[str, int, int]]:
    """Where trace's verdict per port class differs between the trees (TCP and UDP)."""
    out = []
    b, h = (trace(t.objects, src, dst).classes for t in (base, head))
    for proto in ("TCP", "UDP"):
        cuts = sorted({c.start for c in (*b, *h) if c.protocol == proto})
        for lo in cuts:
            vb = next(c for c in b if c.protocol == proto and c.start <= lo <= c.end).verdict.allowed
            vh = next(c for c in h if c.protocol == proto and c.start <= lo <= c.end).verdict.allowed
            if vb != vh:
                out.append((proto, lo, vh))
    return [(p, lo, int(v)) for p, lo, v in out]


@pytest.mark.parametrize("what,docs", MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_rows_agree_with_trace(what: str, docs: list[dict[str, Any]], base: Tree, tmp_path: Path) -> None:
    head = _head(tmp_path, docs)
    d = diff_trees(base, head, "base")
    assert d.rows, f"deleting {what} changes nothing?"
    confirmed = _confirmed(d, base, head)
    assert confirmed > 0 or what == "workers ingress[1]"  # only the team=ml namespace's pods change
    for src, dst in itertools.chain(itertools.product(PODS, PODS + ENTITIES), itertools.product(ENTITIES, PODS)):
        for proto, port, opened in _trace_changes(base, head, src, dst):
            assert any(r.src.spec == src and r.dst.spec == dst and r.protocol == proto and r.start <= port <= r.end
                       and r.head.allowed == bool(opened) for r in d.rows), (what, src, dst, proto, port)


def test_every_shape_is_mutated() -> None:
    names = [m[0] for m in MUTATIONS]
    assert len(names) >= 15
    for part in ("ingressDeny", "egressDeny", "egress[3]", "fromEndpoints[1]", "from[1]", "podSelector", "endpointSelector"):
        assert any(part in n for n in names), part
