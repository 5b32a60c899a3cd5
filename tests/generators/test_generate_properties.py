"""Property tests over random valid inventories (built as model objects, with random bases).

- generation is deterministic, and independent of the order of clusters, zones, pools, network
  zones and workloads and of the key order of the base manifests;
- every generated CNP/CCNP validates against the upstream CRD schema;
- no generated policy allows traffic between two different network zones (checked on the
  policies' structure: every allow peer that could be a managed pod of another network zone is
  matched by a deny of that zone's boundary policy, and deny wins in Cilium);
- every job's pods, in every replica group, are constrained to zones of its network zone (pin:
  exactly one), on the base after applying the patch with an independent JSON-patch library,
  and nothing of the base is dropped.
"""

from __future__ import annotations

import random
from dataclasses import replace
from typing import Any

import jsonpatch
import yaml
from conftest import crd_errors
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_generate_build import contains

from topogate.core.labels import NETWORK_ZONE_LABEL
from topogate.generators import cilium, kustomize, render_files, render_tree
from topogate.inventory.model import (
    Cluster,
    EgressRule,
    Inventory,
    Metrics,
    NetworkZone,
    Pool,
    PortSpec,
    ReplicaGroup,
    Taint,
    Workload,
    Zone,
)
from topogate.k8s import kinds

NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f"])
K = cilium.K8S
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


# ---------------------------------------------------------------- random bases


def _pod_template(draw: st.DrawFn, gpus: int) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "x/y:1",
                                            "env": [{"name": "E", "value": "1"}],
                                            "resources": {"limits": {"nvidia.com/gpu": gpus}}}]}
    tpl: dict[str, Any] = {"spec": spec}
    if draw(st.booleans()):
        tpl["metadata"] = {"labels": {"team": "t"}} if draw(st.booleans()) else {}
    if draw(st.booleans()):
        spec["tolerations"] = [{"key": "spot", "operator": "Exists"}]
    n_terms = draw(st.integers(0, 3))
    if n_terms:
        spec["affinity"] = {"nodeAffinity": {REQ: {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "k", "operator": "In", "values": [str(i)]}]} if i % 2 == 0
            else {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n"]}]}
            for i in range(n_terms)]}}}
    elif draw(st.booleans()):
        spec["affinity"] = {"podAntiAffinity": {}}
    if draw(st.booleans()):
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "rack",
                                              "whenUnsatisfiable": "ScheduleAnyway"}]
    return tpl


@st.composite
def job_doc(draw: st.DrawFn, kind: str, name: str) -> tuple[dict[str, Any], tuple[dict[str, Any], ...]]:
    """A base job object of `kind` plus any extra docs (a TrainJob's runtime, sometimes)."""
    api = kinds.TRAINING_KINDS[kind].api_version
    md = {"name": name}
    if kind in kinds.REPLICA_SPECS:
        key = kinds.REPLICA_SPECS[kind]
        coord = kinds.TRAINING_KINDS[kind].coordinator or "Worker"
        specs = {coord: {"replicas": 1, "template": _pod_template(draw, 1)},
                 "Worker": {"replicas": draw(st.integers(1, 3)), "template": _pod_template(draw, 1)}}
        return {"apiVersion": api, "kind": kind, "metadata": md, "spec": {key: specs}}, ()
    if kind == "JobSet":
        rjs = [{"name": f"rj{i}", "replicas": 1, "template": {"spec": {
            "parallelism": 1, "template": _pod_template(draw, 1)}}} for i in range(draw(st.integers(1, 3)))]
        return {"apiVersion": api, "kind": kind, "metadata": md, "spec": {"replicatedJobs": rjs}}, ()
    job: dict[str, Any] = {"apiVersion": api, "kind": kind, "metadata": md, "spec": {
        "runtimeRef": {"name": "rt"}, "trainer": {"numNodes": 2, "resourcesPerNode": {
            "limits": {"nvidia.com/gpu": 1}}}}}
    if draw(st.booleans()):
        job["spec"]["runtimePatches"] = [{"manager": "someone-else"}]
    extra: tuple[dict[str, Any], ...] = ()
    if draw(st.booleans()):
        extra = ({"apiVersion": api, "kind": "ClusterTrainingRuntime", "metadata": {"name": "rt"},
                  "spec": {"template": {"spec": {"replicatedJobs": [
                      {"name": "dataset-initializer"}, {"name": "node"}]}}}},)
    return job, extra


# ---------------------------------------------------------------- random inventories


@st.composite
def inventories(draw: st.DrawFn) -> Inventory:
    clusters: list[Cluster] = []
    workloads: list[Workload] = []
    for cname in draw(st.lists(NAMES, min_size=1, max_size=3, unique=True)):
        znames = draw(st.lists(NAMES, min_size=1, max_size=4, unique=True))
        zones = []
        for zn in znames:
            pools = []
            for pi in range(draw(st.integers(1, 2))):
                taints = tuple(Taint(draw(st.sampled_from(["gpu", "nvidia.com/gpu", "dedicated"])),
                                     draw(st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"])),
                                     draw(st.sampled_from(["", "present"])))
                               for _ in range(draw(st.integers(0, 2))))
                pools.append(Pool(f"p{pi}", 2, 8, (("node-type", "gpu"),), taints))
            zones.append(Zone(f"{cname}-z{zn}", tuple(pools)))
        # Partition the zones into 1..n network zones (every zone in exactly one).
        n_nz = draw(st.integers(1, len(zones)))
        assign = [draw(st.integers(0, n_nz - 1)) for _ in zones]
        assign[:n_nz] = list(range(n_nz))  # every network zone gets at least one zone
        nzs = tuple(NetworkZone(f"nz{i}", tuple(z.name for z, a in zip(zones, assign, strict=True) if a == i))
                    for i in range(n_nz))
        c = Cluster(f"c{cname}", "aws", "r", draw(st.sampled_from(
            ["topology.kubernetes.io/zone", "example.com/zone"])), None, tuple(zones), nzs)
        clusters.append(c)
        for wi in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(list(kinds.TRAINING_KINDS)))
            name = f"job{wi}"
            job, extra = draw(job_doc(kind, name))
            nz = draw(st.sampled_from(nzs))
            placement = draw(st.sampled_from(["pin", "follow"]))
            zone = draw(st.sampled_from(nz.zones)) if placement == "pin" else None
            metrics = Metrics(draw(st.integers(1024, 9999))) if draw(st.booleans()) else None
            egress: tuple[EgressRule, ...] = ()
            if draw(st.booleans()):
                egress = (EgressRule(("s3.example.com", "*.hf.co"), ("10.0.0.0/8",),
                                     (PortSpec(443), PortSpec(2049, "TCP", 2050))),)
            docs = (job,) + extra
            groups = tuple(ReplicaGroup(g.name, g.pods, g.gpus_per_pod) for g in kinds.replica_groups(
                job, kustomize.runtime_groups(job, docs)))
            workloads.append(Workload(
                name, draw(st.sampled_from(["ns1", "ns2"])), c.name, kind, f"bases/{name}", nz.name,
                placement, zone, metrics, egress, groups, f"/repo/bases/{c.name}-{name}", docs))
    # The loader refuses duplicate cluster/namespace/name; so do the random inventories.
    uniq = {(w.cluster, w.namespace, w.name): w for w in workloads}
    return Inventory("inv", "/repo/inventory.yaml", tuple(clusters),
                     tuple(sorted(uniq.values(), key=lambda w: (w.cluster, w.namespace, w.name))))


# ---------------------------------------------------------------- helpers


def _shuffle_keys(obj: Any, rnd: random.Random) -> Any:
    if isinstance(obj, dict):
        items = list(obj.items())
        rnd.shuffle(items)
        return {k: _shuffle_keys(v, rnd) for k, v in items}
    if isinstance(obj, list):
        return [_shuffle_keys(v, rnd) for v in obj]
    return obj


def _permuted(inv: Inventory, seed: int) -> Inventory:
    """The same inventory with every order a user may not rely on shuffled."""
    rnd = random.Random(seed)

    def shuf(t: tuple[Any, ...]) -> tuple[Any, ...]:
        lst = list(t)
        rnd.shuffle(lst)
        return tuple(lst)

    clusters = shuf(tuple(replace(c, zones=shuf(tuple(replace(z, pools=shuf(z.pools)) for z in c.zones)),
                                  network_zones=shuf(c.network_zones)) for c in inv.clusters))
    workloads = shuf(tuple(replace(w, base_docs=tuple(_shuffle_keys(d, rnd) for d in w.base_docs),
                                   groups=shuf(w.groups)) for w in inv.workloads))
    return replace(inv, clusters=clusters, workloads=workloads)


def _selector_matches(sel: dict[str, Any], labels: dict[str, str]) -> bool:
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e["key"], e["operator"], e.get("values") or []
        has = k in labels
        ok = {"Exists": has, "DoesNotExist": not has, "In": has and labels.get(k) in vals,
              "NotIn": not has or labels.get(k) not in vals}[op]
        if not ok:
            return False
    return True


SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- properties


@SETTINGS
@given(inventories(), st.integers(0, 2**32 - 1))
def test_deterministic_and_order_independent(inv: Inventory, seed: int) -> None:
    a = render_tree(inv, "/out")
    assert a == render_tree(inv, "/out")
    assert list(a) == sorted(a)
    assert render_tree(_permuted(inv, seed), "/out") == a
    for path, data in a.items():
        if path.endswith(".json"):  # JSON has no comments: the header is a field near the top
            assert b"generated by topogate from inventory.yaml, do not edit" in data[:4096], path
        else:
            assert data.startswith(b"# generated by topogate from inventory.yaml, do not edit\n"), path
        assert b"&id" not in data and b"*id" not in data  # no YAML anchors/aliases


@SETTINGS
@given(inventories())
def test_generated_policies_validate(inv: Inventory) -> None:
    for f in render_files(inv, "/out"):
        for doc in f.docs:
            if isinstance(doc, dict) and str(doc.get("kind", "")).startswith("Cilium"):
                # Round-trip through YAML: validate what a user gets, not the Python objects.
                obj = yaml.safe_load(yaml.safe_dump(doc))
                assert crd_errors(obj) == [], (f.path, crd_errors(obj))


@SETTINGS
@given(inventories())
def test_no_policy_opens_a_door_between_network_zones(inv: Inventory) -> None:
    files = render_files(inv, "/out")
    for c in inv.clusters:
        # Each cluster's tree is applied to that cluster only: judge its policies together.
        docs = [d for f in files if f.path.startswith(f"clusters/{c.name}/")
                for d in f.docs if isinstance(d, dict)]
        ccnp = {d["spec"]["endpointSelector"]["matchLabels"][K + NETWORK_ZONE_LABEL]: d for d in docs
                if d.get("kind") == "CiliumClusterwideNetworkPolicy"}
        assert set(ccnp) == {n.name for n in c.network_zones}
        # Boundaries only deny: they must not allow anything nor switch pods to default deny.
        for b in ccnp.values():
            assert "ingress" not in b["spec"] and "egress" not in b["spec"]
            assert b["spec"]["enableDefaultDeny"] == {"ingress": False, "egress": False}
            # ...and they never select or deny pods topogate does not manage.
            unmanaged = {K + "app": "kube-dns"}
            assert not _selector_matches(b["spec"]["endpointSelector"], unmanaged)
            for r in b["spec"]["ingressDeny"]:
                assert not any(_selector_matches(s, unmanaged) for s in r["fromEndpoints"])
        for w in inv.workloads_of(c.name):
            (cnp,) = [d for d in docs if d.get("kind") == "CiliumNetworkPolicy"
                      and d["metadata"]["name"] == cilium.cnp_name(w)
                      and d["metadata"]["namespace"] == w.namespace]
            me = cnp["spec"]["endpointSelector"]["matchLabels"]
            assert me[K + NETWORK_ZONE_LABEL] == w.network_zone
            boundary = ccnp[w.network_zone]
            assert _selector_matches(boundary["spec"]["endpointSelector"], me)
            peers = [(s, "ingressDeny", "fromEndpoints") for r in cnp["spec"]["ingress"]
                     for s in r.get("fromEndpoints", [])]
            peers += [(s, "egressDeny", "toEndpoints") for r in cnp["spec"]["egress"]
                      for s in r.get("toEndpoints", [])]
            for sel, deny_key, field in peers:
                for other in c.network_zones:
                    if other.name == w.network_zone:
                        continue
                    # The most permissive managed pod of `other` this selector can match.
                    candidate = dict(sel.get("matchLabels") or {})
                    if candidate.get(K + NETWORK_ZONE_LABEL, other.name) != other.name:
                        continue  # the selector pins its own network zone: cannot match `other`
                    candidate[K + NETWORK_ZONE_LABEL] = other.name
                    if not _selector_matches(sel, candidate):
                        continue
                    denied = any(_selector_matches(s, candidate)
                                 for r in boundary["spec"][deny_key] for s in r[field])
                    assert denied, (w.object_id, sel, other.name)
            # No allow rule reaches everything: every peer is a selector, FQDN or CIDR.
            for r in cnp["spec"]["ingress"] + cnp["spec"]["egress"]:
                assert not r.get("fromEntities") and not r.get("toEntities")
                for s in r.get("fromEndpoints", []) + r.get("toEndpoints", []):
                    assert s.get("matchLabels"), "an empty selector would match every pod"


@SETTINGS
@given(inventories())
def test_every_job_is_constrained_to_its_network_zone(inv: Inventory) -> None:
    for w in inv.workloads:
        c = inv.cluster(w.cluster)
        assert c is not None
        nz = c.network_zone(w.network_zone)
        assert nz is not None
        base = kinds.find_job(list(w.base_docs), w.kind, w.name)
        assert base is not None
        ops = kustomize.placement_ops(inv, w)
        # Apply with an independent RFC 6902 implementation, not our own PatchBuilder.
        job = jsonpatch.apply_patch(base, ops)
        assert contains(job, base) == [], w.object_id  # nothing of the base dropped
        if w.kind == "TrainJob":
            (entry,) = [e for e in job["spec"]["runtimePatches"] if e["manager"] == kustomize.TRAINJOB_MANAGER]
            tpls = [(r["name"], r["template"]["spec"]["template"])
                    for r in entry["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]]
            assert [n for n, _ in tpls] == [g.name for g in w.groups]
        else:
            tpls = [(g.name, g.template) for g in kinds.replica_groups(job)]
        assert tpls
        for name, tpl in tpls:
            spec = tpl["spec"]
            terms = spec["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
            assert terms
            for term in terms:
                zone_reqs = [e for e in term.get("matchExpressions", []) if e["key"] == c.zone_label]
                assert any(e["operator"] == "In" and set(e["values"]) <= set(nz.zones) for e in zone_reqs)
                if w.placement == "pin":
                    assert any(e["values"] == [w.zone] for e in zone_reqs)
            if w.placement == "follow":
                assert {"labelSelector": {"matchLabels": {"topogate.dev/workload": w.name}},
                        "topologyKey": c.zone_label} in spec["affinity"]["podAffinity"][REQ]
            assert tpl["metadata"]["labels"][NETWORK_ZONE_LABEL] == w.network_zone, name
            for tsc in spec.get("topologySpreadConstraints", []):
                assert tsc["topologyKey"] != c.zone_label
