"""``topogate trace``: may SRC reach DST, and which policy line decides it?

An offline stand-in for the removed ``cilium policy trace``, answered from the repo before
anything is deployed.  This module only turns the user's words into the evaluator's terms and
back: it parses SRC/DST specs, resolves them against the manifests among PATHs into a
``PodClass`` (or an ``External``), and asks ``topogate.analysis.netpolicy`` -- the one
implementation of the policy semantics, shared with ``check`` -- for the verdict.  Nothing here
decides whether a flow is allowed.

Specs (``--from``/``--to``):
- ``ns/Kind/name[/group]``: the pods of a workload.  Training kinds (``kinds.KINDS``: PyTorchJob, TFJob, MPIJob, JobSet,
  TrainJob) have replica groups; a job with more than one needs the group (case-insensitive).
  Plain kinds: Deployment, StatefulSet, ReplicaSet, DaemonSet, Job, CronJob, Pod.  The pods'
  labels are the template's plus what the controller stamps (``kinds.controller_labels``; Job
  pods also get ``job-name`` and ``batch.kubernetes.io/job-name``); labels whose value differs per
  pod (pod-template-hash, replica index, controller uid) are left out, since a label class cannot
  hold them.  Named container ports come from the template, the service account from
  ``serviceAccountName`` (``default`` when unset, as the API server defaults it).  An object
  without ``metadata.namespace`` lives in ``default``, unless ``--inventory`` names it as a
  workload, whose namespace then applies (inventory bases carry no namespace).
- ``ns:key=value,key=value``: a pod with exactly these labels in namespace ``ns`` (``ns:`` is an
  unlabelled pod).
- an entity: ``world``, ``host``, ``kube-apiserver``, ``cluster``, ``remote-node`` (and the other
  Cilium entities ``world-ipv4``, ``world-ipv6``, ``health``, ``init``, ``ingress``, ``unmanaged``).
- a CIDR or an IP (``10.0.0.0/8``, ``192.0.2.7``, ``2001:db8::/32``), or ``fqdn:NAME`` for
  ``toFQDNs`` rules.  At least one side must be pods: between two externals no policy applies.

Namespace labels come from Namespace objects among PATHs (the evaluator learns them) plus the
automatic ``kubernetes.io/metadata.name``.

Ports: ``--port 8080``, ``8080/UDP`` (default TCP; TCP, UDP, SCTP), or a container-port name
of the destination (``--port metrics``).  Without ``--port`` the answer is given per port class:
the maximal TCP and UDP port ranges over which the verdict does not change
(``PolicySet.port_classes``).

Verdict and exit code: ``allowed`` (exit 0) when every traced port class is allowed, ``denied``
(exit 1) when none is, ``partial`` (exit 1) when some are: a trace without ``--port`` passes
only when nothing the policies distinguish is dropped, so a script can use it as a gate and
read the classes to see which ports are open.  Bad input (unknown workload, bad spec, unreadable
file) raises ``TraceError`` (exit 2, one line, with file:line:column where there is one).
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from topogate import kinds
from topogate.analysis.clusters import ClusterOf, path_clusters
from topogate.analysis.jobs import GROUP_KIND, TrainingJob, find_jobs
from topogate.analysis.locate import Located
from topogate.analysis.netpolicy import (
    External,
    Peer,
    PodClass,
    PolicyError,
    PolicyRef,
    PolicySet,
    PortRange,
    RuleRef,
    SideVerdict,
    SourceRef,
    Verdict,
)
from topogate.inventory.model import Position
from topogate.manifests import K8sObject, ManifestError, collect
from topogate.oserror import reason

__all__ = [
    "ENTITIES",
    "Endpoint",
    "PortQuery",
    "SideSummary",
    "TraceError",
    "TraceResult",
    "parse_port",
    "run_trace",
    "trace",
]

ENTITIES = (
    "world",
    "world-ipv4",
    "world-ipv6",
    "host",
    "remote-node",
    "kube-apiserver",
    "cluster",
    "health",
    "init",
    "ingress",
    "unmanaged",
)
PROTOCOLS = ("TCP", "UDP", "SCTP")
CLASS_PROTOCOLS = ("TCP", "UDP")  # what a trace without --port answers for (issue 6)
DEFAULT_NAMESPACE = "default"

# Plain workload kinds -> path of the pod template inside the object (() = the object itself).
WORKLOAD_TEMPLATES: dict[str, tuple[str, ...]] = {
    "Deployment": ("spec", "template"),
    "StatefulSet": ("spec", "template"),
    "ReplicaSet": ("spec", "template"),
    "DaemonSet": ("spec", "template"),
    "Job": ("spec", "template"),
    "CronJob": ("spec", "jobTemplate", "spec", "template"),
    "Pod": (),
}

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


class TraceError(Exception):
    """Bad input: printed as one line (``file:line:column: message`` when there is a place)."""

    def __init__(self, message: str, pos: Position | None = None) -> None:
        super().__init__(f"{pos}: {message}" if pos else message)
        self.message = message
        self.pos = pos


# ---------------------------------------------------------------------------------------------
# Result data
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Endpoint:
    """One side of the trace, resolved."""

    spec: str  # as the user wrote it
    kind: str  # workload | labels | entity | cidr | fqdn
    peer: Peer
    object: str | None = None  # "PyTorchJob/ml-demo/train" for a workload
    group: str | None = None  # replica group of a training job
    source: Position | None = None  # where its pod template is written
    notes: tuple[str, ...] = ()  # e.g. what the inventory says about it

    @property
    def is_pod(self) -> bool:
        return isinstance(self.peer, PodClass)

    @property
    def display(self) -> str:
        if self.object is not None:
            kind, ns, name = self.object.split("/", 2)
            return f"{ns}/{kind}/{name}" + (f"/{self.group}" if self.group else "")
        if isinstance(self.peer, PodClass):
            labels = ",".join(f"{k}={v}" for k, v in self.peer.labels)
            return f"{self.peer.namespace}:{labels}"
        return str(self.peer)


@dataclass(frozen=True)
class PortQuery:
    port: int
    protocol: str
    name: str | None = None  # the container-port name it was resolved from

    def __str__(self) -> str:
        named = f" ({self.name})" if self.name else ""
        return f"{self.port}/{self.protocol}{named}"


@dataclass(frozen=True)
class SideSummary:
    """What is true of one side for every port: who selects the pod, and is it default deny."""

    direction: str  # egress | ingress
    applies: bool  # False when that side is not a Cilium endpoint (world, a CIDR, ...)
    enforced: bool
    selected_by: tuple[PolicyRef, ...]
    enforced_by: tuple[PolicyRef, ...]
    # Where each enforcing policy's rules of this direction start (its `ingress:`/`egress:`
    # key): what a default-deny verdict cites as its deciding line.
    enforced_at: tuple[SourceRef, ...] = ()


@dataclass(frozen=True)
class TraceResult:
    src: Endpoint
    dst: Endpoint
    port: PortQuery | None  # None: answered per port class
    egress: SideSummary
    ingress: SideSummary
    classes: tuple[PortRange, ...]  # one entry with start == end == port when --port is given
    namespace_labels: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    cluster: str = "default"
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        allowed = [c.verdict.allowed for c in self.classes]
        if all(allowed):
            return "allowed"
        if not any(allowed):
            return "denied"
        return "partial"

    @property
    def exit_code(self) -> int:
        return 0 if self.verdict == "allowed" else 1


# ---------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------


def parse_port(text: str) -> tuple[int | None, str | None, str | None]:
    """``8080``, ``8080/udp``, ``metrics``, ``metrics/TCP`` -> (number, name, protocol or None)."""
    raw = text.strip()
    body, _, proto = raw.partition("/")
    protocol: str | None = None
    if proto:
        protocol = proto.upper()
        if protocol not in PROTOCOLS:
            raise TraceError(f"--port {text!r}: protocol must be TCP, UDP or SCTP")
    if body.isascii() and body.isdigit():  # str.isdigit is also true for '²', which int() refuses
        number = int(body)
        if not 1 <= number <= 65535:
            raise TraceError(f"--port {text!r}: port must be 1-65535")
        return number, None, protocol
    if _DNS1123_LABEL.match(body) and len(body) <= 15:  # IANA_SVC_NAME, as containerPort names
        return None, body, protocol
    raise TraceError(f"--port {text!r}: expected PORT[/TCP|UDP|SCTP] or a container-port name")


@dataclass(frozen=True)
class _Spec:
    kind: str  # workload | labels | entity | cidr | fqdn
    text: str
    namespace: str = ""
    workload_kind: str = ""
    name: str = ""
    group: str | None = None
    labels: tuple[tuple[str, str], ...] = ()
    value: str = ""


def _parse_spec(text: str, flag: str) -> _Spec:
    raw = text.strip()
    if not raw:
        raise TraceError(f"{flag}: empty; expected ns/Kind/name[/group], ns:key=value, an entity or a CIDR")
    if raw in ENTITIES:
        return _Spec("entity", raw, value=raw)
    if raw.startswith("fqdn:"):
        name = raw[len("fqdn:"):].strip().lower().rstrip(".")
        if not name:
            raise TraceError(f"{flag} {text!r}: fqdn: needs a DNS name")
        return _Spec("fqdn", raw, value=name)
    try:
        net = ipaddress.ip_network(raw, strict=False)
        return _Spec("cidr", raw, value=str(net))
    except ValueError:
        pass
    if "/" in raw and ":" not in raw.split("/", 1)[0]:
        parts = raw.split("/")
        # A topogate.dev/group job's groups are named Kind/name: ns/Group/value/Deployment/name.
        group_job = len(parts) == 5 and parts[1].lower() == GROUP_KIND.lower()
        if not (len(parts) in (3, 4) or group_job) or not all(parts):
            raise TraceError(f"{flag} {text!r}: expected ns/Kind/name or ns/Kind/name/group")
        _check_namespace(parts[0], flag, text)
        return _Spec(
            "workload", raw, namespace=parts[0], workload_kind=parts[1], name=parts[2],
            group="/".join(parts[3:]) if len(parts) > 3 else None,
        )
    if ":" in raw:
        ns, _, rest = raw.partition(":")
        _check_namespace(ns, flag, text)
        labels: dict[str, str] = {}
        for item in (p.strip() for p in rest.split(",")):
            if not item:
                continue
            key, eq, value = item.partition("=")
            key, value = key.strip(), value.strip()
            if not eq or not _valid_label_key(key) or not _LABEL_VALUE.match(value):
                raise TraceError(f"{flag} {text!r}: {item!r} is not a label key=value")
            if key in labels and labels[key] != value:
                raise TraceError(f"{flag} {text!r}: label {key!r} given twice")
            if key.startswith(("io.kubernetes.pod.", "io.cilium.k8s.")):
                # Cilium derives these from the pod's namespace and service account; a pod
                # label cannot set them, so a trace that pretends it does would mislead.
                raise TraceError(f"{flag} {text!r}: {key!r} is set by Cilium, not by a pod label; "
                                 "put the namespace before the colon")
            labels[key] = value
        return _Spec("labels", raw, namespace=ns, labels=tuple(sorted(labels.items())))
    known = ", ".join(ENTITIES[:5])
    raise TraceError(
        f"{flag} {text!r}: not a workload (ns/Kind/name[/group]), a label set (ns:key=value), "
        f"an entity ({known}, ...) or a CIDR"
    )


def _check_namespace(ns: str, flag: str, text: str) -> None:
    if not _DNS1123_LABEL.match(ns) or len(ns) > 63:
        raise TraceError(f"{flag} {text!r}: {ns!r} is not a namespace name")


def _valid_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and len(prefix) <= 253 and re.match(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", prefix)):
        return False
    return bool(_LABEL_NAME.match(name)) and len(name) <= 63


# ---------------------------------------------------------------------------------------------
# Resolution against the manifests
# ---------------------------------------------------------------------------------------------


def _source(o: K8sObject) -> SourceRef:
    return SourceRef(o.pos.file, o.pos.line, o.pos.column)


@dataclass(frozen=True)
class _Pods:
    """One resolved group of pods: what an Endpoint is built from."""

    object: str  # Kind/namespace/name
    group: str | None
    labels: dict[str, str]
    spec: Mapping[str, Any]
    source: Position | None
    object_source: Position | None = None  # where the object starts, for errors about it


def _named_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, int, str], ...]:
    out: list[tuple[str, int, str]] = []
    for section in ("containers", "initContainers"):
        for c in spec.get(section) or []:
            if not isinstance(c, dict):
                continue
            for p in c.get("ports") or []:
                if isinstance(p, dict) and p.get("name") and isinstance(p.get("containerPort"), int):
                    out.append((str(p["name"]), int(p["containerPort"]), str(p.get("protocol") or "TCP").upper()))
    return tuple(sorted(set(out)))


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
    path = WORKLOAD_TEMPLATES[o.kind]
    tpl = kinds.dig(o.obj, tuple(path)) if path else o.obj
    tpl = tpl if isinstance(tpl, dict) else {}
    meta = tpl.get("metadata") if isinstance(tpl.get("metadata"), dict) else {}
    raw = meta.get("labels") if isinstance(meta, dict) and isinstance(meta.get("labels"), dict) else {}
    assert isinstance(raw, dict)
    labels = {str(k): "" if v is None else str(v) for k, v in raw.items()}
    if o.kind == "Job":
        # The Job controller stamps its name on its pods (kubernetes.io labels reference).
        labels.update({"batch.kubernetes.io/job-name": o.name, "job-name": o.name})
    spec = tpl.get("spec") if isinstance(tpl.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    return _Pods(f"{o.kind}/{ns}/{o.name}", None, labels, spec, o.locate(path) if path else o.pos, o.pos)


@dataclass
class _Inventory:
    """What --inventory contributes: cluster names, and where unlisted workloads live."""

    namespaces: dict[tuple[str, str], str] = field(default_factory=dict)  # (kind, name) -> ns
    workloads: dict[tuple[str, str, str], Any] = field(default_factory=dict)  # (ns, kind, name)
    zones: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)  # cluster -> nz -> zones
    inventory: Any = None  # the loaded Inventory, when --inventory was given


def _load_inventory(path: str | None) -> _Inventory:
    out = _Inventory()
    if path is None:
        return out
    from topogate.inventory.loader import InventoryError, load_inventory

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
    return {k.lower(): k for k in (*kinds.KINDS, GROUP_KIND, *WORKLOAD_TEMPLATES)}


def _workloads_found(objects: Sequence[K8sObject], inv: _Inventory) -> list[str]:
    found = {f"{_namespace_of(o, inv.namespaces)}/{o.kind}/{o.name}"
             for o in objects if o.kind in kinds.KINDS or o.kind in WORKLOAD_TEMPLATES}
    found |= {f"{j.namespace}/{j.kind}/{j.name}" for j in _training_jobs(objects, inv.namespaces)}
    return sorted(found)


def _lookup(spec: _Spec, kind: str, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> list[_Pods] | None:
    """Every pod group of the named workload, or None when it is not among ``objects``."""
    if kind in WORKLOAD_TEMPLATES:
        for o in objects:
            if o.kind == kind and o.name == spec.name and _namespace_of(o, inv.namespaces) == spec.namespace:
                return [_plain_pods(o, spec.namespace)]
        return None
    for job in _training_jobs(objects, inv.namespaces):
        if job.kind == kind and job.name == spec.name and job.namespace == spec.namespace:
            if not job.groups:
                raise TraceError(f"{flag}: {kind} {spec.namespace}/{spec.name} has no pod template",
                                 _position(job.source))
            return [_Pods(job.object_id, g.name, dict(g.labels), g.spec, _position(g.source or job.source),
                          _position(job.source)) for g in job.groups]
    return None


def _find_pods(spec: _Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> list[_Pods]:
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


def _resolve_workload(spec: _Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> Endpoint:
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
    sa = pods.spec.get("serviceAccountName") or pods.spec.get("serviceAccount") or "default"
    pod = PodClass(ns, tuple(sorted(pods.labels.items())), (), _named_ports(pods.spec), str(sa))
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


def _resolve(spec: _Spec, objects: Sequence[K8sObject], inv: _Inventory, flag: str) -> Endpoint:
    if spec.kind == "workload":
        return _resolve_workload(spec, objects, inv, flag)
    if spec.kind == "labels":
        return Endpoint(spec.text, "labels", PodClass(spec.namespace, spec.labels, (), (), "default"))
    if spec.kind == "entity":
        return Endpoint(spec.text, "entity", External(entity=spec.value))
    if spec.kind == "cidr":
        return Endpoint(spec.text, "cidr", External(cidr=spec.value))
    return Endpoint(spec.text, "fqdn", External(fqdn=spec.value))


def _scope(objects: Sequence[K8sObject], inv: _Inventory, cluster: str | None,
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


def _port_query(text: str | None, dst: Endpoint) -> PortQuery | None:
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


# ---------------------------------------------------------------------------------------------
# The trace
# ---------------------------------------------------------------------------------------------


def _summary(direction: str, applies: bool, side: SideVerdict,
             by_ref: Mapping[str, K8sObject]) -> SideSummary:
    at: list[SourceRef] = []
    for p in side.enforced_by:
        o = by_ref.get(str(p))
        at.append(Located(o)[("spec", direction)] if o is not None else p.source)
    return SideSummary(direction, applies, side.enforced, side.selected_by, side.enforced_by, tuple(at))


def trace(
    objects: Sequence[K8sObject],
    src_spec: str,
    dst_spec: str,
    port: str | None = None,
    inventory: str | None = None,
    cluster: str | None = None,
) -> TraceResult:
    """Trace SRC -> DST over already collected objects (the CLI collects PATHs first), with the
    policies of one cluster: ``cluster``, else the one the workloads belong to."""
    src_s = _parse_spec(src_spec, "--from")
    dst_s = _parse_spec(dst_spec, "--to")
    inv = _load_inventory(inventory)
    src = _resolve(src_s, objects, inv, "--from")
    dst = _resolve(dst_s, objects, inv, "--to")
    if not src.is_pod and not dst.is_pod:
        raise TraceError(
            f"--from {src_spec!r} and --to {dst_spec!r} are both outside the cluster's pods; "
            "no Cilium or NetworkPolicy rule applies between them"
        )
    query = _port_query(port, dst)
    scoped_cluster, scoped = _scope(objects, inv, cluster, (("--from", src), ("--to", dst)))
    cluster_name = scoped_cluster or "default"
    try:
        pset = PolicySet.from_objects(
            ((o.obj, _source(o), Located(o)) for o in scoped), cluster_name=cluster_name
        )
    except PolicyError as err:
        raise TraceError(str(err)) from None
    if query is not None:
        v: Verdict = pset.evaluate(src.peer, dst.peer, query.port, query.protocol)
        classes: tuple[PortRange, ...] = (PortRange(query.protocol, query.port, query.port, v),)
    else:
        classes = tuple(pset.port_classes(src.peer, dst.peer, CLASS_PROTOCOLS))
    first = classes[0].verdict
    ns_labels = tuple(
        (ns, pset.namespace_labels(ns))
        for ns in sorted({e.peer.namespace for e in (src, dst) if isinstance(e.peer, PodClass)})
    )
    by_ref = {(f"{o.kind}/{o.name}" if o.kind == "CiliumClusterwideNetworkPolicy"
               else f"{o.kind}/{o.namespace or DEFAULT_NAMESPACE}/{o.name}"): o for o in scoped}
    return TraceResult(
        src, dst, query,
        _summary("egress", src.is_pod, first.egress, by_ref),
        _summary("ingress", dst.is_pod, first.ingress, by_ref),
        classes, ns_labels, cluster_name, tuple(dict.fromkeys(pset.warnings)),
    )


def run_trace(
    paths: Sequence[str], src_spec: str, dst_spec: str, port: str | None = None, inventory: str | None = None,
    cluster: str | None = None,
) -> TraceResult:
    """Collect PATHs (kustomization directories are built with kubectl) and trace."""
    # Specs first: a typo in --from should not cost a kustomize build before it is reported.
    _parse_spec(src_spec, "--from")
    _parse_spec(dst_spec, "--to")
    if port is not None:
        parse_port(port)
    skipped: list[ManifestError] = []
    try:
        objects = collect(paths, also_inside=[inventory] if inventory else [], skipped=skipped)
    except ManifestError as err:
        raise TraceError(err.message, err.pos) from None
    result = trace(objects, src_spec, dst_spec, port, inventory, cluster)
    if skipped:
        notes = tuple(f"{e.pos.file}: {e.message}" for e in skipped)
        result = dataclasses.replace(result, warnings=(*notes, *result.warnings))
    return result


# ---------------------------------------------------------------------------------------------
# JSON (stable field names, camelCase like the check report)
# ---------------------------------------------------------------------------------------------


def _policy_json(p: PolicyRef) -> dict[str, Any]:
    return {"kind": p.kind, "namespace": p.namespace, "name": p.name,
            "file": p.source.file, "line": p.source.line, "column": p.source.column}


def _rule_json(r: RuleRef | None) -> dict[str, Any] | None:
    if r is None:
        return None
    return {"policy": _policy_json(r.policy), "section": r.section, "index": r.index,
            "specIndex": r.spec_index, "file": r.source.file, "line": r.source.line,
            "column": r.source.column}


def _endpoint_json(e: Endpoint) -> dict[str, Any]:
    out: dict[str, Any] = {"spec": e.spec, "kind": e.kind, "display": e.display}
    if isinstance(e.peer, PodClass):
        out.update({
            "namespace": e.peer.namespace,
            "labels": dict(e.peer.labels),
            "namedPorts": [{"name": n, "port": p, "protocol": pr} for n, p, pr in e.peer.ports],
            "serviceAccount": e.peer.service_account,
        })
    else:
        out.update({"entity": e.peer.entity, "cidr": e.peer.cidr, "fqdn": e.peer.fqdn})
    if e.object is not None:
        out["object"] = e.object
        out["group"] = e.group
    if e.source is not None:
        out.update({"file": e.source.file, "line": e.source.line, "column": e.source.column})
    out["notes"] = list(e.notes)
    return out


def _side_json(s: SideSummary) -> dict[str, Any]:
    return {"applies": s.applies, "enforced": s.enforced,
            "selectedBy": [_policy_json(p) for p in s.selected_by],
            "enforcedBy": [_policy_json(p) for p in s.enforced_by],
            "enforcedAt": [{"file": a.file, "line": a.line, "column": a.column} for a in s.enforced_at]}


def _decision_json(s: SideVerdict) -> dict[str, Any]:
    return {"allowed": s.allowed, "reason": s.reason, "rule": _rule_json(s.decided_by),
            "deny": s.decided_by is not None and not s.allowed}


def as_json(r: TraceResult) -> dict[str, Any]:
    return {
        "from": _endpoint_json(r.src),
        "to": _endpoint_json(r.dst),
        "port": None if r.port is None else {"port": r.port.port, "protocol": r.port.protocol,
                                              "name": r.port.name},
        "verdict": r.verdict,
        "allowed": r.verdict == "allowed",
        "cluster": r.cluster,
        "egress": _side_json(r.egress),
        "ingress": _side_json(r.ingress),
        "classes": [
            {"protocol": c.protocol, "start": c.start, "end": c.end, "allowed": c.verdict.allowed,
             "egress": _decision_json(c.verdict.egress), "ingress": _decision_json(c.verdict.ingress)}
            for c in r.classes
        ],
        "namespaceLabels": {ns: dict(labels) for ns, labels in r.namespace_labels},
        "warnings": list(r.warnings),
    }
