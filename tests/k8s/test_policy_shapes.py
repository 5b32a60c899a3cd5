"""Malformed policies get the API server's answer (proof issue, section 5): a wrong shape is
exit 2 at the field's own line:column with the schema's words, never a Python error; an integer
where the CRD types a string is refused, as the API server refuses it (it does not convert).

The types are the upstream CRDs': a test below reads them from the pinned CRD files and holds
topogate's shapes to them, so the two cannot drift apart.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from cilium_support import cilium_crd
from conftest import invoke

from topogate.k8s import shapes

REPO = Path(__file__).resolve().parents[2]
LAB = str(REPO / "fixtures" / "lab" / "inventory.yaml")
FIXED = str(REPO / "fixtures" / "incident" / "fixed")

HEAD = "apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: p, namespace: ml-demo}\n"
CASES = [
    # toPorts as a map instead of a list
    ("spec:\n  endpointSelector: {}\n  egress:\n  - toPorts:\n      ports: [{port: '53'}]\n",
     "8:7", "spec.egress[0].toPorts must be a list, not a mapping"),
    # a list where the CRD wants an object
    ("spec:\n  endpointSelector: [app]\n", "5:21", "spec.endpointSelector must be a mapping, not a list"),
    # an integer port: the CRD types it a string, and the API server refuses it
    ("spec:\n  endpointSelector: {}\n  egress:\n  - toPorts:\n    - ports:\n      - port: 53\n",
     "9:15", "must be a string, not 53: the API server refuses it"),
    # the same in the second rule of `specs`
    ("specs:\n- endpointSelector: {}\n- endpointSelector: {}\n  ingress:\n  - fromEntities: [1]\n",
     "8:20", "specs[1].ingress[0].fromEntities[0] must be a string, not 1"),
    # enableDefaultDeny is a boolean
    ("spec:\n  endpointSelector: {}\n  enableDefaultDeny: {ingress: 'no'}\n",
     "6:32", "spec.enableDefaultDeny.ingress must be true or false, not 'no'"),
]


@pytest.mark.parametrize("body,where,words", CASES)
def test_a_malformed_policy_is_exit_2_at_its_field(tmp_path: Path, body: str, where: str, words: str) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(HEAD + body)
    r = invoke("check", LAB, str(f), FIXED)
    assert r.exit_code == 2, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit)
    (line,) = r.stderr.strip().splitlines()
    assert f"p.yaml:{where}: CiliumNetworkPolicy/ml-demo/p: " in line and words in line, line
    assert "Error" not in line and "object has no attribute" not in line


def test_a_well_formed_policy_passes_the_shapes(tmp_path: Path) -> None:
    f = tmp_path / "p.yaml"
    f.write_text(HEAD + "spec:\n  endpointSelector: {}\n  egress:\n  - toPorts:\n    - ports:\n"
                 "      - {port: '53', protocol: UDP}\n    toEndpoints: [{matchLabels: {k8s-app: kube-dns}}]\n")
    r = invoke("check", LAB, str(f), FIXED)
    assert r.exit_code in (0, 1), r.output


def _schema_at(schema: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    for step in path:
        if step == "[]":
            schema = schema["items"]
        else:
            schema = schema["properties"][step]
    return schema


def _leaves(shape: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], str]]:
    if isinstance(shape, dict):
        return [leaf for k, v in shape.items() if k != "*" for leaf in _leaves(v, (*path, k))]
    if isinstance(shape, list):
        return _leaves(shape[0], (*path, "[]"))
    return [(path, shape)]


WANTS = {shapes.STRING: ("string",), shapes.BOOL: ("boolean",), shapes.INT: ("integer",)}
# Read as the releases that have them write them: the pinned 1.20 CRD deprecates both.
DEPRECATED = ("fromRequires", "toRequires")


def test_the_shapes_are_the_crd_types() -> None:
    doc = yaml.safe_load(cilium_crd("ciliumnetworkpolicies.yaml").read_text())
    version = next(v for v in doc["spec"]["versions"] if v["name"] == "v2")
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    checked = 0
    for path, leaf in _leaves(shapes.CILIUM_RULE):
        if leaf not in WANTS or any(d in path for d in DEPRECATED):
            continue
        node = _schema_at(spec, path)
        assert node.get("type") in WANTS[leaf], (path, node.get("type"), leaf)
        checked += 1
    assert checked >= 20
