"""A diff as text, JSON (stable fields, camelCase like the check report), markdown (a table
per job and pair of network zones, and a mermaid picture of the change) and SARIF (a note on
each changed rule, at its line).

Rows come grouped: per cluster, per job (the sender's, else the receiver's; rows of no job
last), per (sender's network zone, receiver's network zone).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterable, Iterator
from typing import Any

from topogate.core.words import plural
from topogate.diff.compare import Decision, DiffResult, Row, place_parts
from topogate.diff.members import ANY_ZONE, OUTSIDE, Member
from topogate.report.formats import Formats
from topogate.report.markdown import cell
from topogate.report.mermaid import escape_label
from topogate.report.sarif import artifact_location, driver_dict, sarif_log, sarif_text

MAX_MARKDOWN_ROWS = 200  # GitHub's comment limit (65,536 characters) with room to spare
MAX_PICTURE_EDGES = 40
_BOUNDARY = {"crossed": "crosses a network-zone boundary", "maybe": "may cross a network-zone boundary"}


def _zone(nz: str) -> str:
    return "outside" if nz == OUTSIDE else "any zone" if nz == ANY_ZONE else nz


def summary(d: DiffResult) -> str:
    opened = sum(1 for r in d.rows if r.change == "opened")
    closed = len(d.rows) - opened
    if not d.rows:
        return (f"no connectivity change since {d.base_label} "
                f"({plural(d.members, 'endpoint')} in {plural(len(d.clusters), 'cluster')} compared)")
    across = len(d.opened_boundary)
    tail = f"; {across} opened across a network-zone boundary" if across else ""
    return (f"{plural(len(d.rows), 'connectivity change')} since {d.base_label}: {opened} opened, "
            f"{closed} closed{tail}")


def _groups(d: DiffResult) -> Iterator[tuple[tuple[str, str, str, str], list[Row]]]:
    for k, rows in itertools.groupby(d.rows, key=lambda r: (r.cluster, r.job, r.src.nz, r.dst.nz)):
        yield k, list(rows)


def collapsed(rows: Iterable[Row]) -> list[tuple[Row, str]]:
    """Rows that differ only in protocol (same pair, range and deciding rules) shown as one
    line: `1-65535/TCP,UDP,SCTP`. JSON keeps one row per protocol."""
    out: list[tuple[Row, list[str]]] = []
    for r in rows:
        last = out[-1][0] if out else None
        if (last is not None and (last.src, last.dst, last.start, last.end, last.base, last.head)
                == (r.src, r.dst, r.start, r.end, r.base, r.head)):
            out[-1][1].append(r.protocol)
        else:
            out.append((r, [r.protocol]))
    return [(r, r.ports.rsplit("/", 1)[0] + "/" + ",".join(protos)) for r, protos in out]


def _decision_text(dec: Decision) -> str:
    return dec.words + (f" ({dec.where})" if dec.where else "")


def render_text(d: DiffResult) -> str:
    out = [f"topogate diff: {summary(d)}"]
    for (cluster, job, a, b), rows in _groups(d):
        out += ["", f"cluster {cluster}, {('job ' + job) if job else 'no managed job'}: {_zone(a)} -> {_zone(b)}"]
        for r, ports in collapsed(rows):
            mark = f"  [{_BOUNDARY[r.boundary]}]" if r.boundary else ""
            out.append(f"  {r.change.upper():<6}  {r.src.shown} -> {r.dst.shown}  {ports}{mark}")
            out.append(f"          base: {_decision_text(r.base)}")
            out.append(f"          head: {_decision_text(r.head)}")
    out += [f"note: {n}" for n in d.notes]
    return "\n".join(out) + "\n"


def _member_json(m: Member) -> dict[str, Any]:
    return {"name": m.shown, "spec": m.spec, "networkZone": m.nz, "job": m.job or None}


def _decision_json(dec: Decision) -> dict[str, Any]:
    place = place_parts(dec.where)
    file, line, column = place if place is not None else (None, None, None)
    return {"allowed": dec.allowed, "decision": dec.words, "rule": dec.rule or None, "side": dec.side or None,
            "file": file, "line": line, "column": column}


def as_json(d: DiffResult) -> dict[str, Any]:
    opened = sum(1 for r in d.rows if r.change == "opened")
    return {
        "base": d.base_label,
        "clusters": list(d.clusters),
        "endpoints": d.members,
        "summary": {"rows": len(d.rows), "opened": opened, "closed": len(d.rows) - opened,
                    "openedAcrossBoundary": len(d.opened_boundary)},
        "rows": [{"cluster": r.cluster, "job": r.job or None, "from": _member_json(r.src),
                  "to": _member_json(r.dst), "protocol": r.protocol, "start": r.start, "end": r.end,
                  "change": r.change, "boundary": r.boundary or None,
                  "base": _decision_json(r.base), "head": _decision_json(r.head)} for r in d.rows],
        "notes": list(d.notes),
    }


def _node_ids(rows: Iterable[Row]) -> dict[str, tuple[str, Member]]:
    ids: dict[str, tuple[str, Member]] = {}
    for r in rows:
        for m in (r.src, r.dst):
            if m.key not in ids:
                ids[m.key] = (f"n{len(ids)}", m)
    return ids


def picture(d: DiffResult) -> list[str]:
    """A mermaid flowchart of the change: network zones are subgraphs, endpoints nodes; one
    edge per pair and rule that changed a verdict (the head's that opens, the base's whose
    allow is gone), labelled with that rule: an opened range a solid edge, a closed one a red
    dashed edge."""
    edges: dict[tuple[str, str, str, str], list[str]] = {}
    for r, ports in collapsed(d.rows):
        rule = r.head.rule if r.change == "opened" else r.base.rule
        edges.setdefault((r.src.key, r.dst.key, r.change, rule), []).append(ports)
    shown = list(edges)[:MAX_PICTURE_EDGES]
    pairs = {(s, t, c) for s, t, c, _ in shown}
    ids = _node_ids(r for r in d.rows if (r.src.key, r.dst.key, r.change) in pairs)
    out = ["```mermaid", "flowchart LR"]
    by_zone: dict[str, list[tuple[str, Member]]] = {}
    for nid, m in ids.values():
        by_zone.setdefault(m.nz, []).append((nid, m))
    for i, nz in enumerate(sorted(by_zone)):
        out.append(f'  subgraph z{i}["{escape_label(_zone(nz))}"]')
        out += [f'    {nid}["{escape_label(m.shown)}"]' for nid, m in by_zone[nz]]
        out.append("  end")
    closed: list[int] = []
    for n, (s, t, change, rule) in enumerate(shown):
        spans = edges[(s, t, change, rule)]
        by = f" by {rule}" if rule else ""
        label = escape_label(f"{change}{by} {' '.join(spans[:4])}" + (" ..." if len(spans) > 4 else ""))
        arrow = "-->" if change == "opened" else "-.->"
        out.append(f'  {ids[s][0]} {arrow}|"{label}"| {ids[t][0]}')
        if change == "closed":
            closed.append(n)
    if closed:
        out.append(f"  linkStyle {','.join(map(str, closed))} stroke:red,stroke-dasharray:5 5")
    return [*out, "```"]


def render_markdown(d: DiffResult, level: int = 2, title: str = "topogate diff") -> str:
    """The markdown report; `level` is its heading's (check --changed-since puts it under its
    own report, one level down)."""
    h = "#" * level
    out = [f"{h} {title}", "", cell(summary(d))]
    lines = collapsed(d.rows)
    shown = 0
    for (cluster, job, a, b), rows in _groups(d):
        if shown >= MAX_MARKDOWN_ROWS:
            break
        what = f"job `{cell(job)}`" if job else "no managed job"
        out += ["", f"{h}# {cell(cluster)}: {what}, {cell(_zone(a))} → {cell(_zone(b))}", "",
                "| change | from | to | ports | base | head | boundary |", "|---|---|---|---|---|---|---|"]
        for r, ports in collapsed(rows)[:MAX_MARKDOWN_ROWS - shown]:
            out.append(f"| {r.change} | {cell(r.src.shown)} | {cell(r.dst.shown)} | {ports} | "
                       f"{cell(_decision_text(r.base))} | {cell(_decision_text(r.head))} | "
                       f"{cell(_BOUNDARY.get(r.boundary, ''))} |")
            shown += 1
    if len(lines) > shown:
        out += ["", f"... and {len(lines) - shown} more rows (`topogate diff --format json` lists them all)"]
    if d.rows:
        out += ["", *picture(d)]
    out += [f"\n> note: {cell(n)}" for n in d.notes]
    return "\n".join(out) + "\n"


def _location(where: str) -> list[dict[str, Any]]:
    place = place_parts(where)
    if place is None:
        return []
    file, line, column = place
    return [{"physicalLocation": {"artifactLocation": artifact_location(file),
                                  "region": {"startLine": line, "startColumn": column}}}]


def sarif_dict(d: DiffResult) -> dict[str, Any]:
    """One note per deciding rule of the head tree (where the pull request can be read), listing
    the rows it decides; a row the head decides by no rule (its policy is gone) is noted at the
    base's rule."""
    notes: dict[tuple[str, str], list[tuple[Row, str]]] = {}
    for r, ports in collapsed(d.rows):
        dec = r.head if r.head.where else r.base
        notes.setdefault((dec.where, dec.words), []).append((r, ports))
    results = []
    for (where, words), rows in notes.items():
        listed = "; ".join(f"{r.change} {r.src.shown} -> {r.dst.shown} {ports}" for r, ports in rows[:10])
        more = f"; and {len(rows) - 10} more" if len(rows) > 10 else ""
        results.append({"ruleId": "connectivity-change", "level": "note",
                        "message": {"text": f"{words}: {listed}{more}"}, "locations": _location(where)})
    driver = driver_dict([{
        "id": "connectivity-change", "name": "connectivity-change",
        "shortDescription": {"text": "A flow allowed or denied differently than at the base"},
        "defaultConfiguration": {"level": "note"}}])
    return sarif_log(driver, results)


# diff's table in the report registry; a format it does not know (`-o report.xml`) is text.
REPORT: Formats[DiffResult] = Formats({
    "text": render_text,
    "json": lambda d: json.dumps(as_json(d), indent=2, sort_keys=True) + "\n",
    "markdown": lambda d: render_markdown(d),
    "sarif": lambda d: sarif_text(sarif_dict(d)),
}, fallback="text")
__all__ = ["REPORT", "as_json", "collapsed", "picture", "render_markdown", "render_text",
           "sarif_dict", "summary"]
