"""Every object of every generated fixture tree, created with server-side dry-run in the real
kube-apiserver of tests/cluster_support.py, against the upstream CRDs installed there.

The server applies what no local check fully restates: the CRDs' structural schemas (unknown
fields are refused, not pruned: kubectl asks for strict field validation), their defaulting, their
CEL rules (`x-kubernetes-validations`), the built-in kinds' own validation, and ObjectMeta rules.
A generated object the server refuses is a bug of the generator that wrote it.

The objects are what a GitOps controller applies: each kustomization root of the tree (one that
no other kustomization of the tree lists) built with the real `kubectl kustomize`, so the jobs are
checked with their placement patches applied.
"""

from __future__ import annotations

import json
import posixpath
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from cluster_support import Cluster
from conftest import FIXTURES, kubectl, kustomize_build

from topogate.generators import render_tree
from topogate.sources.inventory import load_inventory

# Every fixture inventory that generates a tree (the rule fixtures are single-rule cases).
CASES = ["lab", "multi", "live/eks", "audit", "trace/two-clusters"]


def _write(case: str, out: Path) -> dict[str, bytes]:
    tree = render_tree(load_inventory(str(FIXTURES / case / "inventory.yaml")), str(out))
    for rel, data in tree.items():
        p = out / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return tree


def kustomize_roots(tree: dict[str, bytes]) -> list[str]:
    """Directories of the tree with a kustomization.yaml that no other one lists as a resource."""
    dirs = {posixpath.dirname(p) for p in tree if posixpath.basename(p) == "kustomization.yaml"}
    listed: set[str] = set()
    for d in dirs:
        doc = yaml.safe_load(tree[posixpath.join(d, "kustomization.yaml")])
        for r in doc.get("resources") or []:
            listed.add(posixpath.normpath(posixpath.join(d, r)))
    return sorted(dirs - listed)


def objects(case: str, out: Path) -> list[dict[str, Any]]:
    """Every object the tree's kustomization roots build, each once."""
    tree = _write(case, out)
    seen: dict[str, dict[str, Any]] = {}
    for root in kustomize_roots(tree):
        for obj in kustomize_build(out / root):
            seen.setdefault(json.dumps(obj, sort_keys=True), obj)
    return list(seen.values())


def _name(obj: dict[str, Any]) -> str:
    md = obj["metadata"]
    ns = f"{md['namespace']}/" if md.get("namespace") else ""
    return f"{obj['kind']}/{ns}{md['name']}"


def dry_run(cluster: Cluster, objs: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """(created, refused): `kubectl create --dry-run=server`, strict field validation, for each
    object alone, so one refusal names its object and does not hide the others."""
    for ns in sorted({o["metadata"]["namespace"] for o in objs if o["metadata"].get("namespace")}):
        cluster.ensure_namespace(ns)
    created, refused = [], []
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": objs})
    proc = subprocess.run([kubectl(), "--kubeconfig", str(cluster.kubeconfig), f"--cache-dir={cluster.root / 'kube-cache'}",
                           "create", "--dry-run=server", "--validate=strict", "-o", "name", "-f", "-"],
                          input=body, capture_output=True, text=True, timeout=300)
    created = proc.stdout.split()
    refused = [line for line in proc.stderr.splitlines() if line.strip()]
    return created, refused


@pytest.mark.parametrize("case", CASES)
def test_every_generated_object_passes_server_side_dry_run(kube_cluster: Cluster, case: str,
                                                           tmp_path: Path) -> None:
    objs = objects(case, tmp_path / "out")
    assert objs
    created, refused = dry_run(kube_cluster, objs)
    assert refused == [], f"{case}: the API server refuses generated objects:\n" + "\n".join(refused)
    assert len(created) == len(objs), (created, [_name(o) for o in objs])
    assert "CiliumClusterwideNetworkPolicy" in {o["kind"] for o in objs}


def test_the_trees_cover_every_kind_topogate_generates(kube_cluster: Cluster, tmp_path: Path) -> None:
    """The cases above reach every kind the generators write: a kind none of them contains
    would go unchecked by the server."""
    kinds: set[str] = set()
    for case in CASES:
        kinds |= {o["kind"] for o in objects(case, tmp_path / case.replace("/", "-"))}
    assert {"CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "ValidatingAdmissionPolicy",
            "ValidatingAdmissionPolicyBinding", "Topology", "ResourceFlavor", "ClusterQueue", "LocalQueue",
            "PrometheusRule", "ConfigMap", "Application", "Kustomization", "GitRepository",
            "PyTorchJob", "MPIJob", "JobSet", "TrainJob"} <= kinds, kinds


def test_a_refusal_names_the_object_and_the_rule(kube_cluster: Cluster, tmp_path: Path) -> None:
    """The check above can fail: a generated Kueue ResourceFlavor and a CNP, each broken the way
    a generator bug would break it, are refused by the server's schema and CEL rules."""
    objs = objects("multi", tmp_path / "out")
    flavor = next(o for o in objs if o["kind"] == "ResourceFlavor")
    flavor["spec"]["tolerations"] = [{"key": "gpu", "operator": "Exists", "value": "x", "effect": "NoSchedule"}]
    cnp = next(o for o in objs if o["kind"] == "CiliumNetworkPolicy")
    cnp["spec"]["egres"] = cnp["spec"].pop("egress", [])
    created, refused = dry_run(kube_cluster, [flavor])
    text = "\n".join(refused)
    assert created == [] and (f'The ResourceFlavor "{flavor["metadata"]["name"]}" is invalid: spec.tolerations: '
                             "Invalid value: a value must be empty when 'operator' is 'Exists'") in text, text
    # kubectl checks unknown fields against the server's published schema before sending
    created, refused = dry_run(kube_cluster, [cnp])
    text = "\n".join(refused)
    assert created == [] and 'unknown field "egres"' in text, text
