"""A job's map as a mermaid flowchart: network zones (the boundaries the policies draw) are
subgraphs holding their zones' subgraphs, replica groups are nodes, the required flows are
edges; a blocked flow is a red dashed edge whose label names the policy that blocks it. Flows
among one group's own pods are written in the group's node (a self-loop's label lands on
whatever edge mermaid routes past it). What the inventory opens for the
job (topogate.report.openings: its doors, its metrics scrapers, its FQDN/CIDR egress) is drawn
around it, in a colour of its own: a node per peer (the door's target or sources, the scraping
namespace, the FQDN patterns and CIDRs) and an edge from or to each drawn group, since every pod
of the job has the opening; the first of them says which (door and its name, scrape, egress) and
on which ports. They are what the inventory declares, not a verdict: the picture does not say
whether the manifests' policies let them through (for a door, TG113 door-closed does).

A group that may land in several zones is drawn once per zone (with a distinct id): that
duplication is the picture of "this job can be split". Flows are merged per pair of drawn
nodes and verdict, so a 64-worker job stays a handful of edges.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.result import Flow, JobMap
from topogate.report.base import port_text, zone_choice
from topogate.report.openings import EGRESS, Opening

BLOCKED_STYLE = "stroke:red,stroke-width:2px,stroke-dasharray:5 5"
# Declared openings in a colour of their own: what the inventory allows, beside what the job needs.
OPENING_STYLE = "stroke:steelblue"

# Mermaid reads `#name;` / `#123;` as entity codes inside quoted labels: encode the
# characters that would otherwise end a label (`"`, `|`, brackets), start markup (`<`, `>`,
# `&`, backticks: a markdown string or a closing fence), end a statement (`;`), or start an
# entity or a directive (`#`, `%`). Whitespace runs, newlines included, become one space; any
# other character that does not print (controls, bidi and zero-width format characters) is
# spelled out as U+XXXX: as an entity the browser would decode it again and, say, a
# right-to-left override would reverse the rest of the label in the picture.
_ESCAPES = {
    "#": "#35;", '"': "#quot;", "<": "#lt;", ">": "#gt;", "|": "#124;", "`": "#96;",
    "[": "#91;", "]": "#93;", "{": "#123;", "}": "#125;",
    ";": "#59;", "&": "#38;", "%": "#37;",
}


def _escape_char(c: str) -> str:
    if c in _ESCAPES:
        return _ESCAPES[c]
    return c if c.isprintable() else f"U+{ord(c):04X}"


def escape_label(s: str) -> str:
    return "".join(_escape_char(c) for c in " ".join(s.split()))


@dataclass(frozen=True)
class _Edge:
    src: str
    dst: str
    allowed: bool
    label: str


def _flow_label(flows: list[Flow]) -> str:
    """`dns TCP/53 UDP/53, rendezvous TCP/23456`: one phrase per purpose."""
    ports: dict[str, list[str]] = {}
    for f in sorted(flows, key=lambda f: (f.purpose, f.protocol, f.port)):
        seen = ports.setdefault(f.purpose, [])
        if port_text(f) not in seen:
            seen.append(port_text(f))
    return ", ".join(f"{purpose} {' '.join(p)}" for purpose, p in ports.items())


def _one_zone_picture(job: JobMap) -> JobMap:
    """A colocated job that may pick one of several zones is drawn once, in a box naming the
    choice: drawing it in every zone would be the picture of a split, which it is not."""
    choice = zone_choice(job)
    if not choice:
        return job
    label, first, others = f"one zone of: {', '.join(choice)}", choice[0], set(choice[1:])
    groups = tuple(dataclasses.replace(g, zones=(label,)) for g in job.groups)
    flows = tuple(dataclasses.replace(f, src_zone=label if f.src_zone == first else f.src_zone,
                                      dst_zone=label if f.dst_zone == first else f.dst_zone)
                  for f in job.flows if f.src_zone not in others and f.dst_zone not in others)
    return dataclasses.replace(job, groups=groups, flows=flows)


def _opening_lines(openings: tuple[Opening, ...], groups: list[str]) -> tuple[list[str], list[str]]:
    """(nodes, edges) of the openings: a node per opening (`o<i>`, in the given order), and an
    edge between it and each of the job's drawn group nodes, pointing the way connections are
    opened. Only the first edge of an opening carries its label: the same words on every
    group's edge would bury the picture. (One edge to the zone's subgraph would be fewer, but
    mermaid's layout routes such edges over the box's border, where their labels overlap.)"""
    nodes: list[str] = []
    edges: list[str] = []
    for i, o in enumerate(openings):
        nid, text = f"o{i}", escape_label(o.peer)
        # Outside the cluster (FQDNs, CIDRs) a parallelogram; pods of the cluster a stadium, as kube-dns.
        nodes.append(f'  {nid}[/"{text}"/]' if o.kind == EGRESS else f'  {nid}(["{text}"])')
        for n, g in enumerate(groups):
            src, dst = (nid, g) if o.inbound else (g, nid)
            edges.append(f'  {src} -->|"{escape_label(o.label)}"| {dst}' if n == 0 else f"  {src} --> {dst}")
    return nodes, edges


def _blocked_label(flows: list[Flow]) -> str:
    """`blocked by CiliumNetworkPolicy/ml-demo/zone-a-only: nccl TCP/*`: what blocks, then what."""
    by = sorted({f.decided_by for f in flows if f.decided_by})
    return (f"blocked by {', '.join(by)}: " if by else "blocked: ") + _flow_label(flows)


class _Picture:
    """One job's picture: which zones and nodes are drawn, and the ids and labels they get."""

    def __init__(self, job: JobMap) -> None:
        self.job = job
        self.zones = sorted({z for g in job.groups for z in g.zones} | {
            z for f in job.flows for z in (f.src_zone, f.dst_zone) if z})
        self.zone_id = {z: f"z{i}" for i, z in enumerate(self.zones)}
        self.group_index = {g.name: i for i, g in enumerate(job.groups)}
        externals = sorted({e for f in job.flows for e in (f.src, f.dst) if e not in self.group_index})
        self.ext_index = {e: i for i, e in enumerate(externals)}
        # Flows among a group's own pods (NCCL among the workers): said in the node, per zone.
        self.own: dict[tuple[str, str], list[Flow]] = {}
        for f in job.flows:
            if self.among_own(f):
                self.own.setdefault((f.src, f.src_zone), []).append(f)
        # Which nodes to draw in which zone: groups where they can land, plus every endpoint a
        # flow names (kube-dns in its zone; a group in a zone the analysis reached anyway).
        self.members: dict[str, set[tuple[str, str]]] = {}
        for g in job.groups:
            for z in g.zones or ("",):
                self.members.setdefault(z, set()).add((g.name, z))
        for f in job.flows:
            for endpoint, z in ((f.src, f.src_zone), (f.dst, f.dst_zone)):
                drawn_in = z if z in self.zone_id else ""
                self.members.setdefault(drawn_in, set()).add((endpoint, drawn_in))

    def among_own(self, f: Flow) -> bool:
        return f.src == f.dst and f.src_zone == f.dst_zone and f.src in self.group_index

    def node_id(self, endpoint: str, zone: str) -> str:
        where = self.zone_id.get(zone, "nz")
        if endpoint in self.group_index:
            return f"{where}_g{self.group_index[endpoint]}"
        return f"{where}_x{self.ext_index[endpoint]}"

    def group_label(self, i: int, zone: str) -> str:
        g = self.job.groups[i]
        gpus = f", {g.gpus_per_pod} GPU each" if g.gpus_per_pod else ""
        nowhere = " - no feasible node" if not g.zones else ""
        among = self.own.get((g.name, zone), [])
        ok, no = [f for f in among if f.allowed], [f for f in among if not f.allowed]
        said = (f"; among its pods: {_flow_label(ok)}" if ok else "") + (
            f"; among its pods {_blocked_label(no)}" if no else "")
        return escape_label(f"{g.name} ×{g.pods}{gpus}{nowhere}{said}")

    def node_line(self, endpoint: str, zone: str) -> str:
        nid = self.node_id(endpoint, zone)
        if endpoint in self.group_index:
            return f'{nid}["{self.group_label(self.group_index[endpoint], zone)}"]'
        return f'{nid}(["{escape_label(endpoint)}"])'

    def drawn_in(self, zone: str) -> list[tuple[str, str]]:
        """The nodes of a zone ("": outside every zone), groups first, in a fixed order."""
        def order(m: tuple[str, str]) -> tuple[int, int]:
            return (0, self.group_index[m[0]]) if m[0] in self.group_index else (1, self.ext_index[m[0]])
        return sorted(self.members.get(zone, ()), key=order)

    def zone_lines(self, nz_of: Mapping[str, str]) -> list[str]:
        """The nodes in their zone boxes, the zones inside their network-zone boxes."""
        lines: list[str] = []
        for k, nz in enumerate(sorted({nz_of[z] for z in self.zones if nz_of.get(z)})):
            lines.append(f'  subgraph n{k}["{escape_label(f"network zone {nz}")}"]')
            for z in (z for z in self.zones if nz_of.get(z) == nz):
                lines.append(f'    subgraph {self.zone_id[z]}["{escape_label(z)}"]')
                lines += [f"      {self.node_line(*m)}" for m in self.drawn_in(z)]
                lines.append("    end")
            lines.append("  end")
        for z in (z for z in self.zones if not nz_of.get(z)):
            lines.append(f'  subgraph {self.zone_id[z]}["{escape_label(z)}"]')
            lines += [f"    {self.node_line(*m)}" for m in self.drawn_in(z)]
            lines.append("  end")
        lines += [f"  {self.node_line(*m)}" for m in self.drawn_in("")]
        return lines

    def group_nodes(self) -> list[str]:
        """The ids of every group node drawn, zone by zone."""
        return [self.node_id(*m) for z in (*self.zones, "") for m in self.drawn_in(z) if m[0] in self.group_index]

    def edges(self) -> list[_Edge]:
        """One edge per pair of nodes and verdict; blocked after allowed between the same nodes,
        so the red one is drawn on top."""
        grouped: dict[tuple[str, str, bool], list[Flow]] = {}
        for f in self.job.flows:
            if self.among_own(f):
                continue  # said in the group's node
            src = self.node_id(f.src, f.src_zone if f.src_zone in self.zone_id else "")
            dst = self.node_id(f.dst, f.dst_zone if f.dst_zone in self.zone_id else "")
            grouped.setdefault((src, dst, f.allowed), []).append(f)
        return [_Edge(s, d, a, _flow_label(fl) if a else _blocked_label(fl)) for (s, d, a), fl in
                sorted(grouped.items(), key=lambda kv: (kv[0][0], kv[0][1], not kv[0][2]))]


def _network_zones_of(job: JobMap, network_zones: Mapping[str, str] | None) -> dict[str, str]:
    """zone -> network zone, with the box of a following job's zone choice (one zone of A, B)
    inside the network zone all its zones share."""
    nz_of = dict(network_zones or {})
    choice = zone_choice(job)
    if choice and len({nz_of.get(z) for z in choice}) == 1 and nz_of.get(choice[0]):
        nz_of[f"one zone of: {', '.join(choice)}"] = nz_of[choice[0]]
    return nz_of


def job_diagram(job: JobMap, openings: tuple[Opening, ...] = (),
                network_zones: Mapping[str, str] | None = None) -> str:
    """Mermaid source (no code fence) for one job, with what the inventory opens for it
    (topogate.report.openings.job_openings) and, given `network_zones` (zone -> its network
    zone), the network-zone boundaries around the zones; the same job always gives the same
    text."""
    nz_of = _network_zones_of(job, network_zones)
    pic = _Picture(_one_zone_picture(job))
    lines = ["flowchart LR", *pic.zone_lines(nz_of)]
    opening_nodes, opening_edges = _opening_lines(openings, pic.group_nodes())
    lines += opening_nodes
    edges = pic.edges()
    blocked: list[str] = []
    for n, e in enumerate(edges):
        arrow = "-->" if e.allowed else "-.->"
        lines.append(f'  {e.src} {arrow}|"{escape_label(e.label)}"| {e.dst}')
        if not e.allowed:
            blocked.append(str(n))
    # After the flows, so the blocked edges' linkStyle indices count only the edges above.
    lines += opening_edges
    if blocked:
        lines.append(f"  linkStyle {','.join(blocked)} {BLOCKED_STYLE}")
    if opening_edges:
        declared = range(len(edges), len(edges) + len(opening_edges))
        lines.append(f"  linkStyle {','.join(map(str, declared))} {OPENING_STYLE}")
    return "\n".join(lines) + "\n"

__all__ = ["BLOCKED_STYLE", "OPENING_STYLE", "escape_label", "job_diagram"]
