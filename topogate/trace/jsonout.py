"""``topogate trace --format json``: stable field names, camelCase like the check report."""

from __future__ import annotations

from typing import Any

from topogate.analysis.netpolicy import PodClass, PolicyRef, RuleRef, SideVerdict
from topogate.trace.model import Endpoint, SideSummary, TraceResult


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
