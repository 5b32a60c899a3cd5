"""The trace itself: parse, resolve, build the ``PolicySet`` of the cluster and ask
``topogate.analysis.netpolicy`` for the verdict per port (class)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from topogate.analysis.locate import Located
from topogate.analysis.map.pods import class_of
from topogate.analysis.netpolicy import (
    PodClass,
    PolicyError,
    PolicySet,
    PortRange,
    SideVerdict,
    SourceRef,
    Verdict,
    policy_key,
)
from topogate.k8s.pods import PodIdentity
from topogate.sources.manifests import K8sObject, ManifestError, collect
from topogate.trace.model import Endpoint, SideSummary, TraceError, TraceResult
from topogate.trace.resolve import load_trace_inventory, port_query, resolve_endpoint, scope
from topogate.trace.spec import parse_port, parse_spec

CLASS_PROTOCOLS = ("TCP", "UDP")  # what a trace without --port answers for (issue 6)


def _source(o: K8sObject) -> SourceRef:
    return SourceRef(o.pos.file, o.pos.line, o.pos.column)


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
    src_s = parse_spec(src_spec, "--from")
    dst_s = parse_spec(dst_spec, "--to")
    inv = load_trace_inventory(inventory)
    src = resolve_endpoint(src_s, objects, inv, "--from")
    dst = resolve_endpoint(dst_s, objects, inv, "--to")
    if not src.is_pod and not dst.is_pod:
        raise TraceError(
            f"--from {src_spec!r} and --to {dst_spec!r} are both outside the cluster's pods; "
            "no Cilium or NetworkPolicy rule applies between them"
        )
    query = port_query(port, dst)
    scoped_cluster, scoped = scope(objects, inv, cluster, (("--from", src), ("--to", dst)))
    cluster_name = scoped_cluster or "default"
    try:
        pset = PolicySet.from_objects(
            ((o.obj, _source(o), Located(o)) for o in scoped), cluster_name=cluster_name
        )
    except PolicyError as err:
        raise TraceError(str(err)) from None
    # The pod classes `check` gives the same pods: with their namespace's labels as the
    # policies' Namespace objects declare them (analysis.map.pods.class_of).
    src, dst = (_in_cluster(e, pset) for e in (src, dst))
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
    by_ref = {policy_key(o.kind, o.namespace, o.name): o for o in scoped}
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
    parse_spec(src_spec, "--from")
    parse_spec(dst_spec, "--to")
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


def _in_cluster(e: Endpoint, pset: PolicySet) -> Endpoint:
    if not isinstance(e.peer, PodClass):
        return e
    p = e.peer
    return dataclasses.replace(e, peer=class_of(PodIdentity(p.namespace, p.labels, p.service_account or "",
                                                            p.ports), pset))
