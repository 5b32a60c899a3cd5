"""What the live commands read, from the API or from a `kubectl get -o json` file, as one value.

Both sources give the same Snapshot, so import, drift and `check --live` cannot behave
differently offline (an air-gapped PR gate reading last night's export) and online.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from topogate.core.exitcodes import ExitCode
from topogate.core.position import Position
from topogate.live import itemshape
from topogate.live.agentconfig import fetch_agent_objects, is_agent_object
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
from topogate.live.http import Budget
from topogate.safeio import limits
from topogate.safeio.oserror import reason
from topogate.safeio.repopaths import read_input
from topogate.safeio.saferead import InputError, documents

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
    # The Cilium agent's ConfigMap and DaemonSet (live.agentconfig), for `import`; and what of
    # them could not be read.
    agent: tuple[dict[str, Any], ...] = ()
    agent_note: str = ""
    # (kind, namespace, name) -> (line, column) of the item in the file, so findings on a
    # snapshot's objects land on their own lines (empty for the API: it has no lines).
    # The path of the item inside the file's document comes along, so a finding deep inside
    # an object (a policy's rule) can be looked up in the file when it is reported.
    lines: Mapping[tuple[str, str, str], tuple[int, int, tuple[str | int, ...]]] = field(
        default_factory=dict, compare=False)

    def locate(self, kind: str, namespace: str, name: str) -> Position:
        line, column, _ = self.lines.get((kind, namespace, name), (1, 1, ()))
        return Position(self.source, line, column)

    def position(self, obj: Mapping[str, Any]) -> Position:
        return self.locate(*object_key(obj))

    def path_in_file(self, obj: Mapping[str, Any]) -> tuple[str | int, ...] | None:
        """Where the object sits in the file's one document; None for the API (no file)."""
        hit = self.lines.get(object_key(obj))
        return hit[2] if hit is not None else None


def object_key(obj: Mapping[str, Any]) -> tuple[str, str, str]:
    md = obj.get("metadata")
    md = md if isinstance(md, dict) else {}
    return str(obj.get("kind", "")), str(md.get("namespace", "") or ""), str(md.get("name", "") or "")


_INDEX = "\0index"  # a key of _item_lines no kind has: where the i-th item starts


def _item_lines(text: str) -> dict[tuple[str, str, str], tuple[int, int, tuple[str | int, ...]]]:
    """Where each item of a List (or the one object) starts. JSON is read as YAML for its
    marks; a file libyaml cannot compose keeps no lines (findings fall back to line 1)."""
    try:
        root = yaml.compose(text, Loader=_Loader)
    except yaml.YAMLError:
        return {}
    if not isinstance(root, yaml.MappingNode):
        return {}
    top = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    listed = isinstance(top.get("items"), yaml.SequenceNode)
    items = top["items"].value if listed else [root]
    out: dict[tuple[str, str, str], tuple[int, int, tuple[str | int, ...]]] = {}
    for i, node in enumerate(items):
        if not isinstance(node, yaml.MappingNode):
            continue
        fields = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        md = fields.get("metadata")
        meta = ({k.value: v.value for k, v in md.value if isinstance(k, yaml.ScalarNode)
                 and isinstance(v, yaml.ScalarNode)} if isinstance(md, yaml.MappingNode) else {})
        kind = fields.get("kind")
        key = (str(kind.value) if isinstance(kind, yaml.ScalarNode) else "",
               str(meta.get("namespace", "")), str(meta.get("name", "")))
        out.setdefault(key, (node.start_mark.line + 1, node.start_mark.column + 1,
                             ("items", i) if listed else ()))
        out[_INDEX, "", str(i)] = (node.start_mark.line + 1, node.start_mark.column + 1, ())
    return out


def _parse(path: str, text: str) -> Any:
    """The one document of a snapshot: JSON, else YAML read through the guards every manifest
    passes (alias growth, depth, duplicate keys); InputError's position on a problem."""
    try:
        doc = json.loads(text)
    except RecursionError:
        raise LiveError(f"{path}:1:1: nested too deeply to read; no Kubernetes object needs "
                        "that: export it again with `kubectl get ... -o json`",
                        ExitCode.BAD_INVOCATION) from None
    except ValueError:
        return _parse_yaml(path, text)
    too_deep = itemshape.too_deep(doc, limits.MAX_DEPTH)
    if too_deep:
        raise LiveError(f"{path}:1:1: nested more than {limits.MAX_DEPTH} levels deep; no "
                        "Kubernetes object needs that: export it again with `kubectl get ... "
                        "-o json`", ExitCode.BAD_INVOCATION)
    return doc


def _parse_yaml(path: str, text: str) -> Any:
    try:
        docs = [v for _, _, v in documents(text, path)]
    except InputError as err:
        raise LiveError(f"{err.pos}: neither JSON nor YAML: {err.message}; export it "
                        "with `kubectl get nodes -o json > FILE`", ExitCode.BAD_INVOCATION) from None
    if len(docs) != 1:
        raise LiveError(f"{path}:1:1: {len(docs)} YAML documents; a snapshot is one List: "
                        "export it with `kubectl get nodes -o json > FILE`", ExitCode.BAD_INVOCATION)
    return docs[0]


def fetch(target: Target, *, workloads: bool, agent: bool = False) -> Snapshot:
    """Nodes, and with `workloads` also pods, training jobs and network policies, from the API;
    with `agent` the Cilium agent's configuration (live.agentconfig)."""
    api, server = api_client(target)
    budget = Budget.start()  # one deadline for every list of the command
    agent_objs: list[dict[str, Any]] = []
    agent_note = ""
    try:
        if agent:
            agent_objs, agent_note = fetch_agent_objects(api, server, target.timeout, budget)
        nodes = list_all(api, NODES, server, target.chunk, target.timeout,
                         budget=budget)
        requests = nodes.requests
        pods: tuple[dict[str, Any], ...] = ()
        policies: list[dict[str, Any]] = []
        jobs: list[dict[str, Any]] = []
        missing: list[str] = []
        if workloads:
            listed = list_all(api, PODS, server, target.chunk, target.timeout, keep=slim_pod,
                              budget=budget)
            pods, requests = listed.items, requests + listed.requests
            for res in (*POLICY_RESOURCES, *JOB_RESOURCES):
                got = list_all(api, res, server, target.chunk, target.timeout,
                         budget=budget)
                requests += got.requests
                if not got.installed:
                    missing.append(f"{res.plural}.{res.group}")
                (policies if res in POLICY_RESOURCES else jobs).extend(got.items)
    finally:
        api.close()
    return Snapshot(f"live:{server}", nodes.items, pods, tuple(policies), tuple(jobs),
                    tuple(missing), requests, agent=tuple(agent_objs), agent_note=agent_note)


def read_file(path: str) -> Snapshot:
    """A `kubectl get ... -o json` (or -o yaml) file: a List, a NodeList, or one object."""
    try:
        # The limits of every file topogate reads (confined, regular, bounded); a snapshot is
        # an export a CI step wrote, so it need not be tracked by git.
        text = read_input(path, tracked=False)
    except InputError as err:
        raise LiveError(str(err), ExitCode.BAD_INVOCATION) from None
    except OSError as err:
        raise LiveError(f"{path}:1:1: cannot read: {reason(err)}", ExitCode.BAD_INVOCATION) from None
    doc = _parse(path, text)
    if not isinstance(doc, dict) or not ("items" in doc or "kind" in doc):
        raise LiveError(f"{path}:1:1: not a Kubernetes object or List; export it with "
                        "`kubectl get nodes -o json > FILE`", ExitCode.BAD_INVOCATION)
    items = doc.get("items") if "items" in doc else [doc]
    if not isinstance(items, list):
        raise LiveError(f"{path}:1:1: `items` is not a list", ExitCode.BAD_INVOCATION)
    by_kind: dict[str, list[dict[str, Any]]] = {}
    lines = _item_lines(text)
    wanted = {"Node", "Pod", *POLICY_KINDS, *JOB_KINDS}
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            continue
        kind = item.get("kind")
        # A kind that is not a string (a list cannot even be looked up) is refused at its item;
        # an item without one is no object the commands read, as before.
        if (kind is not None and not isinstance(kind, str)) or kind in wanted:
            _check_item(path, item, i if "items" in doc else None, lines)
        by_kind.setdefault(str(kind or ""), []).append(item)
    nodes = tuple(by_kind.get("Node", []))
    if not nodes:
        raise LiveError(f"{path}:1:1: holds no Node; export it with `kubectl get nodes -o json`",
                        ExitCode.BAD_INVOCATION)
    return Snapshot(
        path, nodes, tuple(by_kind.get("Pod", [])),
        tuple(o for k in POLICY_KINDS for o in by_kind.get(k, [])),
        tuple(o for k in JOB_KINDS for o in by_kind.get(k, [])), from_file=True,
        lines=lines, agent=tuple(o for k in ("ConfigMap", "DaemonSet") for o in by_kind.get(k, [])
                                 if is_agent_object(o)))


def _check_item(path: str, item: dict[str, Any], index: int | None,
                lines: Mapping[tuple[str, str, str], tuple[int, int, tuple[str | int, ...]]]) -> None:
    """LiveError (exit 2) at the item's line when a field the commands read is mistyped."""
    why = itemshape.problem(item)
    if why is None:
        return
    line, column, _ = lines.get((_INDEX, "", str(index or 0)), (1, 1, ()))
    at = f"items[{index}] " if index is not None else ""
    raise LiveError(f"{path}:{line}:{column}: {at}{itemshape.name_of(item)}: {why}; the API "
                    "server never serves that: export the file again with `kubectl get ... -o "
                    "json`", ExitCode.BAD_INVOCATION)
