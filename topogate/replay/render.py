"""The replay report: text, JSON (stable fields), markdown; and the inventory entries that
would admit exactly the observed-but-denied flows (`--suggest`).

Whatever a flow says (namespaces, labels, drop reasons) and whatever the tree says (paths, rule
names) is escaped as check's reports escape it: in text and in `--suggest`'s comments each
value is one visible line (topogate.core.escape.one_line), so a newline in a label cannot
start a line of its own (a forged count, a YAML key); in markdown each value is a table cell
(topogate.report.markdown.cell: no HTML, no link, no heading, no row of its own)."""

from __future__ import annotations

import json
from typing import Any

from topogate.analysis.netpolicy import External, PodClass
from topogate.core.escape import one_line
from topogate.core.words import plural
from topogate.inventory.model import Inventory
from topogate.replay.decide import Replay, Seen, denied_observed, dropped_allowed, per_job
from topogate.report.formats import Formats
from topogate.report.markdown import cell


def _line(s: Seen) -> str:
    at = s.decision.where or ("default deny" if not s.decision.allowed else "-")
    return (f"{one_line(s.src.shown)} -> {one_line(s.dst.shown)} {s.port}/{s.protocol} x{s.count} "
            f"(line {s.first_line}): {one_line(s.decision.words)} [{one_line(at)}]")


def render_text(r: Replay) -> str:
    out = [f"topogate replay: cluster {one_line(r.cluster)}: {plural(sum(s.count for s in r.seen.values()), 'flow')}, "
           f"{len(r.seen)} distinct, {plural(r.replies, 'reply', 'replies')} skipped"]
    denied, dropped = denied_observed(r), dropped_allowed(r)
    out.append(f"observed but denied by the tree: {len(denied)}")
    out += [f"  {_line(s)}" for s in denied]
    out.append(f"dropped by the cluster but allowed by the tree: {len(dropped)}")
    out += [f"  {_line(s)}" + (f" (drop: {one_line(s.drop_reason)})" if s.drop_reason else "") for s in dropped]
    for job, kinds in sorted(per_job(r).items()):
        parts = [f"{k} {v['seen']} seen, {v['crossed']} across zones, {v['unknown']} zone unknown" for k, v in kinds.items()]
        out.append(f"job {one_line(job)}: " + "; ".join(parts))
    return "\n".join(out) + "\n"


def _seen_json(s: Seen) -> dict[str, Any]:
    return {"source": s.src.shown, "destination": s.dst.shown, "protocol": s.protocol, "port": s.port,
            "observed": s.observed, "count": s.count, "first_line": s.first_line,
            "allowed": s.decision.allowed, "decided_by": s.decision.words,
            "where": s.decision.where or ("default deny" if not s.decision.allowed else ""),
            "drop_reason": s.drop_reason, "crossed_zones": s.crossed}


def as_json(r: Replay) -> dict[str, Any]:
    return {"cluster": r.cluster, "flows": sum(s.count for s in r.seen.values()), "replies_skipped": r.replies,
            "observed_denied": [_seen_json(s) for s in denied_observed(r)],
            "dropped_allowed": [_seen_json(s) for s in dropped_allowed(r)],
            "jobs": per_job(r)}


def render_markdown(r: Replay) -> str:
    out = ["## topogate replay", "", f"Cluster {cell(r.cluster)}.", ""]
    for title, rows in (("Observed, denied by the tree", denied_observed(r)),
                        ("Dropped by the cluster, allowed by the tree", dropped_allowed(r))):
        out += [f"### {title}", ""]
        if not rows:
            out += ["None.", ""]
            continue
        out += ["| source | destination | port | flows | decided by |", "|---|---|---|---|---|"]
        out += [f"| {cell(s.src.shown)} | {cell(s.dst.shown)} | {s.port}/{s.protocol} | {s.count} | "
                f"{cell(s.decision.words)} ({cell(s.decision.where or 'default deny')}) |" for s in rows]
        out.append("")
    return "\n".join(out)


# The decisions' table in the report registry (the replay command's adds --suggest: topogate.replay.REPORT).
DECIDED: Formats[Replay] = Formats({
    "text": render_text,
    "json": lambda r: json.dumps(as_json(r), indent=2, sort_keys=True) + "\n",
    "markdown": render_markdown,
}, fallback="text")
def _q(text: str) -> str:
    return json.dumps(text)  # a YAML double-quoted scalar: nothing a flow says can break out


def suggest(r: Replay, inv: Inventory) -> str:
    """Inventory entries admitting exactly the observed-but-denied flows: `egress:` of the
    sending workload for an outside address, a `doors:` entry for a pod receiver."""
    egress: dict[str, list[Seen]] = {}
    doors: dict[tuple[str, str, tuple[tuple[str, str], ...]], list[Seen]] = {}
    skipped: list[str] = []
    for s in denied_observed(r):
        m = s.src.member
        wl = inv.workload_at(r.cluster, *_job_parts(m.job)) if m is not None else None
        if wl is None:
            skipped.append("# " + one_line(f"{s.src.shown} -> {s.dst.shown} {s.port}/{s.protocol}: "
                                           "the sender is no inventory workload"))
            continue
        peer = s.dst.peer
        if isinstance(peer, External) and peer.cidr:
            egress.setdefault(wl.name, []).append(s)
        elif isinstance(peer, PodClass) and peer.labels:
            doors.setdefault((wl.name, peer.namespace, peer.labels), []).append(s)
        else:
            skipped.append("# " + one_line(f"{s.src.shown} -> {s.dst.shown} {s.port}/{s.protocol}: "
                                           "no inventory entry names it"))
    out: list[str] = []
    for name, rows in sorted(egress.items()):
        out += ["# " + one_line(f"workloads[name={name}]:"), "egress:"]
        for s in rows:
            assert isinstance(s.dst.peer, External)
            # a name the DNS proxy answered: its addresses rotate, so the name, never a /32
            what = (f"- fqdns: [{_q(s.dst.peer.fqdn)}]" if s.dst.peer.fqdn
                    else f"- cidrs: [{_q(s.dst.peer.cidr or '')}]")
            out += [what, f"  ports: [{{port: {s.port}, protocol: {s.protocol}}}]"]
    if doors:
        out.append("doors:")
    for i, ((name, ns, labels), rows) in enumerate(sorted(doors.items())):
        ls = ", ".join(f"{_q(k)}: {_q(v)}" for k, v in labels)
        ports = ", ".join(f"{{port: {p}, protocol: {pr}}}" for pr, p in sorted({(s.protocol, s.port) for s in rows}))
        out += [f"- name: replay-{name}-{i + 1}", f"  cluster: {_q(r.cluster)}", f"  from: {{workloads: [{_q(name)}]}}",
                f"  to: {{namespace: {_q(ns)}, labels: {{{ls}}}}}", f"  ports: [{ports}]"]
    return "\n".join(out + skipped) + ("\n" if out or skipped else "")


def _job_parts(job: str) -> tuple[str, str, str]:
    kind, ns, name = job.split("/", 2)
    return ns, name, kind


__all__ = ["DECIDED", "as_json", "suggest"]
