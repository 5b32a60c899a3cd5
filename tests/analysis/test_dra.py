"""GPUs claimed through Dynamic Resource Allocation: what a pod's claims ask for, which pools offer
it, and what topogate says it cannot model. The scheduler oracle holds the placement fixtures
(fixtures/placement/dra-*) to the real kube-scheduler allocating claims from ResourceSlices."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from topogate.analysis.placement import place_all
from topogate.analysis.scheduling import class_counts, class_selects, fit_pool, node_classes
from topogate.inventory.model import Cluster, Pool, PoolDevice, Zone
from topogate.inventory.problems import InventoryError
from topogate.k8s.dra import ClaimIndex, pod_devices
from topogate.k8s.jobs import find_jobs
from topogate.sources.inventory import load_inventory

GPU_CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.example.com"},
             "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]}}


def template(name: str, *requests: dict[str, Any], constraints: list[Any] | None = None) -> dict[str, Any]:
    devices: dict[str, Any] = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = constraints
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"}, "spec": {"spec": {"devices": devices}}}


def spec(*claims: dict[str, str]) -> dict[str, Any]:
    return {"resourceClaims": list(claims), "containers": [{"name": "c", "resources": {"claims": [
        {"name": c["name"]} for c in claims]}}]}


def test_a_template_request_counts_its_devices_per_class() -> None:
    idx = ClaimIndex([template("t", {"name": "g", "exactly": {"deviceClassName": "gpu", "count": 4}},
                               {"name": "n", "exactly": {"deviceClassName": "nic"}})])
    d = pod_devices(spec({"name": "c", "resourceClaimTemplateName": "t"}), "ml", idx)
    assert d.per_pod == {"gpu": 4, "nic": 1} and d.count == 5 and d.problems == ()


def test_the_v1beta1_flat_request_is_read_too() -> None:
    idx = ClaimIndex([template("t", {"name": "g", "deviceClassName": "gpu", "count": 2})])
    assert pod_devices(spec({"name": "c", "resourceClaimTemplateName": "t"}), "ml", idx).per_pod == {"gpu": 2}


@pytest.mark.parametrize(("request_", "constraints", "said"), [
    ({"name": "g", "exactly": {"deviceClassName": "gpu", "selectors": [{"cel": {"expression": "true"}}]}}, None,
     "CEL selectors"),
    ({"name": "g", "exactly": {"deviceClassName": "gpu", "count": 2}}, [{"requests": ["g"], "matchAttribute": "x/y"}],
     "matchAttribute"),
    ({"name": "g", "firstAvailable": [{"name": "a", "deviceClassName": "gpu"}, {"name": "b", "deviceClassName": "x"}]},
     None, "firstAvailable"),
])
def test_what_a_claim_adds_beyond_class_and_count_is_named(request_: dict[str, Any], constraints: Any, said: str) -> None:
    d = pod_devices(spec({"name": "c", "resourceClaimTemplateName": "t"}), "ml",
                    ClaimIndex([template("t", request_, constraints=constraints)]))
    assert d.per_pod.get("gpu", 0) >= 1
    assert any(said in p and "verdict may be" in p for p in d.problems), d.problems


def test_a_template_not_among_the_manifests_counts_nothing_and_says_so() -> None:
    d = pod_devices(spec({"name": "c", "resourceClaimTemplateName": "absent"}), "ml", ClaimIndex([]))
    assert d.count == 0 and any("not among the manifests" in p for p in d.problems)


def test_a_device_class_selector_of_driver_and_attributes_selects_driver_declared_devices() -> None:
    h100 = {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com" && '
                                                  'device.attributes["gpu.example.com"].productName == "H100"'}}]}
    assert class_selects(h100, PoolDevice(8, driver="gpu.example.com", attributes=(("productName", "H100"),)))
    assert not class_selects(h100, PoolDevice(8, driver="gpu.example.com", attributes=(("productName", "A100"),)))
    assert not class_selects(h100, PoolDevice(8, driver="other.example.com", attributes=(("productName", "H100"),)))
    unreadable = {"selectors": [{"cel": {"expression": 'device.capacity["x"].memory.compareTo(quantity("80Gi")) >= 0'}}]}
    assert not class_selects(unreadable, PoolDevice(8, driver="gpu.example.com"))
    assert class_counts([PoolDevice(8, device_class="gpu.example.com")], {}) == (("gpu.example.com", 8),)


def test_a_pool_fits_a_claiming_pod_only_with_the_devices_on_one_node() -> None:
    c = Cluster("d", "aws", "us-east-1", zones=(Zone("a", (
        Pool("dra", 2, 0, (), (), devices=(PoolDevice(8, driver="gpu.example.com"),)),
        Pool("plugin", 2, 8))),))
    dra, plugin = node_classes(c, {"gpu.example.com": GPU_CLASS["spec"]})
    assert dict(dra.devices) == {"gpu.example.com": 8} and plugin.devices == ()
    f = fit_pool({}, dra, devices={"gpu.example.com": 4})
    assert f.fits and f.gpus_per_node == 8
    assert not fit_pool({}, dra, devices={"gpu.example.com": 16}).fits
    no = fit_pool({}, plugin, devices={"gpu.example.com": 1})
    assert not no.fits and "DeviceClass gpu.example.com" in no.reason


def test_unpinned_workers_claiming_dra_gpus_go_only_where_the_devices_are() -> None:
    c = Cluster("d", "aws", "us-east-1", zones=(
        Zone("a", (Pool("plugin", 2, 8),)),
        Zone("b", (Pool("dra", 2, 0, (), (), devices=(PoolDevice(8, device_class="gpu.example.com"),)),)),
        Zone("c", (Pool("cpu", 2, 0),))))
    job = {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j", "namespace": "ml"},
           "spec": {"replicatedJobs": [{"name": "w", "replicas": 1, "template": {"spec": {
               "parallelism": 2, "template": {"spec": spec({"name": "g", "resourceClaimTemplateName": "t"})}}}}]}}
    objects = [job, template("t", {"name": "g", "exactly": {"deviceClassName": "gpu.example.com", "count": 8}})]
    (p,) = place_all(find_jobs((o, None) for o in objects), lambda _j: c).values()
    w = p.group("w")
    assert w is not None and w.zones == ("b",) and w.gpus_per_pod == 8
    assert p.capacity.requested == 16 and p.capacity.fits


def test_pool_devices_need_a_class_or_a_driver(tmp_path: Path) -> None:
    inv = tmp_path / "inventory.yaml"
    inv.write_text("""apiVersion: topogate.dev/v1alpha1
kind: Inventory
metadata: {name: d}
clusters:
- name: d
  provider: aws
  region: us-east-1
  zones:
  - name: a
    pools:
    - name: dra
      nodes: 1
      devices:
      - {count: 8}
      - {deviceClass: gpu.example.com, count: 8}
      - {deviceClass: gpu.example.com, count: 4}
  networkZones: [{name: all, zones: [a]}]
""")
    with pytest.raises(InventoryError) as err:
        load_inventory(inv)
    said = [(p.pos.line, p.message) for p in err.value.problems]
    assert any(line == 14 and "needs deviceClass" in m for line, m in said), said
    assert any(line == 16 and "repeats entry 1" in m for line, m in said), said
