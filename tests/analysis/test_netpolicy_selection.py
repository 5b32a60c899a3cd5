"""Which policies select a pod class: the label index (`netpolicy.scope`) gives exactly what
asking every unit of the namespace gave, in the same order, and the work per pod class does
not grow with the number of policies in its namespace.

Before the index, every pod class asked every unit of its namespace (and every clusterwide
one) `selects`: one policy per job made `check` quadratic in jobs (18 s of 92 s at 10,000
jobs). Growth is asserted by counting `selects` calls, never by timing.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from topogate.analysis.netpolicy import PodClass, PolicySet, SourceRef
from topogate.analysis.netpolicy.rules import PolicyUnit, policy_sort_key

NAMESPACES = ("a", "b")
KEYS = ("app", "role", "topogate.dev/workload", "io.kubernetes.pod.namespace",
        "io.cilium.k8s.policy.cluster", "io.cilium.k8s.namespace.labels.team",
        "io.cilium.k8s.policy.serviceaccount")
VALUES = ("x", "y", "a", "b", "default", "")
PREFIXES = ("", "k8s:", "any:", "reserved:")


def scan(ps: PolicySet, pod: PodClass) -> tuple[PolicyUnit, ...]:
    """What `units_for` computed before the index: every candidate asked, then sorted."""
    cands = ps.selection.clusterwide + ps.selection.by_namespace.get(pod.namespace, [])
    return tuple(sorted((u for u in cands if u.selects(pod, ps.labels)), key=lambda u: policy_sort_key(u.policy)))


keys = st.sampled_from(KEYS)
values = st.sampled_from(VALUES)
prefixed = st.builds(lambda p, k: p + k, st.sampled_from(PREFIXES), keys)
expressions = st.lists(st.fixed_dictionaries({
    "key": prefixed,
    "operator": st.sampled_from(("In", "NotIn", "Exists", "DoesNotExist")),
    "values": st.lists(values, max_size=3),
}), max_size=2)
selectors = st.fixed_dictionaries({}, optional={
    "matchLabels": st.dictionaries(prefixed, values, max_size=3),
    "matchExpressions": expressions,
})


@st.composite
def policy(draw: Any, i: int) -> dict[str, Any]:
    kind = draw(st.sampled_from(("CiliumNetworkPolicy", "CiliumClusterwideNetworkPolicy", "NetworkPolicy")))
    # Few names, so that policies tie on kind, namespace and name and order by their line.
    meta: dict[str, Any] = {"name": draw(st.sampled_from(("p", "q", "r")))}
    if kind != "CiliumClusterwideNetworkPolicy":
        meta["namespace"] = draw(st.sampled_from(NAMESPACES))
    if kind == "NetworkPolicy":
        spec: dict[str, Any] = {"podSelector": draw(selectors), "policyTypes": ["Ingress"]}
        return {"apiVersion": "networking.k8s.io/v1", "kind": kind, "metadata": meta, "spec": spec}
    obj: dict[str, Any] = {"apiVersion": "cilium.io/v2", "kind": kind, "metadata": meta}
    subjects = draw(st.lists(selectors, min_size=1, max_size=3))
    if len(subjects) == 1 and draw(st.booleans()):
        obj["spec"] = {"endpointSelector": subjects[0], "ingress": [{}]}
    else:  # specs: several units of one policy, tied on every part of the sort key
        obj["specs"] = [{"endpointSelector": s, "ingress": [{}]} for s in subjects]
    return obj


@st.composite
def policy_sets(draw: Any) -> PolicySet:
    n = draw(st.integers(0, 12))
    objs: list[tuple[dict[str, Any], SourceRef]] = []
    for i in range(n):
        # Lines repeat, so even the source can tie and candidate order decides.
        objs.append((draw(policy(i)), SourceRef("p.yaml", draw(st.integers(1, 4)), 1)))
    for ns in NAMESPACES:
        labels = draw(st.dictionaries(st.sampled_from(("team", "env")), values, max_size=2))
        objs.append(({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": labels}},
                     SourceRef("ns.yaml", 1, 1)))
    return PolicySet.from_objects(objs, cluster_name=draw(st.sampled_from(("default", "x"))))


pods = st.builds(
    PodClass,
    st.sampled_from(NAMESPACES),
    # Pod labels may even carry the keys Cilium adds itself (namespace, cluster, ...).
    st.lists(st.tuples(keys, values), max_size=4).map(lambda x: tuple(sorted(x))),
    st.lists(st.tuples(st.sampled_from(("team", "env")), values), max_size=2).map(tuple),
    st.just(()),
    st.none() | values,
)


@settings(max_examples=150, deadline=None)
@given(policy_sets(), st.lists(pods, min_size=1, max_size=6))
def test_index_selects_what_the_scan_selected_in_the_same_order(ps: PolicySet, classes: list[PodClass]) -> None:
    got = [ps.selection.units_for(p) for p in classes]
    want = [scan(ps, p) for p in classes]
    # The same unit objects in the same order (units compare by identity here: specs of one
    # policy may be equal as values yet distinct).
    assert [[id(u) for u in g] for g in got] == [[id(u) for u in w] for w in want]


def test_a_networkpolicy_reads_the_pod_labels_cilium_would_override() -> None:
    """A pod label named like one Cilium adds (here the namespace): the agent's identity carries
    the pod's real namespace, and it sets that key of a NetworkPolicy podSelector to the policy's
    namespace (pkg/k8s parsePodSelector), so both policies select the pod; the index must find
    them whatever the pod's own label says."""
    objs = [({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
              "metadata": {"name": "p", "namespace": "a"},
              "spec": {"podSelector": {"matchLabels": {"io.kubernetes.pod.namespace": "x"}},
                       "policyTypes": ["Ingress"]}}, SourceRef("p.yaml", 1, 1)),
            ({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
              "metadata": {"name": "q", "namespace": "a"},
              "spec": {"endpointSelector": {"matchLabels": {"io.kubernetes.pod.namespace": "a"}},
                       "ingress": [{}]}}, SourceRef("p.yaml", 2, 1))]
    ps = PolicySet.from_objects(objs)
    pod = PodClass("a", (("io.kubernetes.pod.namespace", "x"),))
    assert [str(p) for p in ps.policies_selecting(pod)] == ["CiliumNetworkPolicy/a/q", "NetworkPolicy/a/p"]
    assert ps.selection.units_for(pod) == scan(ps, pod)


def fleet(jobs: int, namespaces: int = 2) -> PolicySet:
    """One policy per job as `topogate generate` writes them, in a few namespaces, plus the
    clusterwide network-zone policies."""
    objs: list[tuple[dict[str, Any], SourceRef]] = []
    for z in range(3):
        objs.append(({"apiVersion": "cilium.io/v2", "kind": "CiliumClusterwideNetworkPolicy",
                      "metadata": {"name": f"zone-{z}"},
                      "spec": {"endpointSelector": {"matchLabels": {"k8s:topogate.dev/network-zone": f"gpu-{z}"}},
                               "ingressDeny": [{"fromEndpoints": [{"matchExpressions": [
                                   {"key": "k8s:topogate.dev/network-zone", "operator": "NotIn",
                                    "values": [f"gpu-{z}"]}]}]}]}}, SourceRef("zones.yaml", z + 1, 1)))
    for j in range(jobs):
        sel = {"matchLabels": {"k8s:topogate.dev/workload": f"job-{j}",
                               "k8s:topogate.dev/network-zone": f"gpu-{j % 3}"}}
        objs.append(({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                      "metadata": {"name": f"job-{j}", "namespace": f"team-{j % namespaces}"},
                      "spec": {"endpointSelector": sel, "ingress": [{"fromEndpoints": [sel]}]}},
                     SourceRef("jobs.yaml", j + 1, 1)))
    return PolicySet.from_objects(objs)


def selects_per_class(jobs: int, monkeypatch: Any) -> tuple[int, list[int]]:
    """(`selects` calls per pod class, how many units selected each)."""
    ps = fleet(jobs)
    calls = 0
    real = PolicyUnit.selects

    def counting(self: PolicyUnit, pod: PodClass, ctx: Any) -> bool:
        nonlocal calls
        calls += 1
        return real(self, pod, ctx)

    monkeypatch.setattr(PolicyUnit, "selects", counting)
    classes = [PodClass(f"team-{j % 2}", (("topogate.dev/network-zone", f"gpu-{j % 3}"),
                                          ("topogate.dev/replica-group", g),
                                          ("topogate.dev/workload", f"job-{j}")))
               for j in range(jobs) for g in ("Master", "Worker")]
    sizes = [len(ps.selection.units_for(p)) for p in classes]
    return calls // len(classes), sizes


def test_selects_calls_per_pod_class_do_not_grow_with_the_policies(monkeypatch: Any) -> None:
    small, small_sizes = selects_per_class(50, monkeypatch)
    large, large_sizes = selects_per_class(800, monkeypatch)
    # Each class is selected by its job's policy and its network zone's: the answers are real.
    assert set(small_sizes) == set(large_sizes) == {2}
    # 16x the policies per namespace, the same work per pod class (the scan asked 3 + 25 units
    # per class at 50 jobs, 3 + 400 at 800).
    assert large == small <= 3


def test_a_pod_class_keeps_its_hash_but_a_copy_computes_its_own() -> None:
    """PodClass caches its hash (every evaluator cache is keyed by pod classes); equal classes
    still hash alike, and a copy (another process would seed string hashes differently) does
    not carry the cached value over."""
    import copy
    import dataclasses
    import pickle

    p = PodClass("a", (("app", "x"),), (("team", "t"),), (("http", 80, "TCP"),), "sa")
    same = PodClass("a", (("app", "x"),), (("team", "t"),), (("http", 80, "TCP"),), "sa")
    assert hash(p) == hash(same) and {p: 1}[same] == 1
    assert "_hash" not in p.__getstate__()  # what a copy carries: the fields alone
    for twin in (copy.copy(p), pickle.loads(pickle.dumps(p))):
        # the copy's hash is computed from its fields where it lands
        assert twin == p and hash(twin) == hash(p) == hash(
            (twin.namespace, twin.labels, twin.namespace_labels, twin.ports, twin.service_account))
    other = dataclasses.replace(p, labels=(("app", "y"),))
    assert other != p and {p: 1}.get(other) is None
