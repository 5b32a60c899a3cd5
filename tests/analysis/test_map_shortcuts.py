"""The map's shortcuts answer what the paths they spare answer.

A pod class's hash is computed when it is made (and again in a copy from another process); a
side of a pod no policy selects is answered without asking its rules; a job's flows find the
citation of a verdict they saw by its address; the rule locator remembers the inventory entry
behind each generated policy; an object without a ``template`` key anywhere is not walked for
pod templates. Each is held equal to the slow path here.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.analysis.locate import RuleLocator, inventory_source
from topogate.analysis.map import coverage
from topogate.analysis.netpolicy import External, PodClass, PolicySet, SourceRef
from topogate.analysis.netpolicy.agent import Agent
from topogate.analysis.netpolicy.model import DIRECTION_EGRESS, DIRECTION_INGRESS
from topogate.analysis.proofs.flows import Citations, citation
from topogate.core.position import Position
from topogate.inventory.model import Cluster, Inventory, Workload
from topogate.k8s.objects import K8sObject


def test_a_pod_class_hashes_as_its_fields_in_every_copy() -> None:
    pod = PodClass("a", (("app", "x"),), (("team", "t"),), (("http", 80, "TCP"),), "sa")
    fields = hash((pod.namespace, pod.labels, pod.namespace_labels, pod.ports, pod.service_account))
    assert hash(pod) == fields
    for other in (pickle.loads(pickle.dumps(pod)), copy.copy(pod), copy.deepcopy(pod),
                  dataclasses.replace(pod)):
        assert other == pod and hash(other) == hash(pod)
    moved = dataclasses.replace(pod, labels=(("app", "y"),))
    assert hash(moved) == hash((moved.namespace, moved.labels, moved.namespace_labels, moved.ports,
                                moved.service_account))
    assert {pod: 1}.get(pickle.loads(pickle.dumps(pod))) == 1
    assert "_hash" not in pod.__getstate__()  # another process hashes with another seed


def _policy() -> tuple[dict[str, Any], SourceRef]:
    return ({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
             "metadata": {"name": "p", "namespace": "a"},
             "spec": {"endpointSelector": {"matchLabels": {"app": "x"}},
                      "egress": [{"toEndpoints": [{"matchLabels": {"app": "x"}}]}]}},
            SourceRef("p.yaml", 1, 1))


def test_a_side_no_policy_selects_is_closed_only_when_the_agent_enforces_everywhere() -> None:
    """`closed` answers an unselected pod without its memo; the rules' own path (`_closed`) is
    the slow one: under policyEnforcement always it is closed, else open, for every peer."""
    lonely = PodClass("a", (("app", "y"),))
    peers = [PodClass("a", (("app", "x"),)), External(entity="world"), External(entity="host")]
    for mode, closed in (("default", False), ("always", True), ("never", False)):
        ps = PolicySet.from_objects([_policy()], agent=Agent(enforcement=mode))
        assert ps.selection.units_for(lonely) == ()
        for peer in peers:
            for direction in (DIRECTION_EGRESS, DIRECTION_INGRESS):
                assert ps._closed(lonely, (), peer, direction) is closed
                assert ps.closed(lonely, peer, peer, direction) is closed, (mode, peer, direction)
            # and the verdict, which reads the (empty) rules of the unselected side
            v = ps.evaluate(lonely, peer, 80, "TCP")
            assert v.egress.allowed is not closed, (mode, peer)
            assert not v.egress.decided_by


def test_an_unselected_sides_rules_name_nobody() -> None:
    ps = PolicySet.from_objects([_policy()], agent=Agent(enforcement="always"))
    lonely = PodClass("a", (("app", "y"),))
    rules = ps._sides._rules_for(lonely, PodClass("a", (("app", "x"),)), lonely, DIRECTION_EGRESS)
    assert [fm.rules for fm in rules] == [()] * 5
    assert all(fm.first(p, proto) is None for fm in rules for p, proto in ((1, "TCP"), (53, "UDP"), (0, "ICMP")))
    v = ps.evaluate(lonely, PodClass("a", (("app", "x"),)), 80, "TCP")
    assert not v.allowed and v.egress.reason.startswith("default deny: the agent enforces policy on every pod")


def test_a_verdict_seen_again_or_an_equal_one_has_one_citation() -> None:
    ps = PolicySet.from_objects([_policy()])
    x = PodClass("a", (("app", "x"),))
    v = ps.evaluate(x, x, 80, "TCP")
    twin = dataclasses.replace(v)
    assert twin == v and twin is not v
    cited = Citations()
    first = citation(v, None, cited)  # type: ignore[arg-type]
    assert citation(v, None, cited) is first  # type: ignore[arg-type]
    assert citation(twin, None, cited) is first  # type: ignore[arg-type]
    other = ps.evaluate(x, External(entity="world"), 80, "TCP")
    assert other != v and citation(other, None, cited) is not first  # type: ignore[arg-type]
    assert first.args[0] == v and citation(other, None, cited).args[0] == other  # type: ignore[arg-type]


def test_the_rule_locator_remembers_the_entry_behind_a_generated_policy() -> None:
    wl_pos = Position("inventory.yaml", 12, 5)
    inv = Inventory("i", "inventory.yaml", (Cluster("c", "onprem", "r"),),
                    (Workload("job-1", "a", "c", "PyTorchJob", "bases/job-1", "gpu-0", pos=wl_pos),))
    generated = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                 "metadata": {"name": "topogate-job-1", "namespace": "a",
                              "labels": {"app.kubernetes.io/managed-by": "topogate",
                                         "topogate.dev/workload": "job-1"}},
                 "spec": {"endpointSelector": {}, "egress": [{"toEntities": ["world"]}]}}
    written = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
               "metadata": {"name": "mine", "namespace": "a"},
               "spec": {"endpointSelector": {}, "egress": [{"toEntities": ["world"]}]}}
    objs = [K8sObject(generated, Position("g.yaml", 1, 1)), K8sObject(written, Position("w.yaml", 1, 1))]
    loc = RuleLocator(objs, inv, inv.clusters[0])
    ps = PolicySet.from_objects((o.obj, SourceRef(o.pos.file, 1, 1)) for o in objs)
    refs = {str(u.policy): u.rules[DIRECTION_EGRESS][0].ref for u in ps.selection.by_namespace["a"]}
    gen_ref = refs["CiliumNetworkPolicy/a/topogate-job-1"]
    assert inventory_source(inv, inv.clusters[0], objs[0]) == wl_pos
    for _ in range(2):
        assert loc(gen_ref) == wl_pos
        assert loc.section(gen_ref.policy, DIRECTION_EGRESS) == wl_pos
        mine = loc(refs["CiliumNetworkPolicy/a/mine"])
        assert mine.file == "w.yaml" and mine != wl_pos


json_values = st.recursive(
    st.none() | st.integers(0, 3) | st.sampled_from(("x", "template")),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(
        st.sampled_from(("template", "spec", "containers", "a", "b")), inner, max_size=3),
    max_leaves=30)


def _deep(levels: int, leaf: Any) -> Any:
    for i in range(levels):
        leaf = {"a": leaf} if i % 2 else [leaf]
    return leaf


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_the_template_search_finds_what_the_full_walk_finds(spec: Any) -> None:
    o = K8sObject({"apiVersion": "x/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": spec},
                  Position("t.yaml", 1, 1))
    assert coverage._template_paths(o) == list(coverage._generic_templates(spec, ("spec",)))


def test_a_template_at_the_walks_last_depth_is_found_and_one_below_it_is_not() -> None:
    pod = {"template": {"spec": {"containers": []}}}
    for levels in range(coverage._SEARCH_DEPTH + 3):
        o = K8sObject({"apiVersion": "x/v1", "kind": "Thing", "metadata": {"name": "t"}, "spec": _deep(levels, pod)},
                      Position("t.yaml", 1, 1))
        want = list(coverage._generic_templates(o.obj["spec"], ("spec",)))
        assert coverage._template_paths(o) == want
        assert bool(want) == (levels <= coverage._SEARCH_DEPTH), levels
