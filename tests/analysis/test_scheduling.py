"""Node-filter semantics, one test per rule, each failing if the rule is simplified away.

Pages: https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/ (nodeSelector,
node affinity, operators), .../taint-and-toleration/ (taints and tolerations), and the API
reference for NodeSelectorTerm and Toleration.
"""

from __future__ import annotations

from typing import Any

import pytest

from topogate.analysis.scheduling import (
    fit_pool,
    fit_pools,
    node_classes,
    selector_matches,
    tolerates,
    untolerated_taints,
    with_label_keys,
)
from topogate.inventory.model import Cluster, Pool, Taint, Zone

GPU_TAINT = Taint("gpu", "NoSchedule", "present")


def cluster(*pools: tuple[str, Pool]) -> Cluster:
    zones: dict[str, list[Pool]] = {}
    for z, p in pools:
        zones.setdefault(z, []).append(p)
    return Cluster("c", "aws", "us-east-1", zones=tuple(Zone(z, tuple(ps)) for z, ps in zones.items()))


def one(labels: dict[str, str] | None = None, taints: tuple[Taint, ...] = (), gpus: int = 0, nodes: int = 2):
    c = cluster(("us-east-1a", Pool("p", nodes, gpus, tuple(sorted((labels or {}).items())), taints)))
    return node_classes(c)[0]


def affinity(*terms: list[dict[str, Any]]) -> dict[str, Any]:
    return {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": list(t)} for t in terms]}}}}


def expr(key: str, op: str, *values: str) -> dict[str, Any]:
    e: dict[str, Any] = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return e


# --- node labels ------------------------------------------------------------------------------


def test_node_labels_are_pool_labels_plus_zone_and_well_known_labels():
    n = one({"node-type": "gpu"})
    labels = n.label_map
    assert labels["node-type"] == "gpu"
    assert labels["topology.kubernetes.io/zone"] == "us-east-1a"
    assert labels["topology.kubernetes.io/region"] == "us-east-1"
    assert labels["kubernetes.io/os"] == "linux"


def test_custom_zone_label_is_used():
    c = Cluster("c", "other", "r", zone_label="example.com/zone", zones=(Zone("z1", (Pool("p", 1),)),))
    assert node_classes(c)[0].label_map["example.com/zone"] == "z1"


# --- nodeSelector -----------------------------------------------------------------------------


def test_node_selector_needs_every_key():
    n = one({"node-type": "gpu", "tier": "a"})
    assert fit_pool({"nodeSelector": {"node-type": "gpu"}}, n).fits
    f = fit_pool({"nodeSelector": {"node-type": "gpu", "tier": "b"}}, n)
    assert not f.fits
    assert [r.key for r in f.reasons] == ["tier"]
    assert f.reasons[0].constraint == "nodeSelector"


def test_node_selector_on_zone_label_pins():
    n = one()
    assert fit_pool({"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1a"}}, n).fits
    assert not fit_pool({"nodeSelector": {"topology.kubernetes.io/zone": "us-east-1b"}}, n).fits


# --- node affinity ----------------------------------------------------------------------------


def test_not_in_matches_a_node_without_the_key_and_excludes_listed_values():
    # assign-pod-node/#operators: NotIn holds when the label is absent.
    assert fit_pool(affinity([expr("dedicated", "NotIn", "infra")]), one()).fits
    assert fit_pool(affinity([expr("node-type", "NotIn", "cpu")]), one({"node-type": "gpu"})).fits
    assert not fit_pool(affinity([expr("node-type", "NotIn", "gpu")]), one({"node-type": "gpu"})).fits


def test_in_exists_does_not_exist():
    n = one({"node-type": "gpu"})
    assert fit_pool(affinity([expr("node-type", "In", "cpu", "gpu")]), n).fits
    assert not fit_pool(affinity([expr("node-type", "In", "cpu")]), n).fits
    assert fit_pool(affinity([expr("node-type", "Exists")]), n).fits
    assert not fit_pool(affinity([expr("accelerator", "Exists")]), n).fits
    assert fit_pool(affinity([expr("accelerator", "DoesNotExist")]), n).fits
    assert not fit_pool(affinity([expr("node-type", "DoesNotExist")]), n).fits


def test_gt_lt_compare_integers_and_a_non_integer_label_fails():
    # assign-pod-node/#operators: Gt/Lt parse the label value as an integer.
    n = one({"gpu-mem": "80", "name": "a100"})
    assert fit_pool(affinity([expr("gpu-mem", "Gt", "40")]), n).fits
    assert not fit_pool(affinity([expr("gpu-mem", "Gt", "80")]), n).fits  # strictly greater
    assert fit_pool(affinity([expr("gpu-mem", "Lt", "100")]), n).fits
    assert not fit_pool(affinity([expr("gpu-mem", "Lt", "9")]), n).fits  # "80" < "9" as strings
    assert not fit_pool(affinity([expr("name", "Gt", "1")]), n).fits
    assert not fit_pool(affinity([expr("missing", "Lt", "1")]), n).fits


def test_terms_are_ored():
    n = one({"node-type": "gpu"})
    spec = affinity([expr("node-type", "In", "cpu")], [expr("node-type", "In", "gpu")])
    assert fit_pool(spec, n).fits


def test_expressions_in_one_term_are_anded():
    n = one({"node-type": "gpu"})
    spec = affinity([expr("node-type", "In", "gpu"), expr("tier", "In", "a")])
    f = fit_pool(spec, n)
    assert not f.fits and f.reasons[0].constraint == "nodeAffinity"
    assert "tier In [a]" in f.reason


def test_empty_term_and_empty_term_list_match_nothing():
    # API reference NodeSelectorTerm: "A null or empty node selector term matches no objects."
    n = one()
    empty_term = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{}]}}}}
    no_terms = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": []}}}}
    assert not fit_pool(empty_term, n).fits
    assert not fit_pool(no_terms, n).fits


def test_node_selector_and_affinity_must_both_hold():
    n = one({"node-type": "gpu"})
    spec = {**affinity([expr("node-type", "In", "gpu")]), "nodeSelector": {"node-type": "cpu"}}
    assert not fit_pool(spec, n).fits


def test_preferred_node_affinity_constrains_nothing():
    spec = {"affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 100, "preference": {"matchExpressions": [expr("node-type", "In", "cpu")]}}]}}}
    assert fit_pool(spec, one({"node-type": "gpu"})).fits


def test_hostname_is_unknown_exists_matches_in_does_not():
    n = one()
    assert fit_pool(affinity([expr("kubernetes.io/hostname", "Exists")]), n).fits
    assert fit_pool(affinity([expr("kubernetes.io/hostname", "NotIn", "node-1")]), n).fits
    f = fit_pool(affinity([expr("kubernetes.io/hostname", "In", "node-1")]), n)
    assert not f.fits and "not modelled" in f.reason
    assert not fit_pool({"nodeSelector": {"kubernetes.io/hostname": "node-1"}}, n).fits
    # A pool that names its host is matched normally.
    assert fit_pool({"nodeSelector": {"kubernetes.io/hostname": "h1"}}, one({"kubernetes.io/hostname": "h1"})).fits


def test_match_fields_metadata_name_in_never_matches_a_pool():
    spec = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]}}}}
    assert not fit_pool(spec, one()).fits
    spec_not = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}]}}}}
    assert fit_pool(spec_not, one()).fits


# --- taints -----------------------------------------------------------------------------------


def test_no_schedule_taint_blocks_and_names_the_taint():
    f = fit_pool({}, one(taints=(GPU_TAINT,)))
    assert not f.fits
    assert f.reasons[0].constraint == "taint" and f.reasons[0].key == "gpu=present:NoSchedule"


def test_no_execute_taint_blocks():
    assert not fit_pool({}, one(taints=(Taint("maint", "NoExecute", "yes"),))).fits


def test_prefer_no_schedule_does_not_block():
    # taint-and-toleration: PreferNoSchedule is a "preference" or "soft" version of NoSchedule.
    assert fit_pool({}, one(taints=(Taint("spot", "PreferNoSchedule", "true"),))).fits


def test_exists_with_empty_key_tolerates_every_taint():
    # Toleration API: empty key with operator Exists matches all keys, values and effects.
    taints = (GPU_TAINT, Taint("maint", "NoExecute", "x"), Taint("other", "NoSchedule"))
    assert untolerated_taints([{"operator": "Exists"}], taints) == ()
    # Without the key being empty, Exists is per key.
    assert untolerated_taints([{"key": "gpu", "operator": "Exists"}], taints) == taints[1:]


def test_empty_key_with_equal_tolerates_nothing():
    assert not tolerates({"operator": "Equal", "value": ""}, Taint("other", "NoSchedule"))


def test_empty_effect_matches_all_effects():
    tol = {"key": "gpu", "operator": "Equal", "value": "present"}
    assert tolerates(tol, GPU_TAINT)
    assert tolerates(tol, Taint("gpu", "NoExecute", "present"))
    assert not tolerates({**tol, "effect": "NoExecute"}, GPU_TAINT)


def test_equal_is_the_default_operator_and_compares_the_value():
    assert tolerates({"key": "gpu", "value": "present", "effect": "NoSchedule"}, GPU_TAINT)
    assert not tolerates({"key": "gpu", "value": "absent", "effect": "NoSchedule"}, GPU_TAINT)
    assert not tolerates({"key": "gpu", "effect": "NoSchedule"}, GPU_TAINT)  # value "" != "present"
    assert tolerates({"key": "gpu", "operator": "Exists", "value": "ignored"}, GPU_TAINT)


def test_toleration_gt_lt_compare_taint_value_to_toleration_value():
    sla = Taint("sla", "NoSchedule", "950")
    assert tolerates({"key": "sla", "operator": "Gt", "value": "900"}, sla)
    assert not tolerates({"key": "sla", "operator": "Gt", "value": "950"}, sla)
    assert tolerates({"key": "sla", "operator": "Lt", "value": "999"}, sla)


def test_tolerated_taint_passes():
    spec = {"tolerations": [{"key": "gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    assert fit_pool(spec, one(taints=(GPU_TAINT,))).fits


# --- GPUs -------------------------------------------------------------------------------------


def gpu_spec(n: int) -> dict[str, Any]:
    return {"containers": [{"name": "t", "resources": {"limits": {"nvidia.com/gpu": n}}}]}


def test_gpus_must_fit_on_one_node():
    assert fit_pool(gpu_spec(8), one(gpus=8)).fits
    f = fit_pool(gpu_spec(16), one(gpus=8))
    assert not f.fits and f.reasons[0].constraint == "gpus"
    assert not fit_pool(gpu_spec(1), one(gpus=0)).fits


def test_empty_pool_holds_nothing():
    assert not fit_pool({}, one(nodes=0)).fits


def test_all_reasons_are_kept_and_policies_split_them():
    f = fit_pool({**gpu_spec(16), "nodeSelector": {"node-type": "cpu"}}, one({"node-type": "gpu"}, (GPU_TAINT,), 8))
    assert {r.constraint for r in f.reasons} == {"nodeSelector", "taint", "gpus"}
    assert not f.affinity_ok and not f.taints_ok
    g = fit_pool({}, one(taints=(GPU_TAINT,)))
    assert g.affinity_ok and not g.taints_ok


def test_fit_pools_sorted_over_cluster():
    c = cluster(("b", Pool("y", 1)), ("a", Pool("x", 1)), ("a", Pool("w", 1)))
    assert [(f.zone, f.pool) for f in fit_pools({}, c)] == [("a", "w"), ("a", "x"), ("b", "y")]


# --- pod label selectors ----------------------------------------------------------------------


@pytest.mark.parametrize(("sel", "labels", "want"), [
    ({}, {"a": "1"}, True),
    (None, {"a": "1"}, False),
    ({"matchLabels": {"a": "1"}}, {"a": "1", "b": "2"}, True),
    ({"matchLabels": {"a": "2"}}, {"a": "1"}, False),
    ({"matchExpressions": [{"key": "x", "operator": "NotIn", "values": ["1"]}]}, {}, True),
    ({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, {"x": "1"}, False),
])
def test_label_selector(sel: Any, labels: dict[str, str], want: bool):
    assert selector_matches(sel, labels) is want


def test_match_label_keys_narrow_to_own_value():
    sel = with_label_keys({"matchLabels": {"app": "t"}}, {"app": "t", "job": "j1"}, ["job"])
    assert selector_matches(sel, {"app": "t", "job": "j1"})
    assert not selector_matches(sel, {"app": "t", "job": "j2"})
