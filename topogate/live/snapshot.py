"""What the live commands read, from the API or from a `kubectl get -o json` file, as one value.

Both sources give the same Snapshot, so import, drift and `check --live` cannot behave
differently offline (an air-gapped PR gate reading last night's export) and online.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import yaml

from topogate.audit.errors import ExitCode
from topogate.live.client import (
    JOB_RESOURCES,
    NODES,
    PODS,
    POLICY_RESOURCES,
    Target,
    api_client,
    list_all,
    slim_pod,
)
from topogate.live.errors import LiveError

POLICY_KINDS = tuple(r.kind for r in POLICY_RESOURCES)
JOB_KINDS = tuple(r.kind for r in JOB_RESOURCES)

_Loader: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass(frozen=True)
class Snapshot:
    source: str  # shown in findings: the file, or "live:<server>"
    nodes: tuple[dict[str, Any], ...]
    pods: tuple[dict[str, Any], ...] = ()
    policies: tuple[dict[str, Any], ...] = ()
    jobs: tuple[dict[str, Any], ...] = ()
    not_installed: tuple[str, ...] = ()  # optional CRDs the cluster does not serve
    requests: int = 0  # list requests answered (0 offline)
    from_file: bool = False


def fetch(target: Target, *, workloads: bool) -> Snapshot:
    """Nodes, and with `workloads` also pods, training jobs and network policies, from the API."""
    api, server = api_client(target)
    try:
        nodes = list_all(api, NODES, server, target.chunk, target.timeout)
        requests = nodes.requests
        pods: tuple[dict[str, Any], ...] = ()
        policies: list[dict[str, Any]] = []
        jobs: list[dict[str, Any]] = []
        missing: list[str] = []
        if workloads:
            listed = list_all(api, PODS, server, target.chunk, target.timeout, keep=slim_pod)
            pods, requests = listed.items, requests + listed.requests
            for res in (*POLICY_RESOURCES, *JOB_RESOURCES):
                got = list_all(api, res, server, target.chunk, target.timeout)
                requests += got.requests
                if not got.installed:
                    missing.append(f"{res.plural}.{res.group}")
                (policies if res in POLICY_RESOURCES else jobs).extend(got.items)
    finally:
        api.close()
    return Snapshot(f"live:{server}", nodes.items, pods, tuple(policies), tuple(jobs),
                    tuple(missing), requests)


def read_file(path: str) -> Snapshot:
    """A `kubectl get ... -o json` (or -o yaml) file: a List, a NodeList, or one object."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except (OSError, UnicodeDecodeError) as err:
        raise LiveError(f"{path}:1:1: cannot read: {type(err).__name__}: {err.args[-1]}",
                        ExitCode.BAD_INVOCATION) from None
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            doc = yaml.load(text, Loader=_Loader)
        except yaml.MarkedYAMLError as err:
            mark = err.problem_mark
            where = f"{mark.line + 1}:{mark.column + 1}" if mark else "1:1"
            raise LiveError(f"{path}:{where}: neither JSON nor YAML: {err.problem}; export it "
                            "with `kubectl get nodes -o json > FILE`",
                            ExitCode.BAD_INVOCATION) from None
    if not isinstance(doc, dict) or not ("items" in doc or "kind" in doc):
        raise LiveError(f"{path}:1:1: not a Kubernetes object or List; export it with "
                        "`kubectl get nodes -o json > FILE`", ExitCode.BAD_INVOCATION)
    items = doc.get("items") if "items" in doc else [doc]
    if not isinstance(items, list):
        raise LiveError(f"{path}:1:1: `items` is not a list", ExitCode.BAD_INVOCATION)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    for item in items:
        if isinstance(item, dict):
            by_kind.setdefault(str(item.get("kind", "")), []).append(item)
    nodes = tuple(by_kind.get("Node", []))
    if not nodes:
        raise LiveError(f"{path}:1:1: holds no Node; export it with `kubectl get nodes -o json`",
                        ExitCode.BAD_INVOCATION)
    return Snapshot(
        path, nodes, tuple(by_kind.get("Pod", [])),
        tuple(o for k in POLICY_KINDS for o in by_kind.get(k, [])),
        tuple(o for k in JOB_KINDS for o in by_kind.get(k, [])), from_file=True)
