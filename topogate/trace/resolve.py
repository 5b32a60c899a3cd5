"""Resolving parsed specs against the manifests among PATHs and ``--inventory``: a workload
spec becomes the ``PodClass`` of its pods (or an ``External``), ``--port NAME`` a container
port, and the objects are scoped to the cluster the trace is about."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.map.clusters import ClusterOf, path_clusters
from topogate.analysis.netpolicy import External, PodClass
from topogate.core.position import Position
from topogate.inventory.loader import InventoryError
from topogate.k8s import kinds
from topogate.k8s.jobs import GROUP_KIND, TrainingJob, find_jobs, is_volcano_job
from topogate.k8s.kinds import PLAIN_POD_TEMPLATES
from topogate.k8s.objects import K8sObject
from topogate.k8s.pods import DEFAULT_SERVICE_ACCOUNT, PlainTemplate, plain_template, pod_identity
from topogate.safeio.oserror import reason
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import ManifestError, collect
from topogate.trace.model import DEFAULT_NAMESPACE, Endpoint, PortQuery, TraceError
from topogate.trace.spec import Spec, parse_port


@dataclass(frozen=True)
class _Pods:
    """One resolved group of pods: what an Endpoint is built from."""

    object: str  # Kind/namespace/name
    group: str | None
    labels: dict[str, str]
    spec: Mapping[str, Any]
    source: Position | None
    object_source: Position | None = None  # where the object starts, for errors about it


def _namespace_of(o: K8sObject, inv_ns: Mapping[tuple[str, str], str]) -> str:
    if o.namespace:
        return o.namespace
    return inv_ns.get((o.kind, o.name), DEFAULT_NAMESPACE)


def _position(src: Any) -> Position | None:
    if src is None:
        return None
    return Position(str(src.file), int(src.line), int(src.column))


def _training_jobs(objects: Sequence[K8sObject], inv_ns: Mapping[tuple[str, str], str]) -> tuple[TrainingJob, ...]:
    """Jobs as the analysis sees them (TrainJob runtimes, topogate.dev/group workloads)."""
    items: list[tuple[Any, ...]] = []
    for o in objects:
        obj = o.obj
        if not o.namespace and (o.kind, o.name) in inv_ns:
            # Inventory bases carry no namespace; the inventory says where they are deployed.
            meta = obj.get("metadata")
            obj = {**obj, "metadata": {**(meta if isinstance(meta, dict) else {}), "namespace": inv_ns[(o.kind, o.name)]}}
        items.append((obj, o.pos, o.locate))
    return find_jobs(items)


def _plain_pods(o: K8sObject, ns: str) -> _Pods:
    tpl = plain_template(o.kind, o.name, o.obj)
    if tpl is None:
        tpl = PlainTemplate({}, {}, PLAIN_POD_TEMPLATES[o.kind])
    return _Pods(f"{o.kind}/{ns}/{o.name}", None, tpl.labels, tpl.spec,
                 o.locate(tpl.path) if tpl.path else o.pos, o.pos)


@dataclass
class _Inventory:
    """What --inventory contributes: cluster names, and where unlisted workloads live."""

    namespaces: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> ns
    workloads: dict[tuple[str, str, str], Any] = field(default_factory=dict)  # (ns, kind, name)
    zones: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)  # cluster -> nz -> zones
    inventory: Any = None  # the loaded Inventory, when --inventory was given


def load_trace_inventory(path: str | None) -> _Inventory:
    out = _Inventory()
    if path is None:
        return out

    try:
        inv = load_inventory(path)
    except InventoryError as err:
        first = err.problems[0] if err.problems else None
        more = f" (and {len(err.problems) - 1} more; run `topogate check`)" if len(err.problems) > 1 else ""
        raise TraceError(f"--inventory: {first.message if first else 'invalid'}{more}",
                         first.pos if first else None) from None
    except OSError as err:
        raise TraceError(f"--inventory: cannot read: {reason(err)}", Position(str(path), 1, 1)) from None
    out.inventory = inv
    for w in inv.workloads:
        out.namespaces.setdefault((w.kind, w.name), w.namespace)
        out.workloads[(w.namespace, w.kind, w.name)] = w
    for c in inv.clusters:
        out.zones[c.name] = {nz.name: tuple(nz.zones) for nz in c.network_zones}
    return out


def _known_kinds() -> dict[str, str]:
    return {k.lower(): k for k in (*kinds.TRAINING_KINDS, GROUP_KIND, *PLAIN_POD_TEMPLATES)}


def _workloads_found(objects: Sequence[K8sObject], inv: _Inventory) -> list[str]:
    found = {f"{_namespace_of(o, inv.namespaces)}/{o.kind}/{o.name}"
             for o in objects if o.kind in kinds.TRAINING_KINDS or o.kind in PLAIN_POD_TEMPLATES}
    found |= {f"{j.namespace}/{j.kind}/{j.name}" for j in _training_jobs(objects, inv.namespaces)}
    return sorted(found)


def _lookup(spec: Spec, kind: str, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> list[_Pods] | None:
    """Every pod group of the named workload, or None when it is not among ``objects``."""
    if kind in PLAIN_POD_TEMPLATES:
        for o in objects:
            if (o.kind == kind and o.name == spec.name and _namespace_of(o, inv.namespaces) == spec.namespace
                    and not is_volcano_job(o.obj)):  # a Volcano Job is a kind "Job" with tasks: a training job
                return [_plain_pods(o, spec.namespace)]
    for job in _training_jobs(objects, inv.namespaces):
        if job.kind == kind and job.name == spec.name and job.namespace == spec.namespace:
            if not job.groups:
                raise TraceError(f"{flag}: {kind} {spec.namespace}/{spec.name} has no pod template",
                                 _position(job.source))
            return [_Pods(job.object_id, g.name, dict(g.labels), g.spec, _position(g.source or job.source),
                          _position(job.source)) for g in job.groups]
    return None


def _find_pods(spec: Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> list[_Pods]:
    kind = _known_kinds().get(spec.workload_kind.lower())
    if kind is None:
        raise TraceError(
            f"{flag} {spec.text!r}: unknown kind {spec.workload_kind!r}; "
            f"known: {', '.join(sorted(_known_kinds().values()))}"
        )
    got = _lookup(spec, kind, objects, inv, flag)
    if got is not None:
        return got
    # Not among PATHs: the inventory knows where the workload's own manifests are.
    w = inv.workloads.get((spec.namespace, kind, spec.name))
    if w is not None and w.base_dir:
        try:
            base = collect([w.base_dir])
        except ManifestError as err:
            raise TraceError(err.message, err.pos) from None
        got = _lookup(spec, kind, base, inv, flag)
        if got is not None:
            return got
    seen = _workloads_found(objects, inv)
    listed = ", ".join(seen[:12]) + (", ..." if len(seen) > 12 else "") if seen else "none"
    raise TraceError(f"{flag}: no {kind} {spec.namespace}/{spec.name} among PATHs; workloads found: {listed}")


def _resolve_workload(spec: Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> Endpoint:
    groups = _find_pods(spec, objects, inv, flag)
    kind, ns, name = groups[0].object.split("/", 2)
    names = [g.group for g in groups if g.group is not None]
    if spec.group is not None:
        if not names:
            raise TraceError(f"{flag} {spec.text!r}: a {kind} has no replica groups; drop /{spec.group}",
                             groups[0].object_source)
        chosen = [g for g in groups if (g.group or "").lower() == spec.group.lower()]
        if not chosen:
            raise TraceError(f"{flag} {spec.text!r}: {kind} {ns}/{name} has no replica group {spec.group!r}; "
                             f"groups: {', '.join(names)}", groups[0].object_source)
        pods = chosen[0]
    elif len(groups) > 1:
        raise TraceError(f"{flag} {spec.text!r}: {kind} {ns}/{name} has replica groups {', '.join(names)}; "
                         f"name one, e.g. {ns}/{kind}/{name}/{names[-1]}", groups[0].object_source)
    else:
        pods = groups[0]
    who = pod_identity(ns, pods.labels, pods.spec)
    pod = PodClass(who.namespace, who.labels, (), who.named_ports, who.service_account)
    notes: list[str] = []
    w = inv.workloads.get((ns, kind, name))
    if w is not None:
        zones = inv.zones.get(w.cluster, {}).get(w.network_zone, ())
        pin = f", pinned to {w.zone}" if w.placement == "pin" and w.zone else ""
        notes.append(
            f"inventory: cluster {w.cluster}, network zone {w.network_zone} "
            f"({', '.join(zones) or 'no zones'}), placement {w.placement}{pin}"
        )
    if pods.spec.get("hostNetwork") is True:
        # Cilium gives a host-network pod the node's identity, never its labels: policies see it
        # as the host (same node) or remote-node entity, and no endpointSelector selects it.
        notes.append("hostNetwork: true: not a Cilium endpoint; traced as the remote-node entity "
                     "(host when on the peer's own node)")
        return Endpoint(spec.text, "workload", External(entity="remote-node"), pods.object, pods.group,
                        pods.source, tuple(notes))
    return Endpoint(spec.text, "workload", pod, pods.object, pods.group, pods.source, tuple(notes))


def resolve_endpoint(spec: Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> Endpoint:
    if spec.kind == "workload":
        return _resolve_workload(spec, objects, inv, flag)
    if spec.kind == "labels":
        return Endpoint(spec.text, "labels", PodClass(spec.namespace, spec.labels, (), (), DEFAULT_SERVICE_ACCOUNT))
    if spec.kind == "entity":
        return Endpoint(spec.text, "entity", External(entity=spec.value, labels=spec.labels))
    if spec.kind == "cidr":
        return Endpoint(spec.text, "cidr", External(cidr=spec.value))
    return Endpoint(spec.text, "fqdn", External(fqdn=spec.value))


def scope(objects: Sequence[K8sObject], inv: _Inventory, cluster: str | None,
           ends: Sequence[tuple[str, Endpoint]]) -> tuple[str | None, list[K8sObject]]:
    """The cluster the trace is about and the objects whose policies apply there, decided by
    ``analysis.clusters.ClusterOf`` exactly as `check` decides it: an object the inventory (or a
    ``clusters/<name>/`` path) puts in another cluster does not apply."""
    of = ClusterOf(inv.inventory, () if inv.inventory is not None else path_clusters(objects))
    if cluster is not None and inv.inventory is not None and cluster not in of.names:
        raise TraceError(f"--cluster {cluster}: no such cluster in the inventory "
                         f"(known: {', '.join(of.names)})")
    owned = [of.own(o) for o in objects]
    chosen = cluster
    for flag, e in ends:
        if e.object is None:
            continue
        mine = {c for c, o in owned if c is not None and f"{o.kind}/{o.namespace or DEFAULT_NAMESPACE}/{o.name}" == e.object}
        if len(mine) == 1:
            (c,) = mine
            if chosen is not None and c != chosen:
                what = f"--cluster {cluster}" if cluster is not None else "the other side's cluster"
                raise TraceError(f"{flag} {e.spec!r}: {e.object} belongs to cluster {c}, not {what}; "
                                 "pods of different clusters share no policy: trace within one cluster")
            chosen = c
    if chosen is None and len(of.names) == 1:
        chosen = of.names[0]
    if chosen is None:
        if any(c is not None for c, _ in owned):
            known = ", ".join(sorted({c for c, _ in owned if c is not None}))
            raise TraceError(f"PATHs hold objects of several clusters ({known}) and neither side says "
                             "which one the trace is about: pass --cluster NAME")
        return None, list(objects)
    return chosen, [o for c, o in owned if c in (None, chosen)]


def port_query(text: str | None, dst: Endpoint) -> PortQuery | None:
    if text is None:
        return None
    number, name, proto = parse_port(text)
    if number is not None:
        return PortQuery(number, proto or "TCP")
    if not isinstance(dst.peer, PodClass):
        raise TraceError(f"--port {text!r}: a port name needs pods on the --to side to name it")
    hits = [(n, p) for pname, n, p in dst.peer.ports if pname == name and (proto is None or p == proto)]
    if not hits:
        known = ", ".join(f"{p}={n}/{pr}" for p, n, pr in dst.peer.ports) or "none"
        raise TraceError(f"--port {text!r}: {dst.display} has no container port named {name!r} "
                         f"(named ports: {known})", dst.source)
    n, p = hits[0]
    return PortQuery(n, p, name)
