"""Every value `generate` takes from the inventory is held to the target's constraints at load
(issue 21, item 10): names of policies, overlays and Kueue objects, namespaces, label keys and
values, taints, ports, CIDRs, FQDNs, runtime and Secret names.

The property: for inventories whose values sit at and just past every limit (DNS-1123 label 63,
subdomain 253, label key prefix 253 and name 63, label value 63 and its charset, ports 1-65535,
CIDR prefix lengths, Cilium's FQDN pattern), EITHER the loader refuses with every problem at a
file:line:column, OR every generated object validates against its upstream CRD schema
(patterns, maxLength and `format: cidr` included) and the API server's ObjectMeta rules
(tree_validation.py). Never accepted and invalid.

The edges come on top of tests/inventory_strategies.py's inventories: one to three values are
replaced by an edge of their kind; a renamed name is renamed everywhere it is referenced (bases
included), so the references still resolve and the edge reaches the generators. The table
tests below pin each edge down: the value at the limit is accepted and renders valid objects,
the value past it is refused at its own line and column.
"""

from __future__ import annotations

import copy
import os
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import _cidr, require_crds
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inventory_strategies import InventoryCase, inventory_cases
from test_inventory_property import check_accepted

from topogate.inventory.loader import InventoryError
from topogate.sources.inventory import load_inventory

LONG = "TOPOGATE_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("TOPOGATE_FUZZ_EXAMPLES", "25"))

_L63 = "a" * 62 + "z"
_SUB253 = ".".join(["a" * 63] * 3 + ["b" * 61])  # 253 characters, labels of 63
# DNS-1123 labels: at the limits and just past them.
DNS_EDGES = [_L63, "a" * 64, "0", "a-0", "-a", "a-", "A", "a.b", "a_b", "", "ü"]
# Label keys: prefix (a DNS subdomain of at most 253) and name (63, alphanumeric ends).
# 253 + "/" + 63 = 317 is a Kubernetes label key, one past Kueue's Topology nodeLabel (316).
KEY_EDGES = ["k" * 63, "k" * 64, f"{_SUB253}/k", f"{_SUB253}x/k", f"{_SUB253}/{'n' * 62}",
             f"{_SUB253}/{'n' * 63}", f"{'p' * 63}.io/{'n' * 63}",
             f"{'p' * 64}.io/n", "a/b/c", "/k", "example.com/", "Example.com/k", "a..b/k", "-k",
             "k-", "k_.-K", "_k", "a.b/-k", "1.2/k"]
VALUE_EDGES = ["", "v" * 63, "v" * 64, "-v", "v-", "v v", "V_a.b-c", "_v", "ü", "a/b"]
PORT_EDGES = [0, 1, 65535, 65536, -1, 2**31, 2**63]
CIDR_EDGES = ["0.0.0.0/0", "10.0.0.0/32", "10.0.0.0/33", "::/0", "::/128", "::/129",
              "255.255.255.255/32", "256.0.0.0/8", "10.0.0/8", "10.0.0.0/-1", "10.0.0.0/",
              "10.0.0.1/8", "::ffff:10.0.0.0/104", "1:2:3:4:5:6:7:8:9/64", "fe80::1%eth0/64",
              "10.0.0.0/08", "010.0.0.0/8", "1.2.3.4/1234"]
FQDN_EDGES = ["a", "a" * 63 + ".io", "a" * 64 + ".io", _SUB253, _SUB253 + "b", "x..y", ".a", "a.",
              "*.a", "*", "a.*.b", "A.b", "a_b.c", "-a.b", "a-.b"]
RUNTIME_EDGES = [_L63, "a" * 64, f"{_L63}/{_SUB253}", f"{_L63}/{_SUB253}b", "a/b/c", "a.b", "ns/a.b"]
SUBDOMAIN_EDGES = [_SUB253, _SUB253 + "b", "a" * 64, "a..b", "a.", "-a"]


def _kind_of(path: tuple[Any, ...]) -> str | None:
    """Which edges fit the value at `path` of the inventory (None: leave it)."""
    keys = [p for p in path if isinstance(p, str)]
    last = path[-1] if path else None
    if not keys:
        return None
    if "labels" in keys[:-1] or (keys[-1] == "labels" and isinstance(last, str)):
        return None  # label maps are edited as maps (_label_edit)
    if keys[-1] in ("port", "endPort"):
        return "port"
    if keys[-1] == "cidrs" and isinstance(last, int):
        return "cidr"
    if keys[-1] == "fqdns" and isinstance(last, int):
        return "fqdn"
    if keys[-1] == "trainingRuntimes" and isinstance(last, int):
        return "runtime"
    if keys[-1] in ("zoneLabel",) or (keys[-1] == "key" and "taints" in keys):
        return "key"
    if keys[-1] == "value" and "taints" in keys:
        return "value"
    if keys[-1] == "fluxSecretRef":
        return "subdomain"
    if keys[-1] in ("name", "namespace", "queue", "argocdNamespace", "fluxNamespace") \
            and keys[0] in ("metadata", "clusters", "workloads", "doors", "gitops"):
        return "dns"
    if keys[-1] == "zones" and isinstance(last, int):
        return None  # a network zone's member: renamed with its zone
    return None


_EDGES: dict[str, list[Any]] = {"port": PORT_EDGES, "cidr": CIDR_EDGES, "fqdn": FQDN_EDGES,
                                "runtime": RUNTIME_EDGES, "key": KEY_EDGES, "value": VALUE_EDGES,
                                "subdomain": SUBDOMAIN_EDGES, "dns": DNS_EDGES}


def _sites(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], str]]:
    out: list[tuple[tuple[Any, ...], str]] = []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _sites(v, (*path, k))
        if path and path[-1] == "labels":
            out.append((path, "labels"))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _sites(v, (*path, i))
    else:
        kind = _kind_of(path)
        if kind is not None:
            out.append((path, kind))
    return out


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _rename(node: Any, old: str, new: Any) -> Any:
    """Every string equal to `old` (and `ns/old` references) replaced: a renamed cluster, zone,
    network zone or workload stays referenced (the bases' job names included)."""
    if isinstance(node, dict):
        return {k: _rename(v, old, new) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename(v, old, new) for v in node]
    if node == old:
        return new
    if isinstance(node, str) and isinstance(new, str) and node.endswith("/" + old) and node.count("/") == 1:
        return node[: -len(old)] + new  # a door's `namespace/name` workload reference
    return node


@st.composite
def edge_cases(draw: st.DrawFn) -> InventoryCase:
    case = draw(inventory_cases())
    inv, bases = copy.deepcopy(case.inventory), copy.deepcopy(case.bases)
    for _ in range(draw(st.integers(1, 3))):
        sites = _sites(inv)
        if not sites:
            break
        path, kind = draw(st.sampled_from(sites))
        parent = _get(inv, path[:-1])
        if kind == "labels":
            labels = parent[path[-1]]
            if draw(st.booleans()) or not labels:
                labels[draw(st.sampled_from(KEY_EDGES))] = draw(st.sampled_from(VALUE_EDGES + ["v"]))
            else:
                labels[draw(st.sampled_from(sorted(labels)))] = draw(st.sampled_from(VALUE_EDGES))
            continue
        new = draw(st.sampled_from(_EDGES[kind]))
        old = parent[path[-1]]
        if kind == "dns" and isinstance(old, str) and path[-1] == "name" and len(old) > 0:
            # A name others refer to: rename it everywhere, so the references still resolve.
            whole = _rename({"inv": inv, "bases": bases}, old, new)
            inv, bases = whole["inv"], whole["bases"]
        else:
            parent[path[-1]] = new
    return InventoryCase(inv, bases)


def _settings(n: int) -> Any:
    return settings(max_examples=n, derandomize=not LONG, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_crds()
    return tmp_path_factory.mktemp("edges")


def check_edge_case(case: InventoryCase, scratch: Path) -> bool:
    """The property for one case; True when the loader accepted it."""
    path = case.write(scratch / "repo")
    try:
        inv = load_inventory(path)
    except InventoryError as e:
        for p in e.problems:
            assert Path(p.pos.file).is_file() and p.pos.line >= 1 and p.pos.column >= 1, str(p)
            assert "\n" not in p.message, str(p)
        return False
    check_accepted(inv, scratch / "out")
    return True


@_settings(EXAMPLES)
@given(case=edge_cases())
def test_edge_values_are_refused_at_load_or_render_valid_objects(scratch: Path, case: InventoryCase) -> None:
    try:
        check_edge_case(case, scratch)
    except BaseException:
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            corpus = Path(__file__).resolve().parents[2] / "fixtures" / "fuzz-corpus"
            corpus.mkdir(exist_ok=True)
            (corpus / "property-last-failure.json").write_text(case.key() + "\n")
        raise


# ---------------------------------------------------------------- each edge, one at a time
#
# One small inventory that reaches every generator (Kueue, doors, egress, metrics, Flux), one
# value replaced per case. Whether the value is within the limit is decided here, from
# Kubernetes' and the CRDs' rules (not from the loader): within it, the loader accepts and the
# output validates; past it, the loader refuses at that value's line.

_ONE = """\
apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: r}
clusters:
- name: c
  provider: aws
  region: r
  kueue: {queue: q}
  zones:
  - name: a
    pools:
    - name: p
      nodes: 2
      gpusPerNode: 8
      labels: {pl: v}
      taints: [{key: tk, value: tv, effect: NoSchedule}]
  - name: b
    pools: [{name: p, nodes: 2, gpusPerNode: 8}]
  networkZones: [{name: n, zones: [a]}, {name: m, zones: [b]}]
workloads:
- name: j
  namespace: ns
  cluster: c
  kind: PyTorchJob
  base: bases/j
  networkZone: n
  scheduler: kueue
  metrics: {port: 9090}
  egress: [{fqdns: [a.io], cidrs: [10.0.0.0/8], ports: [{port: 443}]}]
doors:
- {name: d, cluster: c, from: {workloads: [j]}, to: {namespace: s, labels: {app: x}}, ports: [{port: 80}]}
gitops: {repoURL: "https://h/r.git", fluxSecretRef: git}
"""
_JOB = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "j"},
        "spec": {"pytorchReplicaSpecs": {"Worker": {"replicas": 2, "template": {"spec": {"containers": [
            {"name": "m", "image": "x/y:1", "resources": {"limits": {"nvidia.com/gpu": 1}}}]}}}}}}

_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def _subdomain(v: str) -> bool:
    return len(v) <= 253 and bool(_SUBDOMAIN.match(v))


def _key(v: str) -> bool:
    prefix, slash, name = v.rpartition("/")
    return (not slash or _subdomain(prefix)) and len(name) <= 63 and bool(_LABEL_NAME.match(name))


def _value(v: str) -> bool:
    return len(v) <= 63 and bool(_LABEL_VALUE.match(v))


def _fqdn(v: str) -> bool:
    """Cilium's toFQDNs matchName: labels of 1-63, no empty label, 253 in all; `*.` first only."""
    name = v[2:] if v.startswith("*.") else v
    return 0 < len(v) <= 253 and all(_DNS_LABEL.match(label) for label in name.split("."))


def _runtime(v: str) -> bool:
    ns, slash, name = v.rpartition("/")
    return (not slash or bool(_DNS_LABEL.match(ns))) and _subdomain(name)


# site -> (path in _ONE, the edges, within the limit?); a path ending in "{}" replaces the
# label map there by {edge: "v"}.
_SITES: dict[str, tuple[tuple[Any, ...], list[Any], Any]] = {
    # the zone label is the first level of the generated Kueue Topology: 316 at most there
    "zoneLabel": (("clusters", 0, "zoneLabel"), KEY_EDGES, lambda v: _key(v) and len(v) <= 316),
    "pool label key": (("clusters", 0, "zones", 0, "pools", 0, "labels", "{}"), KEY_EDGES, _key),
    "pool label value": (("clusters", 0, "zones", 0, "pools", 0, "labels", "pl"), VALUE_EDGES, _value),
    "taint key": (("clusters", 0, "zones", 0, "pools", 0, "taints", 0, "key"), KEY_EDGES, _key),
    "taint value": (("clusters", 0, "zones", 0, "pools", 0, "taints", 0, "value"), VALUE_EDGES, _value),
    "door label key": (("doors", 0, "to", "labels", "{}"), KEY_EDGES, _key),
    "door label value": (("doors", 0, "to", "labels", "app"), VALUE_EDGES, _value),
    "door namespace": (("doors", 0, "to", "namespace"), DNS_EDGES, lambda v: bool(_DNS_LABEL.match(v))),
    "door name": (("doors", 0, "name"), DNS_EDGES, lambda v: bool(_DNS_LABEL.match(v))),
    "workload namespace": (("workloads", 0, "namespace"), DNS_EDGES, lambda v: bool(_DNS_LABEL.match(v))),
    "metrics namespace": (("workloads", 0, "metrics", "namespace"), DNS_EDGES,
                          lambda v: bool(_DNS_LABEL.match(v))),
    "queue": (("clusters", 0, "kueue", "queue"), DNS_EDGES, lambda v: bool(_DNS_LABEL.match(v))),
    "egress CIDR": (("workloads", 0, "egress", 0, "cidrs", 0), CIDR_EDGES, _cidr),
    "egress FQDN": (("workloads", 0, "egress", 0, "fqdns", 0), FQDN_EDGES, _fqdn),
    "egress port": (("workloads", 0, "egress", 0, "ports", 0, "port"), PORT_EDGES, lambda v: 1 <= v <= 65535),
    "door port": (("doors", 0, "ports", 0, "port"), PORT_EDGES, lambda v: 1 <= v <= 65535),
    "metrics port": (("workloads", 0, "metrics", "port"), PORT_EDGES, lambda v: 1 <= v <= 65535),
    "fluxSecretRef": (("gitops", "fluxSecretRef"), SUBDOMAIN_EDGES, _subdomain),
    "argocdNamespace": (("gitops", "argocdNamespace"), DNS_EDGES, lambda v: bool(_DNS_LABEL.match(v))),
    "trainingRuntimes": (("clusters", 0, "trainingRuntimes", 0), RUNTIME_EDGES, _runtime),
}
_TABLE = [(site, edge) for site, (_, edges, _ok) in _SITES.items() for edge in edges]


def _line(text: str, path: tuple[Any, ...]) -> int:
    """The 1-based line of the value at `path` (of the key, for a "{}" label map), by PyYAML's
    own node marks."""
    node = yaml.compose(text)
    for step in path:
        assert node is not None
        if isinstance(step, int):
            node = node.value[step]
        elif step == "{}":
            return int(node.value[0][0].start_mark.line) + 1
        else:
            node = next(v for k, v in node.value if k.value == step)
    assert node is not None
    return int(node.start_mark.line) + 1


@pytest.mark.parametrize(("site", "edge"), _TABLE, ids=[f"{s}-{str(e)[:12]}-{len(str(e))}" for s, e in _TABLE])
def test_each_edge_is_accepted_within_the_limit_and_refused_past_it(scratch: Path, site: str, edge: Any) -> None:
    path, _, within = _SITES[site]
    inv = yaml.safe_load(_ONE)
    if path[-1] == "trainingRuntimes" or path[-2:] == ("trainingRuntimes", 0):
        inv["clusters"][0]["trainingRuntimes"] = [None]
    parent = inv
    for step in path[:-1]:
        parent = parent[step]
    if path[-1] == "{}":
        parent.clear()
        parent[edge] = "v"
    else:
        parent[path[-1]] = edge
    case = InventoryCase(inv, {"bases/j": [_JOB]})
    file = case.write(scratch / "table")
    if within(edge):
        check_accepted(load_inventory(file), scratch / "out")
        return
    with pytest.raises(InventoryError) as e:
        load_inventory(file)
    line = _line(file.read_text(), path)
    assert any(p.pos.line == line and Path(p.pos.file) == file for p in e.value.problems), (
        f"no problem at line {line}: {e.value}")
