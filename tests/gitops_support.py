"""What the GitOps tests share: the engines' own renderers built from Go modules (the oracles),
and topogate's render of a scratch repository.

tests/flux/build.sh builds flux-render (fluxcd/pkg/kustomize, Go 1.26) and tests/argocd/build.sh
builds argocd-render (argo-cd's util/kustomize, Go 1.27.3 fetched by that script) with the
kustomize CLI it drives, each once per machine into a cache keyed by its go.sum; `make test`
runs both first (`make gitops-oracles`). Without Go the oracle tests skip with one line; under
TOPOGATE_REQUIRE_GITOPS_ORACLES=1 (CI, .ci/run) they fail instead.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from conftest import REPO

from topogate.gitops.objects import RenderedObject
from topogate.gitops.render import Rendered, render
from topogate.inventory.model import Inventory
from topogate.k8s.objects import K8sObject
from topogate.sources.inventory import load_inventory
from topogate.sources.located import parse_yaml

REPO_URL = "https://git.example.com/acme/oracle.git"
HOW = "install Go and run `make gitops-oracles` (builds the Flux and Argo CD renderers the tests hold topogate to)"


def oracles_required() -> bool:
    return os.environ.get("TOPOGATE_REQUIRE_GITOPS_ORACLES", "") not in ("", "0")


@functools.lru_cache(maxsize=4)
def _built(engine: str) -> tuple[Path | None, str]:
    script = REPO / "tests" / engine / "build.sh"
    if shutil.which("bash") is None:
        return None, "no bash on PATH"
    where = subprocess.run(["bash", str(script), "--path"], capture_output=True, text=True, timeout=60)
    binary = Path(where.stdout.strip().splitlines()[-1]) if where.returncode == 0 and where.stdout.strip() else None
    if binary is not None and os.access(binary, os.X_OK):
        return binary, ""
    if shutil.which("go") is None:
        return None, f"no go on PATH and no cached {engine} renderer"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, timeout=3600)
    if proc.returncode != 0:
        return None, f"tests/{engine}/build.sh failed (exit {proc.returncode}): {proc.stderr.strip()[-2000:]}"
    return Path(proc.stdout.strip().splitlines()[-1]), ""


def oracle(engine: str) -> Path:
    """The engine's renderer ("flux" or "argocd"), or skip the calling test (fail it when required)."""
    binary, problem = _built(engine)
    if binary is None:
        if oracles_required():
            pytest.fail(f"{problem} and TOPOGATE_REQUIRE_GITOPS_ORACLES is set: {HOW}", pytrace=False)
        pytest.skip(f"{problem}: {HOW}")
    return binary


def ask(binary: Path, requests: Sequence[dict[str, Any]], env: dict[str, str] | None = None,
        timeout: float = 600) -> list[dict[str, Any]]:
    """One answer per request, from one run of the renderer (a JSON line each way)."""
    text = "".join(json.dumps(r) + "\n" for r in requests)
    proc = subprocess.run([str(binary)], input=text, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    answers = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert len(answers) == len(requests), proc.stderr[-3000:]
    return answers


def inventory(tmp: Path, clusters: Sequence[str] = ("c1",)) -> Inventory:
    """An inventory whose gitops.repoURL is REPO_URL, with these (one-zone) clusters."""
    lines = ["apiVersion: topogate.dev/v1alpha1", "kind: Inventory", "metadata: {name: oracle}",
             f"gitops: {{repoURL: {REPO_URL}}}", "clusters:"]
    for c in clusters:
        lines += [f"- name: {c}", "  provider: aws", "  region: us-east-1", "  zones:",
                  "  - name: zone-a", "    pools: [{name: p, nodes: 2}]",
                  "  networkZones: [{name: all, zones: [zone-a]}]"]
    path = tmp / "inventory.yaml"
    path.write_text("\n".join(lines) + "\n")
    return load_inventory(str(path))


def read(path: Path) -> list[K8sObject]:
    return list(parse_yaml(path.read_text(), str(path), str(path)))


def topogate_render(repo: Path, files: Sequence[str], inv: Inventory, strict: bool = True) -> Rendered:
    """topogate's render of the engine objects in `files` (relative to repo), the inputs being
    every ConfigMap and Secret the cluster has (closed)."""
    objs = [o for f in files for o in read(repo / f)]
    return render(objs, inv, strict=strict, also_inside=[str(repo)], closed=True)


def rendered_objects(r: Rendered) -> list[dict[str, Any]]:
    return [o.obj for o in r.objects if isinstance(o, RenderedObject)]


def normal(v: Any) -> Any:
    """A value as JSON compares it: an integral float is its int."""
    if isinstance(v, dict):
        return {str(k): normal(x) for k, x in v.items()}
    if isinstance(v, list):
        return [normal(x) for x in v]
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


__all__ = ["REPO_URL", "ask", "inventory", "normal", "oracle", "oracles_required", "read", "rendered_objects",
           "topogate_render"]
