"""The mermaid picture: zones as subgraphs, a group drawn once per zone it can land in,
blocked flows red and dashed, labels escaped, ids deterministic.

Whether mermaid parses every picture is tests/report/test_render.py's (the real renderer); these tests
pin the structure: which nodes and edges, which ids, which words.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

from render_support import HOSTILE, MULTI, explained
from report_support import BROKEN, CLEAN

from topogate.inventory.loader import load_inventory
from topogate.inventory.model import Inventory
from topogate.report.mermaid import BLOCKED_STYLE, OPENING_STYLE, escape_label, job_diagram
from topogate.report.openings import DOOR, EGRESS, SCRAPE, Opening, job_openings, workload_openings

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
    # NCCL among the workers' own pods is said in their node, not on a self-loop (whose label
    # mermaid places on whatever edge runs past)
    assert '    z0_g1["Worker ×4, 8 GPU each#59; among its pods: nccl TCP/*"]' in src
    assert not [e for e in edges(src) if e[0] == e[3]]
    assert "z1_g1" not in src  # Worker only in us-east-1a


def test_network_zones_are_drawn_around_their_zones() -> None:
    src = job_diagram(BROKEN, (), {"us-east-1a": "fabric", "us-east-1b": "fabric"})
    lines = src.splitlines()
    assert lines[1] == '  subgraph n0["network zone fabric"]'
    assert lines[2] == '    subgraph z0["us-east-1a"]' and '    subgraph z1["us-east-1b"]' in lines
    split = job_diagram(BROKEN, (), {"us-east-1a": "a", "us-east-1b": "b"})
    assert '  subgraph n0["network zone a"]' in split and '  subgraph n1["network zone b"]' in split


def test_blocked_edges_are_red_dashed_and_indexed_right() -> None:
    src = job_diagram(BROKEN)
    es = edges(src)
    (style,) = [line for line in src.splitlines() if line.strip().startswith("linkStyle")]
    idx = [int(i) for i in style.split()[1].split(",")]
    assert "stroke:red" in style
    assert idx == [i for i, e in enumerate(es) if e[1] == "-.->"]
    blocked = [e for e in es if e[1] == "-.->"]
    # the edge names the policy that blocks it
    assert blocked == [("z0_g1", "-.->", "blocked by CiliumNetworkPolicy/ml-team/intra-zone: nccl TCP/*, "
                        "rendezvous TCP/23456", "z1_g0")]
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


# ---------------------------------------------------------------------------------------------
# What the inventory opens for a job: doors, metrics scrapers, FQDN/CIDR egress
# ---------------------------------------------------------------------------------------------

ANY_EDGE = re.compile(r"^  (\S+) (-->|-\.->)(?:\|\"([^\"]*)\"\|)? (\S+)$")


def all_edges(src: str) -> list[tuple[str, str, str, str]]:
    return [(m[1], m[2], m[3] or "", m[4]) for line in src.splitlines() if (m := ANY_EDGE.match(line))]


def multi() -> Inventory:
    return load_inventory(str(MULTI))


def test_openings_are_the_inventory_facts_of_each_job() -> None:
    inv = multi()
    got = {w.name: workload_openings(inv, w) for w in inv.workloads}
    assert got["llama-ft"] == (
        Opening(DOOR, False, "pods app=s3-gateway in namespace storage", "TCP/9000", "datasets"),
        Opening(SCRAPE, True, "pods of namespace monitoring", "TCP/9090"),
        Opening(EGRESS, False, "s3.us-east-1.amazonaws.com, huggingface.co, *.huggingface.co", "TCP/443"))
    # a door from a whole network zone lets every job of that zone out
    assert got["resnet"] == (Opening(DOOR, False, "network zone ops", "TCP/8443", "checkpoints"),
                             Opening(SCRAPE, True, "pods of namespace observability", "TCP/8000"))
    assert got["gpt-sft"] == (Opening(EGRESS, False, "10.20.0.0/16", "TCP/2049"),)
    assert got["bert-mpi"] == ()


def test_a_door_into_the_jobs_network_zone_is_drawn_inbound() -> None:
    inv = multi()
    resnet = next(w for w in inv.workloads if w.name == "resnet")
    ops = replace(resnet, name="ops-job", network_zone="ops", metrics=None)
    inv = replace(inv, workloads=(*inv.workloads, ops))
    (door,) = workload_openings(inv, ops)
    assert door == Opening(DOOR, True, "network zone train-a", "TCP/8443", "checkpoints")
    job = replace(CLEAN, cluster=ops.cluster, namespace=ops.namespace, name=ops.name, kind=ops.kind)
    src = job_diagram(job, job_openings(inv, job))
    assert '  o0(["network zone train-a"])' in src
    assert ("o0", "-->", "door checkpoints TCP/8443", "z0_g0") in all_edges(src)


def test_opening_edges_meet_every_drawn_group_and_point_the_way_connections_open() -> None:
    inv = multi()
    openings = job_openings(inv, BROKEN)  # PyTorchJob/ml-team/llama-ft of cluster gpu-east
    assert [o.kind for o in openings] == [DOOR, SCRAPE, EGRESS]
    src = job_diagram(BROKEN, openings)
    es = all_edges(src)
    groups = ["z0_g0", "z0_g1", "z1_g0"]  # Master in both zones, Worker in us-east-1a
    assert [(s, d) for s, _, _, d in es if d == "o0"] == [(g, "o0") for g in groups]
    assert [(s, d) for s, _, _, d in es if s == "o1"] == [("o1", g) for g in groups]
    assert [(s, d) for s, _, _, d in es if d == "o2"] == [(g, "o2") for g in groups]
    # each opening's words once, on its first edge
    assert [label for s, _, label, d in es if "o" in (s[0], d[0]) and label] == [
        "door datasets TCP/9000", "scrape TCP/9090", "egress TCP/443"]
    assert '  o2[/"s3.us-east-1.amazonaws.com, huggingface.co, *.huggingface.co"/]' in src
    # linkStyle indices still name exactly the blocked edges, and the openings' own colour the rest
    styles = {ln.split()[-1]: [int(i) for i in ln.split()[1].split(",")]
              for ln in src.splitlines() if ln.startswith("  linkStyle")}
    assert styles[BLOCKED_STYLE.split()[-1]] == [i for i, e in enumerate(es) if e[1] == "-.->"]
    assert styles[OPENING_STYLE] == [i for i, e in enumerate(es) if "o" in (e[0][0], e[3][0])]


def test_no_inventory_or_no_such_workload_draws_the_flows_alone() -> None:
    assert job_openings(None, BROKEN) == ()
    assert job_openings(multi(), replace(BROKEN, name="not-in-the-inventory")) == ()
    assert job_diagram(BROKEN, ()) == job_diagram(BROKEN)
    assert "o0" not in job_diagram(BROKEN)


def _edited_multi(tmp: Path, old: str, new: str) -> Path:
    repo = tmp / "multi"
    if not repo.exists():
        shutil.copytree(MULTI.parent, repo)
    inv = repo / "inventory.yaml"
    text = inv.read_text()
    assert text.count(old) == 1, old
    inv.write_text(text.replace(old, new))
    return inv


def test_widening_a_door_changes_the_picture(tmp_path: Path) -> None:
    before = explained(MULTI, "llama-ft")
    after = explained(_edited_multi(tmp_path, "ports: [{port: 9000}]", "ports: [{port: 9000, endPort: 9100}]"),
                      "llama-ft")
    assert '|"door datasets TCP/9000"|' in before
    assert '|"door datasets TCP/9000-9100"|' in after
    assert [ln for ln in after.splitlines() if ln not in before.splitlines()] == [
        '  z0_g0 -->|"door datasets TCP/9000-9100"| o0']


def test_moving_a_scraper_and_adding_a_cidr_change_the_picture(tmp_path: Path) -> None:
    before = explained(MULTI, "gpt-sft")
    inv = _edited_multi(tmp_path, "cidrs: [10.20.0.0/16]", "cidrs: [10.20.0.0/16, 192.168.7.0/24]")
    after = explained(_edited_multi(tmp_path, "metrics: {port: 8000, namespace: observability}",
                                    "metrics: {port: 8001, namespace: observability}"), "resnet")
    assert '  o0[/"10.20.0.0/16, 192.168.7.0/24"/]' in explained(inv, "gpt-sft")
    assert '  o0[/"10.20.0.0/16"/]' in before
    assert '|"scrape TCP/8001"|' in after and "TCP/8000" not in after


def test_hostile_names_cannot_break_out_of_a_label() -> None:
    for h in HOSTILE:
        text = escape_label(h)
        bare = re.sub(r"#(\d+|quot|lt|gt);", "", text)  # the escapes' own entities taken out
        # nothing left that ends a quoted label, an edge label, a statement or a fence, starts
        # markup, an entity or a directive; no newline, no invisible character
        assert not set(bare) & set('"<>|`[]{}#;%&'), (h, text)
        assert text.isprintable(), (h, text)
