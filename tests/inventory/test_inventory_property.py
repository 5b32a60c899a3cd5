"""Any inventory the loader accepts yields output the cluster takes (issue 10).

Inventories come from tests/inventory_strategies.py: every property and enum value of the
inventory schema (test_strategy_covers_the_schema keeps it so), with edgy names and
cross-references that mostly resolve. Each one goes through the real loader, from files in a
scratch repository. A refused one must name a real file with :line:column for each problem; an
accepted one is rendered in-process and every generated object validated (tree_validation.py:
upstream CRD schemas and their CEL rules, kubernetes-validate for built-in kinds, ObjectMeta,
Kustomizations, each job's placement patch applied to its base, the generated admission policy
admitting the patched job). A few accepted ones per run are also written and every cluster root
built with the real `kubectl kustomize`.

The normal suite runs a small derandomised sample; `make fuzz` (TOPOGATE_FUZZ_EXAMPLES) runs
many random ones. Inputs that once broke the property are in REGRESSIONS below.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from conftest import require_crds
from hypothesis import HealthCheck, assume, given, settings
from inventory_strategies import InventoryCase, inventory_cases
from tree_validation import built_problems, parse, tree_problems

from topogate.generators import render_tree
from topogate.inventory.loader import InventoryError
from topogate.inventory.model import Inventory
from topogate.inventory.schema import inventory_schema
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

CORPUS = Path(__file__).resolve().parents[2] / "fixtures" / "fuzz-corpus"
LONG = "TOPOGATE_FUZZ_EXAMPLES" in os.environ
EXAMPLES = int(os.environ.get("TOPOGATE_FUZZ_EXAMPLES", "15"))
# 300: at 200 one more optional block per cluster (cilium:) left an enum value undrawn
COVERAGE_EXAMPLES = int(os.environ.get("TOPOGATE_COVERAGE_EXAMPLES", "300"))


def _settings(n: int) -> Any:
    return settings(max_examples=n, derandomize=not LONG, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture, HealthCheck.filter_too_much])


def _load(case: InventoryCase, repo: Path) -> Inventory | None:
    """The loaded inventory, or None after checking that every problem names a place."""
    path = case.write(repo)
    try:
        return load_inventory(path)
    except InventoryError as e:
        for p in e.problems:
            assert Path(p.pos.file).is_file() and p.pos.line >= 1 and p.pos.column >= 1, str(p)
            assert "\n" not in p.message, str(p)
        return None


def check_accepted(inv: Inventory, out: Path) -> None:
    problems = tree_problems(inv, render_tree(inv, str(out)), str(out))
    assert problems == [], "\n".join(problems[:20])


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_crds()
    return tmp_path_factory.mktemp("prop")


def _check_case(case: InventoryCase, scratch: Path) -> None:
    try:
        inv = _load(case, scratch / "repo")
        if inv is not None:
            check_accepted(inv, scratch / "out")
    except BaseException:
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            # Shrinking tries many; the last one written is the smallest.
            CORPUS.mkdir(exist_ok=True)
            (CORPUS / "property-last-failure.json").write_text(case.key() + "\n")
        raise


@_settings(EXAMPLES)
@given(case=inventory_cases())
def test_accepted_inventories_render_valid_objects(scratch: Path, case: InventoryCase) -> None:
    _check_case(case, scratch)


@pytest.mark.parametrize("case", sorted(CORPUS.glob("property-*.json")), ids=lambda p: p.name)
def test_property_corpus(scratch: Path, case: Path) -> None:
    """Inventories `make fuzz` found breaking the property: [inventory, {base dir: docs}]."""
    inventory, bases = json.loads(case.read_text())
    _check_case(InventoryCase(inventory, bases), scratch)


@_settings(max(2, EXAMPLES // 10))
@given(case=inventory_cases())
def test_accepted_inventories_build_with_kustomize(scratch: Path, case: InventoryCase) -> None:
    """kubectl is slow to start: a few examples per run, each cluster root built for real."""
    from conftest import kustomize_build

    inv = _load(case, scratch / "repo")
    assume(inv is not None)
    assert inv is not None
    out = scratch / "out"
    writer.write_tree(out, render_tree(inv, str(out)))
    # The roots a user applies: each cluster's tree, and Flux's and Argo CD's entry points.
    roots = [f"clusters/{c.name}" for c in inv.clusters] + [f"flux/{c.name}" for c in inv.clusters]
    # and each overlay a team's own Application applies (deployedBy: own)
    roots += sorted(p.parent.relative_to(out).as_posix() for p in (out / "overlays").rglob("kustomization.yaml"))
    for root in [*roots, "argocd"]:
        if not (out / root / "kustomization.yaml").is_file():
            # a GitOps entry point exists with `gitops:` and its output among `outputs:`
            assert root.startswith(("argocd", "flux/")), f"{root} not generated"
            assert inv.gitops is None or root.split("/")[0] not in inv.outputs, f"{root} not generated"
            continue
        built = kustomize_build(out / root)
        ids = [(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in built]
        assert len(ids) == len(set(ids)), f"{root}: an object built twice"
        problems = [p for o in built for p in built_problems(o, root)]
        assert problems == [], "\n".join(problems[:20])


# ---------------------------------------------------------------- the strategy covers the schema


def _schema_shape(node: Any, path: str, out: dict[str, set[Any]], defs: dict[str, Any]) -> None:
    """path -> the enum/const values the schema allows there ({} when free); label maps end
    the walk (any key)."""
    if "$ref" in node:
        _schema_shape(defs[node["$ref"].rsplit("/", 1)[1]], path, out, defs)
    for sub in node.get("allOf", []):
        _schema_shape(sub, path, out, defs)
    if path:
        out.setdefault(path, set())
    if "enum" in node:
        out[path] |= set(node["enum"])
    if "const" in node:
        out[path].add(node["const"])
    for k, sub in node.get("properties", {}).items():
        _schema_shape(sub, f"{path}/{k}", out, defs)
    if isinstance(node.get("items"), dict):
        _schema_shape(node["items"], f"{path}[]", out, defs)


def _data_shape(value: Any, path: str, out: dict[str, set[Any]], free: set[str]) -> None:
    if path:
        out.setdefault(path, set())
    if isinstance(value, dict):
        if path in free:
            return
        for k, v in value.items():
            _data_shape(v, f"{path}/{k}", out, free)
    elif isinstance(value, list):
        for v in value:
            _data_shape(v, f"{path}[]", out, free)
    elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
        out[path].add(value)


def test_strategy_covers_the_schema() -> None:
    """Every property of the schema appears in the generated inventories, and every enum value;
    nothing appears that the schema does not have. A field added to the schema fails this test
    until inventory_strategies.py generates it."""
    schema = inventory_schema()
    want: dict[str, set[Any]] = {}
    _schema_shape(schema, "", want, schema["$defs"])
    free = {p for p in want if p.endswith(("labels", "attributes"))}  # maps of any keys
    seen: dict[str, set[Any]] = {}

    @settings(max_examples=COVERAGE_EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=inventory_cases())
    def collect(case: InventoryCase) -> None:
        _data_shape(case.inventory, "", seen, free)

    collect()
    assert sorted(set(want) - set(seen)) == [], "schema properties the strategy never generates"
    assert sorted(set(seen) - set(want)) == [], "keys the strategy generates that the schema lacks"
    missing = {p: sorted(map(str, vals - seen[p])) for p, vals in want.items() if vals - seen[p]}
    assert missing == {}, "enum values the strategy never generates"


# ---------------------------------------------------------------- regressions
#
# Inputs the property test found, minimised. Each is refused with a problem at a line and
# column, or accepted and rendered into objects the cluster takes.

_CLUSTER = """\
apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: r}
clusters:
- name: c
  provider: aws
  region: r
"""
_JOB = ("apiVersion: kubeflow.org/v1\nkind: {kind}\nmetadata: {{name: j}}\nspec:\n  {field}:\n"
        "    Worker:\n      replicas: 2\n      template:\n        spec:\n          containers:\n"
        "          - {{name: m, image: x/y:1, resources: {{limits: {{nvidia.com/gpu: 1}}}}}}\n")


def _job(kind: str) -> str:
    from topogate.k8s import kinds

    return _JOB.format(kind=kind, field=kinds.REPLICA_SPECS[kind])


def _workload(kind: str, extra: str = "") -> str:
    return (f"workloads:\n- {{name: j, namespace: ns, cluster: c, kind: {kind}, base: bases/j, "
            f"networkZone: n{extra}}}\n")


_POOLS = "  zones:\n  - name: a\n    pools: [{name: p, nodes: 2, gpusPerNode: 8}]\n  networkZones: [{name: n, zones: [a]}]\n"

# (id, inventory text, base job or None, expected: a message fragment and its line:column, or
# None for "accepted, and its output valid")
REGRESSIONS: list[tuple[str, str, str | None, tuple[str, str] | None]] = [
    # ClusterQueue.spec.resourceGroups[].flavors needs 1..64 items: one flavor per pool.
    ("kueue-without-pools",
     _CLUSTER + "  kueue: {queue: q}\n  zones: [{name: a}]\n  networkZones: [{name: n, zones: [a]}]\n",
     None, ("has 0 node pools", "8:10")),
    # A ResourceFlavor takes at most 8 nodeLabels: the pool's labels plus the zone label.
    ("kueue-too-many-node-labels",
     _CLUSTER + "  kueue: {queue: q}\n  zones:\n  - name: a\n    pools:\n    - name: p\n      nodes: 1\n"
     "      labels: {l1: a, l2: a, l3: a, l4: a, l5: a, l6: a, l7: a, l8: a}\n"
     "  networkZones: [{name: n, zones: [a]}]\n",
     None, ("has 9 node labels", "12:7")),
    # Zone a-b pool c and zone a pool b-c would both be ResourceFlavor a-b-c.
    ("kueue-flavor-name-collision",
     _CLUSTER + "  kueue: {queue: q}\n  zones:\n  - {name: a-b, pools: [{name: c, nodes: 1}]}\n"
     "  - {name: a, pools: [{name: b-c, nodes: 1}]}\n  networkZones: [{name: n, zones: [a, a-b]}]\n",
     None, ("both become Kueue ResourceFlavor 'a-b-c'", "11:23")),
    # A follow job without GPUs in a network zone without nodes: generate had no zone to write.
    ("follow-into-no-nodes",
     _CLUSTER + "  zones: [{name: a, pools: [{name: p, nodes: 0}]}]\n  networkZones: [{name: n, zones: [a]}]\n"
     + _workload("PyTorchJob", ", placement: follow"),
     _JOB.replace("nvidia.com/gpu: 1", "cpu: 1").format(kind="PyTorchJob", field="pytorchReplicaSpecs"),
     ("has a node (no pool, or pools of 0 nodes)", "11:3")),
    # A door's policy file is network/doors/<name>.yaml, beside the doors' kustomization.yaml.
    ("door-named-kustomization",
     _CLUSTER + _POOLS + "doors:\n- {name: kustomization, cluster: c, from: {networkZone: n}, to: {namespace: s, "
       "labels: {app: x}}, ports: [{port: 1}]}\n",
     None, ("'kustomization' is reserved", "13:10")),
    # The Trainer's CRD takes only RFC 1035 names for a TrainJob (a letter first).
    ("trainjob-named-by-a-digit",
     _CLUSTER + _POOLS + "workloads:\n- {name: 0a, namespace: ns, cluster: c, kind: TrainJob, "
     "base: bases/j, networkZone: n}\n",
     "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: 0a}\n"
     "spec: {runtimeRef: {name: rt}, trainer: {numNodes: 1}}\n",
     ("whose name the Trainer's CRD requires to start with a letter", "13:10")),
    # An escaped control character reads fine but kustomize refuses it in the generated tree
    # (here in Argo CD's and Flux's objects) or in the base: refused where it is written.
    ("escaped-control-character-in-the-inventory",
     _CLUSTER + _POOLS + 'gitops: {repoURL: "https://h/r.git", targetRevision: "ma\\x05in"}\n',
     None, ("the escaped character #x05 is not allowed", "12:54")),
    ("escaped-control-character-in-a-base",
     _CLUSTER + _POOLS + _workload("PyTorchJob"),
     _job("PyTorchJob").replace("metadata: {name: j}", 'metadata: {name: j, labels: {a: "\\x89"}}'),
     ("the escaped character #x89 is not allowed", "3:33")),
    # The admission generator knew only four kinds: a TFJob (or XGBoost, Paddle, JAX) job on a
    # cluster with `admission:` was a KeyError.
    *[(f"admission-{k.lower()}", _CLUSTER + "  admission: {}\n" + _POOLS + _workload(k), _job(k), None)
      for k in ("TFJob", "XGBoostJob", "PaddleJob", "JAXJob")],
]


@pytest.mark.parametrize(("text", "job", "expected"), [r[1:] for r in REGRESSIONS],
                         ids=[r[0] for r in REGRESSIONS])
def test_regressions(scratch: Path, text: str, job: str | None, expected: tuple[str, str] | None) -> None:
    case = InventoryCase(yaml.safe_load(text), {"bases/j": []} if job else {})
    repo = scratch / "regression"
    path = case.write(repo)
    path.write_text(text)  # the texts as written here: positions refer to them
    if job:
        (repo / "bases" / "j" / "job.yaml").write_text(job)
    if expected is None:
        inv = load_inventory(path)
        check_accepted(inv, scratch / "out")
        return
    with pytest.raises(InventoryError) as e:
        load_inventory(path)
    fragment, where = expected
    hits = [p for p in e.value.problems if fragment in p.message]
    assert hits, str(e.value)
    assert f"{hits[0].pos.line}:{hits[0].pos.column}" == where, str(hits[0])


def test_admission_policy_checks_the_v1_kinds(scratch: Path) -> None:
    """The policy of a cluster running a TFJob matches tfjobs and refuses an unplaced TFJob."""
    from cel_support import admit

    text = _CLUSTER + "  admission: {}\n" + _POOLS + _workload("TFJob")
    case = InventoryCase(yaml.safe_load(text), {"bases/j": list(yaml.safe_load_all(_job("TFJob")))})
    inv = load_inventory(case.write(scratch / "tfjob"))
    tree = render_tree(inv, str(scratch / "out"))
    policy = parse("", tree["clusters/c/admission/policy.yaml"])[0]
    resources = {r for rule in policy["spec"]["matchConstraints"]["resourceRules"] for r in rule["resources"]}
    assert "tfjobs" in resources and "jaxjobs" not in resources
    verdict = admit(policy, {**yaml.safe_load(_job("TFJob")), "metadata": {"name": "j", "namespace": "ns"}})
    assert not verdict.allowed and "TFJob j: replica Worker" in verdict.messages[0], verdict


@pytest.mark.parametrize("seed", ["lab", "multi"])
def test_bundled_examples_pass_the_same_validation(scratch: Path, seed: str) -> None:
    """The validation finds nothing on the reviewed examples (and so is not vacuous below)."""
    from conftest import FIXTURES

    inv = load_inventory(FIXTURES / seed / "inventory.yaml")
    check_accepted(inv, scratch / "out")


def test_validation_is_not_vacuous(scratch: Path) -> None:
    """A generated object broken on purpose is caught: each check can fail."""
    from conftest import FIXTURES

    inv = load_inventory(FIXTURES / "multi" / "inventory.yaml")
    tree = render_tree(inv, str(scratch / "out"))
    path = "clusters/gpu-east/kueue/clusterqueue.yaml"
    (cq,) = parse(path, tree[path])
    cq["spec"]["resourceGroups"][0]["flavors"] = []
    cq["metadata"]["labels"]["bad key!"] = "x"
    broken = {**tree, path: yaml.safe_dump(cq).encode()}
    problems = tree_problems(inv, broken, str(scratch / "out"))
    assert any("should be non-empty" in p for p in problems), problems
    assert any("label 'bad key!'" in p for p in problems), problems

