"""Plain-text rendering of a ``topogate trace`` result.

Laid out for the question "why is my traffic dropped?": the verdict first, then each side
(egress of SRC, ingress of DST) with who selects the pod and whether default deny is on, then
one block per port class with the rule that decides each side and where it is written.  The
selection and default-deny facts do not depend on the port, so they are printed once.
"""

from __future__ import annotations

import json

from topogate.analysis.netpolicy import PodClass, PolicyRef, SideVerdict, SourceRef
from topogate.report.formats import Formats
from topogate.trace import Endpoint, SideSummary, TraceResult
from topogate.trace.jsonout import as_json

_VERDICT = {"allowed": "ALLOWED", "denied": "DENIED", "partial": "PARTLY DENIED"}


def _at(src: SourceRef) -> str:
    """file:line:column, the form editors and terminals make clickable (as check's findings)."""
    return f"{src.file}:{src.line}:{src.column}"


def _policy(p: PolicyRef) -> str:
    return f"{p} ({_at(p.source)})"


def _endpoint(label: str, e: Endpoint, r: TraceResult) -> list[str]:
    lines = [f"{label:<5} {e.display}" + (f"  [{e.source}]" if e.source else "")]
    pad = " " * 6
    if isinstance(e.peer, PodClass):
        labels = ", ".join(f"{k}={v}" for k, v in e.peer.labels) or "(none)"
        lines.append(f"{pad}pod labels: {labels}")
        ns = dict(r.namespace_labels).get(e.peer.namespace, ())
        lines.append(f"{pad}namespace {e.peer.namespace}: " + ", ".join(f"{k}={v}" for k, v in ns))
        if e.peer.ports:
            lines.append(f"{pad}named ports: " + ", ".join(f"{n}={p}/{pr}" for n, p, pr in e.peer.ports))
    else:
        lines.append(f"{pad}outside the cluster's pods ({e.kind})")
    lines += [f"{pad}{n}" for n in e.notes]
    return lines


def _side(title: str, s: SideSummary) -> list[str]:
    if not s.applies:
        return [f"{title}: not a Cilium endpoint, no policy applies"]
    if not s.selected_by:
        return [f"{title}: not enforced (no policy selects it)"]
    lines = [f"{title}: " + ("enforced" if s.enforced else "not enforced")]
    lines += [f"    selected by {_policy(p)}" for p in s.selected_by]
    if s.enforced:
        lines.append("    default deny switched on by " + ", ".join(str(p) for p in s.enforced_by))
    return lines


def _decision(direction: str, v: SideVerdict, s: SideSummary) -> str:
    if not s.applies:
        return f"    {direction:<8} n/a"
    word = "allow" if v.allowed else "DENY "
    reason = v.reason
    if v.decided_by is not None:
        src = v.decided_by.source
        reason = reason.replace(f"({src.file}:{src.line})", f"({_at(src)})")
    if not v.allowed and v.decided_by is None and s.enforced_at:
        # Default deny: the deciding lines are where the enforcing policies' rules are written.
        reason += f" ({direction} rules at " + ", ".join(_at(a) for a in s.enforced_at) + ")"
    return f"    {direction:<8} {word}  {reason}"


def render_trace_text(r: TraceResult) -> str:
    port = str(r.port) if r.port is not None else "every TCP and UDP port"
    out = [f"trace {r.src.display} -> {r.dst.display}, {port}"]
    out += _endpoint("from", r.src, r)
    out += _endpoint("to", r.dst, r)
    out.append("")
    n = len(r.classes)
    if r.port is not None:
        out.append(f"verdict: {_VERDICT[r.verdict]}")
    else:
        denied = sum(1 for c in r.classes if not c.verdict.allowed)
        out.append(f"verdict: {_VERDICT[r.verdict]} ({denied} of {n} port class{'es' if n != 1 else ''} denied)")
    out += _side(f"egress of {r.src.display}", r.egress)
    out += _side(f"ingress of {r.dst.display}", r.ingress)
    out.append("")
    for c in r.classes:
        out.append(f"  {c}: {'allowed' if c.verdict.allowed else 'DENIED'}")
        out.append(_decision("egress", c.verdict.egress, r.egress))
        out.append(_decision("ingress", c.verdict.ingress, r.ingress))
    if r.warnings:
        out.append("")
        out += [f"warning: {w}" for w in r.warnings]
    return "\n".join(out) + "\n"


# trace's table in the report registry.
REPORT: Formats[TraceResult] = Formats({
    "text": render_trace_text,
    "json": lambda r: json.dumps(as_json(r), indent=2, sort_keys=True) + "\n",
}, fallback="text")

__all__ = ["REPORT"]
