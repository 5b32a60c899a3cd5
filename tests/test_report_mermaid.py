"""The mermaid picture: zones as subgraphs, a group drawn once per zone it can land in,
blocked flows red and dashed, labels escaped, ids deterministic.

Syntax was also checked by hand with mermaid's own parser (mermaid.parse, which rejects an
out-of-range linkStyle); these tests pin the structure that check relied on.
"""

from __future__ import annotations

import re
from dataclasses import replace

from report_support import BROKEN, CLEAN

from topogate.report.mermaid import escape_label, job_diagram

EDGE = re.compile(r"^  (\S+) (-->|-\.->)\|\"([^\"]*)\"\| (\S+)$")


def edges(src: str) -> list[tuple[str, str, str, str]]:
    found = []
    for line in src.splitlines():
        if m := EDGE.match(line):
            found.append((m[1], m[2], m[3], m[4]))
    return found


def test_broken_job_picture() -> None:
    src = job_diagram(BROKEN)
    assert src.startswith("flowchart LR\n")
    assert '  subgraph z0["us-east-1a"]' in src and '  subgraph z1["us-east-1b"]' in src
    # Master can land in both zones: one node per zone, distinct ids
    assert '    z0_g0["Master ×1"]' in src and '    z1_g0["Master ×1"]' in src
    assert '    z0_g1["Worker ×4, 8 GPU each"]' in src
    assert "z1_g1" not in src  # Worker only in us-east-1a


def test_blocked_edges_are_red_dashed_and_indexed_right() -> None:
    src = job_diagram(BROKEN)
    es = edges(src)
    (style,) = [line for line in src.splitlines() if line.strip().startswith("linkStyle")]
    idx = [int(i) for i in style.split()[1].split(",")]
    assert "stroke:red" in style
    assert idx == [i for i, e in enumerate(es) if e[1] == "-.->"]
    blocked = [e for e in es if e[1] == "-.->"]
    assert blocked == [("z0_g1", "-.->", "blocked: nccl TCP/*, rendezvous TCP/23456", "z1_g0")]
    assert ("z0_g1", "-->", "rendezvous TCP/23456", "z0_g0") in es


def test_clean_job_has_no_red() -> None:
    src = job_diagram(CLEAN)
    assert "linkStyle" not in src and "-.->" not in src
    assert src.count("subgraph") == 1


def test_deterministic_under_flow_order() -> None:
    assert job_diagram(replace(BROKEN, flows=BROKEN.flows[::-1])) == job_diagram(BROKEN)


def test_escape_label() -> None:
    assert escape_label('a"b|c<d>#e [f]{g} `h`\nnext') == (
        "a#quot;b#124;c#lt;d#gt;#35;e #91;f#93;#123;g#125; #96;h#96; next")


def test_group_name_that_needs_escaping() -> None:
    g = replace(BROKEN.groups[1], name='W"orker|x')
    job = replace(BROKEN, groups=(BROKEN.groups[0], g), flows=())
    src = job_diagram(job)
    assert '["W#quot;orker#124;x ×4, 8 GPU each"]' in src
    assert all(line.count('"') % 2 == 0 for line in src.splitlines())


def test_unschedulable_group_drawn_outside_zones() -> None:
    g = replace(BROKEN.groups[0], zones=())
    src = job_diagram(replace(BROKEN, groups=(g, BROKEN.groups[1]), flows=()))
    assert '\n  nz_g0["Master ×1 - no feasible node"]' in src


def test_flows_between_the_same_nodes_merge_into_one_label() -> None:
    dns = [f for f in CLEAN.flows if f.purpose == "dns"][0]
    job = replace(CLEAN, flows=(dns, replace(dns, protocol="TCP")))
    (edge,) = edges(job_diagram(job))
    assert edge[2] == "dns TCP/53 UDP/53"
