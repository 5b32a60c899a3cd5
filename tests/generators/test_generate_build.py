"""The generated trees, built with the real `kubectl kustomize` and checked on the BUILT output.

For both bundled examples: every overlay and every cluster root builds; every built custom
resource validates against its upstream CRD schema; every pod template validates with
kubernetes-validate; every replica group (coordinator included) carries the network-zone label,
the zone affinity, the tolerations and the hostname spread; and what the user's base had
(containers, env, labels, tolerations, affinity terms, annotations) is still there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
from conftest import FIXTURES, crd_errors, kustomize_build

from topogate.core.labels import NETWORK_ZONE_LABEL, WORKLOAD_LABEL
from topogate.generators import cilium, kustomize, render_tree
from topogate.inventory.model import Inventory, Workload
from topogate.k8s import kinds
from topogate.sources.inventory import load_inventory
from topogate.tree import writer

K8S_VERSION = "1.37.0"  # a version kubernetes-validate ships schemas for
REQ = "requiredDuringSchedulingIgnoredDuringExecution"


def _render(case: str, tmp_path: Path) -> tuple[Inventory, Path]:
    inv = load_inventory(str(FIXTURES / case / "inventory.yaml"))
    out = tmp_path / "out"
    writer.write_tree(out, render_tree(inv, str(out)))
    return inv, out


def contains(big: Any, small: Any, path: str = "") -> list[str]:
    """Where `small` is not contained in `big`: maps key by key, lists index by index (the
    overlay only appends to lists, so a base item keeps its index)."""
    if isinstance(small, dict):
        if not isinstance(big, dict):
            return [f"{path}: map became {type(big).__name__}"]
        return [m for k, v in small.items()
                for m in (contains(big[k], v, f"{path}/{k}") if k in big else [f"{path}/{k}: dropped"])]
    if isinstance(small, list):
        if not isinstance(big, list) or len(big) < len(small):
            return [f"{path}: list lost items"]
        return [m for i, v in enumerate(small) for m in contains(big[i], v, f"{path}/{i}")]
    return [] if big == small else [f"{path}: {small!r} became {big!r}"]


def validate_pod_template(tpl: dict[str, Any], ns: str) -> None:
    obj = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t", "namespace": ns},
           "template": tpl}
    try:
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        pytest.fail(f"pod template does not validate: {str(e).splitlines()[0]}\n{tpl}")


def check_pod_template(inv: Inventory, w: Workload, group: str, tpl: dict[str, Any],
                       spread: bool = True) -> None:
    """The placement invariants on one built pod template."""
    cluster = inv.cluster(w.cluster)
    assert cluster is not None
    zones = list(inv.pin_zones(w))
    labels = (tpl.get("metadata") or {}).get("labels") or {}
    assert labels.get(NETWORK_ZONE_LABEL) == w.network_zone, (w.object_id, group, labels)
    assert labels.get(WORKLOAD_LABEL) == w.name
    assert labels.get(cilium.GROUP_LABEL) == group
    spec = tpl["spec"]
    terms = spec["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
    assert terms
    for term in terms:  # ORed terms: EVERY one must carry the zone requirement
        assert {"key": cluster.zone_label, "operator": "In", "values": zones} in term["matchExpressions"]
    pod_aff = ((spec["affinity"].get("podAffinity") or {}).get(REQ)) or []
    follow = {"labelSelector": {"matchLabels": {WORKLOAD_LABEL: w.name}}, "topologyKey": cluster.zone_label}
    if w.placement == "follow":
        assert follow in pod_aff
    else:
        assert len(zones) == 1 and follow not in pod_aff
    for tol in kustomize.tolerations(cluster, zones):
        assert tol in spec["tolerations"], (w.object_id, group, tol)
    tsc = spec.get("topologySpreadConstraints") or []
    if spread:
        assert any(t["topologyKey"] == "kubernetes.io/hostname" and t["whenUnsatisfiable"] == "ScheduleAnyway"
                   for t in tsc)
    assert not any(t["topologyKey"] == cluster.zone_label for t in tsc), "never a zone-key spread"


def overlay_dirs(out: Path) -> list[Path]:
    return sorted(p.parent for p in out.rglob("kustomization.yaml"))


@pytest.mark.parametrize("case", ["lab", "multi"])
def test_every_overlay_builds_and_validates(case: str, tmp_path: Path) -> None:
    inv, out = _render(case, tmp_path)
    dirs = overlay_dirs(out)
    assert dirs
    for d in dirs:
        for obj in kustomize_build(d):
            errors = crd_errors(obj)
            if errors is not None:
                assert errors == [], f"{d}: {obj['kind']} {obj['metadata'].get('name')}: {errors[:5]}"


@pytest.mark.parametrize("case", ["lab", "multi"])
def test_built_jobs_carry_placement_and_keep_the_base(case: str, tmp_path: Path) -> None:
    inv, out = _render(case, tmp_path)
    assert inv.workloads
    for w in inv.workloads:
        built = kustomize_build(out / cilium.workload_dir(w))
        job = kinds.find_job(built, w.kind, w.name)
        assert job is not None, f"{w.object_id} missing from the built overlay"
        assert job["metadata"]["namespace"] == w.namespace
        base = kinds.find_job(list(w.base_docs), w.kind, w.name)
        assert base is not None
        base_md = {k: v for k, v in base["metadata"].items() if k != "namespace"}
        assert contains(job, {**base, "metadata": base_md}) == [], w.object_id
        cnps = [o for o in built if o["kind"] == "CiliumNetworkPolicy"]
        assert [c["metadata"]["namespace"] for c in cnps] == [w.namespace]
        if w.kind == "TrainJob":
            entries = [e for e in job["spec"]["runtimePatches"] if e["manager"] == kustomize.TRAINJOB_MANAGER]
            assert len(entries) == 1
            rjs = entries[0]["trainingRuntimeSpec"]["template"]["spec"]["replicatedJobs"]
            assert [r["name"] for r in rjs] == [g.name for g in w.groups]
            for r in rjs:
                tpl = r["template"]["spec"]["template"]
                # The CRD forbids topologySpreadConstraints in runtime patches.
                check_pod_template(inv, w, r["name"], tpl, spread=False)
                # A runtime patch is a partial pod template: validate it with a stand-in container.
                validate_pod_template({**tpl, "spec": {**tpl["spec"], "containers": [
                    {"name": "stand-in", "image": "example.invalid/x"}]}}, w.namespace)
            continue
        groups = list(kinds.replica_groups(job))
        assert sorted(g.name for g in groups) == sorted(g.name for g in w.groups)
        for g in groups:
            check_pod_template(inv, w, g.name, g.template)
            validate_pod_template(g.template, w.namespace)


@pytest.mark.parametrize("case", ["lab", "multi"])
def test_cluster_root_lists_network_first_and_builds_everything(case: str, tmp_path: Path) -> None:
    inv, out = _render(case, tmp_path)
    import yaml

    for c in inv.clusters:
        root = out / "clusters" / c.name
        kust = yaml.safe_load((root / "kustomization.yaml").read_text())
        assert kust["resources"][0] == "network"
        assert kust["resources"][1:] == sorted(kust["resources"][1:])
        built = kustomize_build(root)
        ccnps = sorted(o["metadata"]["name"] for o in built if o["kind"] == "CiliumClusterwideNetworkPolicy")
        doors = sorted(cilium.door_name(d) for d in inv.doors_of(c.name) if d.target.network_zone)
        assert ccnps == sorted([*(cilium.ccnp_name(n.name) for n in c.network_zones), *doors])
        jobs = {(o["kind"], o["metadata"]["namespace"], o["metadata"]["name"])
                for o in built if o["kind"] in kinds.TRAINING_KINDS}
        assert jobs == {(w.kind, w.namespace, w.name) for w in inv.workloads_of(c.name)}
        for obj in built:
            errors = crd_errors(obj)
            assert errors in (None, []), f"{obj['kind']}: {errors}"


def test_lab_puts_all_five_pods_in_zone_a_and_lets_them_talk(tmp_path: Path) -> None:
    """The motivating case: Master + 4 Workers, nothing in the base; all must land in zone-a."""
    inv, out = _render("lab", tmp_path)
    (w,) = inv.workloads
    built = kustomize_build(out / cilium.workload_dir(w))
    job = kinds.find_job(built, "PyTorchJob", "train")
    assert job is not None
    pods = 0
    for g in kinds.replica_groups(job):
        pods += g.pods
        spec = g.spec
        (term,) = spec["affinity"]["nodeAffinity"][REQ]["nodeSelectorTerms"]
        assert term["matchExpressions"] == [
            {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a"]}]
        assert {"key": "gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"} in spec["tolerations"]
        assert g.labels[NETWORK_ZONE_LABEL] == "gpu"
    assert pods == 5
    (cnp,) = [o for o in built if o["kind"] == "CiliumNetworkPolicy"]
    ports = [p for r in cnp["spec"]["egress"] for tp in r.get("toPorts", []) for p in tp["ports"]]
    assert {"port": "23456", "protocol": "TCP"} in ports
    assert {"port": "53", "protocol": "UDP"} in ports and {"port": "53", "protocol": "TCP"} in ports
