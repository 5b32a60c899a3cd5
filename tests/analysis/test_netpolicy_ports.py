"""The ports of one rule: evaluation grows near-linearly with them, and the indexed lookup gives
exactly the verdicts of a scan over every port spec.

Issue 10: a CiliumNetworkPolicy whose one rule listed 2,000 ports took 27-45 s to check (60,000
ports: over 400 s), because every port class asked every rule about one port and each rule
scanned all its specs. Growth is asserted by counting work (Python calls and returns, through
`sys.setprofile`), not by timing, so a loaded machine cannot make these tests flaky.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hostile_support import invoke, make_repo
from hypothesis import given, settings
from hypothesis import strategies as st
from test_netpolicy import CASES, Case, load, pod, pset, summary

from topogate.analysis.netpolicy import PodClass, PolicySet, SourceRef
from topogate.analysis.netpolicy.ports import PolicyPort, PortSet
from topogate.analysis.netpolicy.rules import FirstMatch

T = TypeVar("T")


def counted(fn: Callable[[], T]) -> tuple[T, int]:
    """(fn(), how many Python-level function calls it made, generator resumptions included)."""
    n = 0

    def hook(frame: Any, event: str, arg: Any) -> None:
        nonlocal n
        if event in ("call", "c_call"):
            n += 1

    sys.setprofile(hook)
    try:
        got = fn()
    finally:
        sys.setprofile(None)
    return got, n


def ports_yaml(n: int, *, ranges: bool = False, quote: bool = True, indent: int = 6) -> list[str]:
    """`n` distinct ports 1000, 1002, ... (or ranges 1000-1001, 1003-1004, ... with endPort)
    with a gap between each two, so each one is a port class of its own: one YAML line each."""
    pad = " " * indent
    q = '"' if quote else ""
    if ranges:
        return [f"{pad}- {{port: {q}{1000 + 3 * i}{q}, endPort: {1001 + 3 * i}, protocol: TCP}}\n" for i in range(n)]
    return [f"{pad}- {{port: {q}{1000 + 2 * i}{q}, protocol: TCP}}\n" for i in range(n)]


def to_ports(lines: list[str], per_entry: int) -> str:
    """A rule's `toPorts`, `per_entry` ports in each entry (the CRD allows 40; topogate reads
    more, as hostile input may have)."""
    return "    toPorts:\n" + "".join("    - ports:\n" + "".join(lines[i:i + per_entry])
                                   for i in range(0, len(lines), per_entry))


def many_ports(kind: str, n: int, namespace: str = "x", per_entry: int = 40) -> str:
    """A policy whose single rule lists `n` ports: ingress (and egress for CNP) between every pod
    of `namespace`; "cnp-deny" allows everything and denies the `n` ports instead; "cnp-rules"
    lists the same ports in `n` ingress rules of one port each."""
    if kind == "np":
        return (f"apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\n"
                f"metadata: {{name: many, namespace: {namespace}}}\nspec:\n  podSelector: {{}}\n"
                f"  policyTypes: [Ingress]\n  ingress:\n  - from: [{{podSelector: {{}}}}]\n    ports:\n"
                + "".join(ports_yaml(n, quote=False, indent=4)))
    ports = to_ports(ports_yaml(n, ranges=kind == "cnp-range"), per_entry)
    head = (f"apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\n"
            f"metadata: {{name: many, namespace: {namespace}}}\nspec:\n  endpointSelector: {{}}\n")
    if kind == "cnp-rules":  # the same ports, one rule each
        rules = "".join("  - fromEndpoints: [{}]\n    toPorts:\n    - ports:\n" + line
                        for line in ports_yaml(n))
        return head + "  ingress:\n" + rules
    if kind == "cnp-deny":
        return head + "  ingress:\n  - fromEndpoints: [{}]\n  ingressDeny:\n  - fromEndpoints: [{}]\n" + ports
    return head + "  ingress:\n  - fromEndpoints: [{}]\n" + ports + "  egress:\n  - toEndpoints: [{}]\n" + ports


def pset_of(text: str) -> PolicySet:
    return PolicySet.from_objects((d, SourceRef("case.yaml", i + 1, 1)) for i, d in enumerate(load(text)))


def classes(ps: PolicySet, src: PodClass, dst: PodClass,
            protocols: tuple[str, ...] = ("TCP", "UDP")) -> list[tuple[str, bool]]:
    return [(str(r), r.verdict.allowed) for r in ps.port_classes(src, dst, protocols)]


XA, XB = pod("x", "a"), pod("x", "b")

# ---------------------------------------------------------------------------------------------
# growth
# ---------------------------------------------------------------------------------------------

KINDS = ["cnp", "cnp-range", "cnp-deny", "np", "cnp-rules"]


@pytest.mark.parametrize("kind", KINDS)
def test_port_classes_grow_linearly_with_the_ports_of_one_rule(kind: str) -> None:
    """... or of one policy, rule after rule ("cnp-rules")."""
    def run(n: int) -> tuple[list[tuple[str, bool]], int]:
        ps = pset_of(many_ports(kind, n))
        return counted(lambda: classes(ps, XA, XB))

    run(10)  # warm-up: first-use imports and caches are not the ports' cost
    (small, work_n), (big, work_4n) = run(150), run(600)
    # one class per listed port (or range) and one per gap, plus UDP's single class
    assert (len(small), len(big)) == (2 * 150 + 2, 2 * 600 + 2)
    allowed = kind != "cnp-deny"
    assert small[1] == (("1000-1001/TCP" if kind == "cnp-range" else "1000/TCP"), allowed)
    # 4x the ports: about 4x the work (the quadratic evaluator did 13-16x)
    assert work_4n / work_n < 6, (work_n, work_4n)


def _lab_with(tmp: Path, n: int) -> tuple[list[str], list[str]]:
    """The lab repository plus a CNP listing `n` ports in one ingress and one egress rule."""
    repo = make_repo(tmp / str(n))
    m = repo / "manifests"
    m.mkdir()
    job = (repo / "bases" / "train" / "pytorchjob.yaml").read_text()
    (m / "pytorchjob.yaml").write_text(job.replace("  name: train\n", "  name: train\n  namespace: ml-demo\n", 1))
    # many ports in one rule, 40 to a toPorts entry: the agent refuses an entry of more ("too many
    # ports, the max is 40"), and a policy it refuses enforces nothing
    (m / "policy.yaml").write_text(many_ports("cnp", n, "ml-demo", per_entry=40))
    check = ["check", str(repo / "inventory.yaml"), str(m), "--format", "json"]
    trace = ["trace", str(m), "--from", "ml-demo/PyTorchJob/train/Worker", "--to", "ml-demo/PyTorchJob/train/Master"]
    return check, trace


def test_check_and_trace_grow_linearly_with_the_ports_of_one_rule(tmp_path: Path) -> None:
    runs = {n: _lab_with(tmp_path, n) for n in (10, 100, 400)}
    for args in runs[10]:
        assert invoke(*args)[0] == 1  # warm-up (imports); the policy denies DNS, so findings
    for args_n, args_4n in zip(runs[100], runs[400], strict=True):  # check, then trace
        (code_n, out_n, _), work_n = counted(partial(invoke, *args_n))
        (code_4n, out_4n, _), work_4n = counted(partial(invoke, *args_4n))
        assert code_n == code_4n == 1
        if args_n[0] == "trace":  # one class per port and per gap
            assert out_n.count("/TCP: allowed") == 100 and out_4n.count("/TCP: allowed") == 400
        assert work_4n / work_n < 6, (args_n[0], work_n, work_4n)


# ---------------------------------------------------------------------------------------------
# exact verdicts where ports overlap, touch, repeat or name each other
# ---------------------------------------------------------------------------------------------


def cnp_b_ingress(ports: str, deny: str | None = None) -> str:
    """b admits a on `ports` (a flow-style list); `deny` adds an ingressDeny on those ports."""
    text = ("apiVersion: cilium.io/v2\nkind: CiliumNetworkPolicy\nmetadata: {name: b, namespace: x}\n"
            "spec:\n  endpointSelector: {matchLabels: {pod: b}}\n"
            f"  ingress:\n  - fromEndpoints: [{{matchLabels: {{pod: a}}}}]\n    toPorts: [{{ports: {ports}}}]\n")
    if deny is not None:
        text += f"  ingressDeny:\n  - fromEndpoints: [{{}}]\n    toPorts: [{{ports: {deny}}}]\n"
    return text


@pytest.mark.parametrize(("ports", "deny", "want"), [
    pytest.param('[{port: "1000", endPort: 1009, protocol: TCP}, {port: "1010", endPort: 1019, protocol: TCP}]',
                 None, [("1-999/TCP", False), ("1000-1019/TCP", True), ("1020-65535/TCP", False)],
                 id="adjacent-ranges-are-one-class"),
    pytest.param('[{port: "1000", endPort: 1100, protocol: TCP}, {port: "1050", endPort: 1060, protocol: TCP},'
                 ' {port: "1090", endPort: 1200, protocol: TCP}, {port: "1201", protocol: TCP}]',
                 None, [("1-999/TCP", False), ("1000-1201/TCP", True), ("1202-65535/TCP", False)],
                 id="overlapping-and-nested-ranges"),
    pytest.param('[{port: "80", protocol: TCP}, {port: "80", protocol: TCP}, {port: "80", endPort: 80, protocol: TCP}]',
                 None, [("1-79/TCP", False), ("80/TCP", True), ("81-65535/TCP", False)],
                 id="duplicates"),
    pytest.param('[{port: "2000", endPort: 1000, protocol: TCP}]',
                 None, [("1-1999/TCP", False), ("2000/TCP", True), ("2001-65535/TCP", False)],
                 id="endport-below-port-is-ignored"),
    pytest.param('[{port: "1", endPort: 3, protocol: TCP}, {port: "65534", endPort: 65535, protocol: TCP}]',
                 None, [("1-3/TCP", True), ("4-65533/TCP", False), ("65534-65535/TCP", True)],
                 id="ranges-at-both-ends"),
    pytest.param('[{port: "0", protocol: TCP}, {port: "80", protocol: TCP}]',
                 None, [("1-65535/TCP", True)],
                 id="port-0-is-every-port"),
    pytest.param('[{port: "1000", endPort: 2000, protocol: TCP}]', '[{port: "1500", endPort: 1600, protocol: TCP}]',
                 [("1-999/TCP", False), ("1000-1499/TCP", True), ("1500-1600/TCP", False),
                  ("1601-2000/TCP", True), ("2001-65535/TCP", False)],
                 id="deny-range-inside-allow-range"),
    pytest.param('[{port: "1000", endPort: 2000, protocol: TCP}]', '[{port: "0", protocol: UDP}]',
                 [("1-999/TCP", False), ("1000-2000/TCP", True), ("2001-65535/TCP", False)],
                 id="deny-every-udp-port-leaves-tcp"),
])
def test_tcp_classes(ports: str, deny: str | None, want: list[tuple[str, bool]]) -> None:
    assert classes(pset_of(cnp_b_ingress(ports, deny)), XA, XB, ("TCP",)) == want


def test_one_port_in_tcp_and_udp_and_any() -> None:
    ps = pset_of(cnp_b_ingress('[{port: "53", protocol: TCP}, {port: "53", protocol: UDP},'
                               ' {port: "54", endPort: 60, protocol: ANY}, {port: "55", protocol: UDP}]'))
    assert classes(ps, XA, XB, ("TCP", "UDP", "SCTP")) == [
        ("1-52/TCP", False), ("53-60/TCP", True), ("61-65535/TCP", False),
        ("1-52/UDP", False), ("53-60/UDP", True), ("61-65535/UDP", False),
        ("1-53/SCTP", False), ("54-60/SCTP", True), ("61-65535/SCTP", False),
    ]


def test_deny_decides_exactly_its_ports_with_many_allow_ports() -> None:
    ps = pset_of(cnp_b_ingress("[" + ", ".join(f'{{port: "{p}", protocol: TCP}}' for p in range(100, 140)) + "]",
                               '[{port: "120", endPort: 125, protocol: TCP}]'))
    got = ps.port_classes(XA, XB, ("TCP",))
    assert [(str(r), r.verdict.allowed) for r in got] == [
        ("1-99/TCP", False), ("100-119/TCP", True), ("120-125/TCP", False), ("126-139/TCP", True),
        ("140-65535/TCP", False)]
    deny = got[2].verdict.ingress.decided_by
    assert deny is not None and (deny.section, deny.index) == ("ingressDeny", 0)
    allow = got[1].verdict.ingress.decided_by
    assert allow is not None and (allow.section, allow.index) == ("ingress", 0)


def test_named_ports_resolve_on_the_destination_only() -> None:
    dst = pod("x", "b", ports=(("metrics", 9090, "TCP"), ("http", 8080, "TCP"), ("dns", 5353, "UDP")))
    ps = pset_of(cnp_b_ingress('[{port: metrics, protocol: TCP}, {port: dns, protocol: TCP}, {port: http},'
                               ' {port: "8080", protocol: UDP}, {port: "9090", protocol: TCP}]'))
    assert classes(ps, XA, dst) == [
        ("1-8079/TCP", False), ("8080/TCP", True), ("8081-9089/TCP", False), ("9090/TCP", True),
        ("9091-65535/TCP", False),
        # dns is 5353/UDP on b, but the rule names it for TCP only; http is TCP on b
        ("1-8079/UDP", False), ("8080/UDP", True), ("8081-65535/UDP", False),
    ]
    # the same rule towards a pod without those names opens only the numbers
    assert [c for c in classes(ps, XA, XB) if c[1]] == [("9090/TCP", True), ("8080/UDP", True)]


def test_np_ports_endport_and_named() -> None:
    dst = pod("x", "b", ports=(("http", 8080, "TCP"),))
    ps = pset_of("apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: b, namespace: x}\n"
                 "spec:\n  podSelector: {matchLabels: {pod: b}}\n  ingress:\n  - ports:\n"
                 "    - {port: 3000, endPort: 3010}\n    - {port: 3005, endPort: 3020}\n    - {port: http}\n"
                 "    - {port: 3000, protocol: UDP}\n")
    assert classes(ps, XA, dst) == [
        ("1-2999/TCP", False), ("3000-3020/TCP", True), ("3021-8079/TCP", False), ("8080/TCP", True),
        ("8081-65535/TCP", False),
        ("1-2999/UDP", False), ("3000/UDP", True), ("3001-65535/UDP", False),
    ]


# ---------------------------------------------------------------------------------------------
# the index against the scan it replaces
# ---------------------------------------------------------------------------------------------

_NAMES = ("http", "dns", "metrics")
_PROTOS = ("TCP", "UDP", "SCTP")


def _spec(protos: frozenset[str], name: str | None, lo: int, width: int) -> PolicyPort:
    return PolicyPort(protos, 0, 0, name) if name else PolicyPort(protos, lo, min(65535, lo + width))


_SPEC = st.builds(
    _spec, st.frozensets(st.sampled_from(_PROTOS), min_size=1),
    st.sampled_from(_NAMES) | st.none() | st.none() | st.none(),  # mostly numeric
    st.sampled_from([0, 1, 2, 79, 80, 81, 65534, 65535]) | st.integers(0, 65535),
    st.sampled_from([0, 0, 1, 2, 300]) | st.integers(0, 300))
_SPECS = st.lists(_SPEC, max_size=12)
_DST = st.lists(st.tuples(st.sampled_from(_NAMES), st.integers(1, 65535), st.sampled_from(_PROTOS + ("", "udp"))),
                max_size=4).map(lambda ports: pod("x", "b", ports=tuple(ports)))


def _probe_ports(specs: list[PolicyPort], dst: PodClass) -> Iterator[int]:
    yield from (0, 1, 2, 65535, 65536)
    for s in specs:
        for _, lo, hi in s.resolve(dst):
            yield from (lo - 1, lo, lo + 1, hi - 1, hi, hi + 1)


@settings(max_examples=100, derandomize=True, deadline=None, database=None)
@given(specs=_SPECS, dst=_DST)
def test_port_set_answers_as_the_scan_of_every_spec(specs: list[PolicyPort], dst: PodClass) -> None:
    index = PortSet(specs)
    for port, proto in itertools.product(set(_probe_ports(specs, dst)), _PROTOS):
        want = any(s.matches(port, proto, dst) for s in specs)
        assert index.matches(port, proto, dst) == want, (port, proto)


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(specs=_SPECS, deny=_SPECS, dst=_DST)
def test_port_classes_agree_with_the_scan_at_every_edge(specs: list[PolicyPort], deny: list[PolicyPort],
                                                         dst: PodClass) -> None:
    def entries(ss: list[PolicyPort]) -> list[dict[str, Any]]:
        return [({"port": s.name} if s.name else {"port": str(s.start), "endPort": s.end})
                | {"protocol": "ANY" if len(s.protocols) == 3 else min(s.protocols)}
                for s in ss if len(s.protocols) in (1, 3)]
    allow_e, deny_e = entries(specs), entries(deny)
    spec: dict[str, Any] = {"endpointSelector": {}, "ingress": [{"fromEndpoints": [{}]}]}
    if allow_e:
        spec["ingress"][0]["toPorts"] = [{"ports": allow_e}]
    if deny_e:
        spec["ingressDeny"] = [{"fromEndpoints": [{}], "toPorts": [{"ports": deny_e}]}]
    obj = {"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
           "metadata": {"name": "p", "namespace": "x"}, "spec": spec}
    ps = pset_of(yaml.safe_dump(obj))
    # the scan's answer, from the specs as the compiler read them back from the YAML
    unit = ps.selection.units_for(dst)[0]
    allow_specs = unit.rules["ingress"][0].ports
    deny_specs = unit.deny_rules["ingress"][0].ports or () if deny_e else ()

    def scan(port: int, proto: str) -> bool:
        allowed = allow_specs is None or any(s.matches(port, proto, dst) for s in allow_specs)
        return allowed and not any(s.matches(port, proto, dst) for s in deny_specs)

    got = ps.port_classes(XA, dst, _PROTOS)
    probes = [*(allow_specs or ()), *deny_specs]
    for proto in _PROTOS:
        ranges = [r for r in got if r.protocol == proto]
        assert ranges[0].start == 1 and ranges[-1].end == 65535
        assert all(a.end + 1 == b.start and a.verdict != b.verdict for a, b in itertools.pairwise(ranges))
        edges = {p for r in ranges for p in (r.start, r.end)}
        for port in sorted(edges | {p for p in _probe_ports(probes, dst) if 1 <= p <= 65535}):
            inside = next(r for r in ranges if r.start <= port <= r.end)
            assert inside.verdict.allowed == scan(port, proto), (port, proto, str(inside))
            assert ps.evaluate(XA, dst, port, proto).allowed == scan(port, proto)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_semantics_through_the_rule_index(case: Case, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every evaluator case of test_netpolicy, with the first-matching-rule index always built
    (it is only built past a few rules): same verdict, decided by the same rules."""
    monkeypatch.setattr(FirstMatch, "_SCAN", -1)
    v = pset(case.policies).evaluate(case.src, case.dst, case.port, case.proto)
    assert (v.allowed, summary(v)) == (case.allowed, case.decided), v.reason


_RULE_PORTS = st.none() | st.lists(_SPEC.filter(lambda s: len(s.protocols) in (1, 3)), min_size=1, max_size=3)


@settings(max_examples=40, derandomize=True, deadline=None, database=None)
@given(allows=st.lists(_RULE_PORTS, max_size=14), denies=st.lists(_RULE_PORTS, max_size=12), dst=_DST)
def test_many_rules_decided_by_the_first_that_admits_the_port(
        allows: list[list[PolicyPort] | None], denies: list[list[PolicyPort] | None], dst: PodClass) -> None:
    def rule(specs: list[PolicyPort] | None) -> dict[str, Any]:
        out: dict[str, Any] = {"fromEndpoints": [{}]}
        if specs is not None:
            out["toPorts"] = [{"ports": [
                ({"port": s.name} if s.name else {"port": str(s.start), "endPort": s.end})
                | {"protocol": "ANY" if len(s.protocols) == 3 else min(s.protocols)} for s in specs]}]
        return out
    spec: dict[str, Any] = {"endpointSelector": {}, "ingress": [rule(a) for a in allows] or [{}]}
    if denies:
        spec["ingressDeny"] = [rule(d) for d in denies]
    ps = pset_of(yaml.safe_dump({"apiVersion": "cilium.io/v2", "kind": "CiliumNetworkPolicy",
                                 "metadata": {"name": "p", "namespace": "x"}, "spec": spec}))
    unit = ps.selection.units_for(dst)[0]

    def scan(port: int, proto: str) -> tuple[str, int] | None:
        for section, rules in (("ingressDeny", unit.deny_rules["ingress"]), ("ingress", unit.rules["ingress"])):
            for r in rules:
                if r.names(XA, ps.labels) and (r.ports is None or any(p.matches(port, proto, dst) for p in r.ports)):
                    return section, r.ref.index
        return None

    probes = [p for r in [*unit.rules["ingress"], *unit.deny_rules["ingress"]] for p in r.ports or ()]
    with pytest.MonkeyPatch.context() as m:
        m.setattr(FirstMatch, "_SCAN", -1)  # the index even for a few rules
        for port in sorted({p for p in _probe_ports(probes, dst) if 1 <= p <= 65535}):
            for proto in _PROTOS:
                d = ps.evaluate(XA, dst, port, proto).ingress.decided_by
                assert (None if d is None else (d.section, d.index)) == scan(port, proto), (port, proto)


def test_pairs_of_one_signature_share_exactly_the_answer_a_cold_evaluator_gives() -> None:
    """port_classes remembers its ranges per pair signature (SideVerdicts.signature): the
    proofs ask thousands of pairs no rule tells apart. Over every policy set of the evaluator's
    cases and every ordered pair of their endpoints (pods of three namespaces, with and
    without named ports, entities), the answer from a warm evaluator, asked every pair in
    turn, equals that of a fresh one asked that pair alone: reasons, rules and ranges."""
    peers = list(dict.fromkeys([*(c.src for c in CASES), *(c.dst for c in CASES)]))
    assert len(peers) > 10 and any(isinstance(p, PodClass) and p.ports for p in peers)
    asked = remembered = 0
    for text in dict.fromkeys(c.policies for c in CASES):
        docs = [(d, SourceRef("case.yaml", i + 1, 1)) for i, d in enumerate(load(text))]
        warm = PolicySet.from_objects(docs)
        for src, dst in itertools.product(peers, peers):
            got = warm.port_classes(src, dst, ("TCP", "UDP"))
            assert got == PolicySet.from_objects(docs).port_classes(src, dst, ("TCP", "UDP")), (text, src, dst)
            asked += 1
        remembered += len(warm._classes_cache)
    assert remembered < asked * 9 // 10  # the memo is in use: pairs answered from another's ranges
