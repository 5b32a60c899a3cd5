"""The trace itself: parse, resolve, build the ``PolicySet`` of the cluster and ask
``topogate.analysis.netpolicy`` for the verdict per port (class)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from topogate.analysis.locate import Located
from topogate.analysis.map.pods import class_of
from topogate.analysis.netpolicy import (
    Agent,
    External,
    PodClass,
    PolicyError,
    PolicySet,
    PortRange,
    SideVerdict,
    SourceRef,
    Verdict,
    agent_for,
    policy_key,
)
from topogate.k8s.objects import K8sObject
from topogate.k8s.pods import PodIdentity
from topogate.sources.manifests import ManifestError, collect
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
    agent = agent_of(inv.inventory, scoped_cluster)
    try:
        pset = PolicySet.from_objects(
            ((o.obj, _source(o), Located(o)) for o in scoped), cluster_name=cluster_name, agent=agent
        )
    except PolicyError as err:
        raise TraceError(str(err)) from None
    # The pod classes `check` gives the same pods: with their namespace's labels as the
    # policies' Namespace objects declare them (analysis.map.pods.class_of).
    src, dst = (_identity_note(_in_cluster(e, pset), pset) for e in (src, dst))
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
    warnings = [*dict.fromkeys(pset.warnings), *_api_server_depends(scoped, agent, cluster_name, src, dst, classes)]
    return TraceResult(
        src, dst, query,
        _summary("egress", src.is_pod, first.egress, by_ref),
        _summary("ingress", dst.is_pod, first.ingress, by_ref),
        classes, ns_labels, cluster_name, tuple(warnings),
    )


_PLACES = {"remote-node": "on nodes of the cluster (remote-node)", "host": "on the pod's own node (host)",
           "world": "outside the cluster, as a managed control plane (world)"}


def _api_server_depends(scoped: Sequence[K8sObject], agent: Agent, cluster_name: str, src: Endpoint,
                        dst: Endpoint, classes: Sequence[PortRange]) -> list[str]:
    """When the inventory does not say where the kube-apiserver runs and the verdict of a flow
    with it depends on that, say which way (its identity carries remote-node, host or world)."""
    if "kubeAPIServer" not in agent.unset or not any(
            isinstance(e.peer, External) and e.peer.entity == "kube-apiserver" for e in (src, dst)):
        return []
    answers: dict[str, tuple[bool, ...]] = {}
    for place in _PLACES:
        other = dataclasses.replace(agent, api_server=place)
        pset = PolicySet.from_objects(((o.obj, _source(o), Located(o)) for o in scoped),
                                      cluster_name=cluster_name, agent=other)
        answers[place] = tuple(pset.evaluate(src.peer, dst.peer, c.start, c.protocol).allowed for c in classes)
    assumed = answers[agent.api_server]
    differ = [p for p, a in answers.items() if a != assumed]
    if not differ:
        return []
    return [f"the inventory does not say where the kube-apiserver runs (cilium.kubeAPIServer): traced as "
            f"{_PLACES[agent.api_server]}; " + "; ".join(
                f"{'ALLOWED' if all(answers[p]) else 'DENIED' if not any(answers[p]) else 'partly denied'} "
                f"if it runs {_PLACES[p]}" for p in differ)]


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


def agent_of(inventory: Any, cluster: str | None) -> Agent:
    """The agent of the inventory's cluster (its `cilium:` block); the newest known version's
    defaults without an inventory or that cluster."""
    if inventory is None or cluster is None:
        return agent_for(None)
    c = next((c for c in inventory.clusters if c.name == cluster), None)
    return agent_for(c.cilium if c is not None else None)


def _identity_note(e: Endpoint, pset: PolicySet) -> Endpoint:
    """Say which of the pod's labels its Cilium identity leaves out: a selector on one of them
    selects nothing, however right it looks beside the pod's labels."""
    if not isinstance(e.peer, PodClass):
        return e
    dropped = pset.labels.dropped(e.peer)
    if not dropped:
        return e
    note = (f"identity: Cilium {pset.agent.version} leaves out {', '.join(dropped)} (its label filter); "
            "no selector can select the pod by them")
    return dataclasses.replace(e, notes=(*e.notes, note))


def _in_cluster(e: Endpoint, pset: PolicySet) -> Endpoint:
    if not isinstance(e.peer, PodClass):
        return e
    p = e.peer
    return dataclasses.replace(e, peer=class_of(PodIdentity(p.namespace, p.labels, p.service_account or "",
                                                            p.ports), pset))
