"""The ClusterNetworkPolicy CRD of the network-policy-api project, for validating test objects.

It is not among the CRDs of tests/crds.lock.json: it comes from the Go module proxy (the same
source the cluster tests build from), pinned by module version and by the sha256 of the file, and
is read from the Go module cache. Without Go the validation is skipped (the semantics tests still
run on the objects); with TOPOGATE_REQUIRE_CLUSTER=1 (CI) a CRD that cannot be had fails the test.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

MODULE = "sigs.k8s.io/network-policy-api@v0.3.0"
CRD_PATH = "config/crd/standard/policy.networking.k8s.io_clusternetworkpolicies.yaml"
CRD_SHA256 = "cc63289affe7af4a6c69b33bd853a102a347aa878bf64b839c9d596b721b6ead"


def _required() -> bool:
    return os.environ.get("TOPOGATE_REQUIRE_CLUSTER", "") not in ("", "0")


@functools.lru_cache(maxsize=1)
def _crd() -> dict[str, Any] | str:
    """The CRD object, or why it cannot be had."""
    if shutil.which("go") is None:
        return "no `go` on PATH to fetch " + MODULE
    try:
        out = subprocess.run(["go", "mod", "download", "-json", MODULE], capture_output=True, text=True,
                             timeout=300, check=False, cwd=Path(__file__).parent)
    except subprocess.TimeoutExpired:
        return f"`go mod download {MODULE}` took over 300 s"
    if out.returncode != 0:
        return f"`go mod download {MODULE}` failed: {(out.stdout + out.stderr).strip()[-300:]}"
    path = Path(json.loads(out.stdout)["Dir"]) / CRD_PATH
    data = path.read_bytes()
    digest = hashlib.sha256(data).hexdigest()
    if digest != CRD_SHA256:
        return f"{MODULE} {CRD_PATH} has sha256 {digest}, not the pinned {CRD_SHA256}"
    crd = yaml.safe_load(data)
    assert isinstance(crd, dict)
    return crd


def network_policy_api_validator(kind: str, api_version: str = "") -> jsonschema.protocols.Validator | None:
    """A validator of the CRD's schema for a ClusterNetworkPolicy (None for other kinds)."""
    if kind != "ClusterNetworkPolicy":
        return None
    crd = _crd()
    if isinstance(crd, str):
        if _required():
            pytest.fail(f"{crd} and TOPOGATE_REQUIRE_CLUSTER is set", pytrace=False)
        return None
    version = api_version.rpartition("/")[2] or "v1alpha2"
    (schema,) = [v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version]
    return jsonschema.Draft7Validator(schema)
