"""`topogate replay`: recorded Hubble flows (made from the incident fixture's pods, in the
shape `hubble observe -o json` writes) decided against real trees (the lab inventory's base
built with kubectl kustomize); hostile FLOWS files; replay agreeing with trace."""

from __future__ import annotations

import io
import json
import shutil
import tracemalloc
from pathlib import Path

import pytest
import yaml
from conftest import invoke, run_cli
from hubbleflows import WORLD, endpoint, flow, incident_flows, pod_labels
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from topogate.diff import read_tree
from topogate.diff.members import sides_of
from topogate.replay import (
    MAX_LINE,
    BadLine,
    Replay,
    denied_observed,
    dropped_allowed,
    per_job,
    read_flows,
    replay,
)
from topogate.sources.manifests import collect
from topogate.trace import trace

REPO = Path(__file__).resolve().parents[2]
INVENTORY = str(REPO / "fixtures" / "lab" / "inventory.yaml")
INCIDENT = REPO / "fixtures" / "incident"
WORKERS = "ml-demo/Group/train/Job/gpu-workers"
COORD = "ml-demo/Group/train/Deployment/coordinator"


def _replay(tmp: Path, tree: list[str], lines: list[str]) -> Replay:
    t = read_tree("head", INVENTORY, tree, str(tmp))
    bad: list[BadLine] = []
    got = replay(read_flows(io.BytesIO(("\n".join(lines) + "\n").encode()), "flows.jsonl", bad),
                 sides_of(t.inventory, t.objects)["lab"])
    assert bad == []
    return got


def _rows(rows: list) -> list[str]:  # type: ignore[type-arg]
    return [f"{s.src.shown} -> {s.dst.shown} {s.port}/{s.protocol} @{s.decision.where.replace('fixtures/incident/', '') or '-'}"
            for s in rows]


def _cli(*args: str) -> tuple[int, str, str]:
    return run_cli("replay", *args, raise_unexpected=False)


def test_committed_flow_fixtures_are_the_generated_ones() -> None:
    for t in ("broken", "fixed"):
        got = (REPO / "fixtures" / "flows" / f"incident-{t}.jsonl").read_text()
        assert got == "\n".join(incident_flows(INCIDENT / t)) + "\n"


def test_broken_tree_denies_the_outside_call_and_agrees_with_the_drop(tmp_path: Path) -> None:
    r = _replay(tmp_path, [str(INCIDENT / "broken")], incident_flows(INCIDENT / "broken"))
    assert r.replies == 1
    assert _rows(denied_observed(r)) == [f"{WORKERS} -> 198.51.100.7/32 443/TCP @broken/policies.yaml:14:3"]
    assert dropped_allowed(r) == []  # the cluster dropped the rendezvous; the broken tree denies it too


def test_fixed_tree_allows_what_the_cluster_dropped(tmp_path: Path) -> None:
    r = _replay(tmp_path, [str(INCIDENT / "fixed")], incident_flows(INCIDENT / "fixed"))
    assert _rows(dropped_allowed(r)) == [f"{WORKERS} -> {COORD} 29500/TCP @fixed/policies.yaml:16:5"]
    assert [s.drop_reason for s in dropped_allowed(r)] == ["POLICY_DENIED"]
    assert _rows(denied_observed(r)) == [f"{WORKERS} -> 198.51.100.7/32 443/TCP @fixed/policies.yaml:16:3"]


def test_removing_a_rule_flips_exactly_the_flows_it_allowed(tmp_path: Path) -> None:
    fixed = INCIDENT / "fixed"
    lines = incident_flows(fixed)
    before = _replay(tmp_path / "a", [str(fixed)], lines)
    cut = tmp_path / "cut"
    shutil.copytree(fixed, cut)
    docs = list(yaml.safe_load_all((cut / "policies.yaml").read_text()))
    rules = [d for d in docs if d and d["metadata"]["name"] == "zone-a-only"][0]["spec"]["egress"]
    rules.pop(1)  # the DNS rule
    (cut / "policies.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))
    after = _replay(tmp_path / "b", [str(cut)], lines)
    flipped = {k for k, s in before.seen.items() if s.decision.allowed != after.seen[k].decision.allowed}
    by_it = {k for k, s in before.seen.items()
             if s.decision.allowed and "egress rule 1 of CiliumNetworkPolicy/ml-demo/zone-a-only" in s.decision.words}
    assert by_it and flipped == by_it
    assert all(k[3] == 53 for k in flipped)


def test_cli_formats_and_exit_code() -> None:
    flows = str(REPO / "fixtures" / "flows" / "incident-fixed.jsonl")
    code, out, _ = _cli(flows, INVENTORY, str(INCIDENT / "fixed"), "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert sorted(data) == ["cluster", "dropped_allowed", "flows", "jobs", "observed_denied", "replies_skipped"]
    assert data["observed_denied"][0]["destination"] == "198.51.100.7/32"
    assert data["jobs"]["Group/ml-demo/train"]["dns"]["seen"] == 2
    code, out, _ = _cli(flows, INVENTORY, str(INCIDENT / "fixed"), "--format", "markdown")
    assert "### Observed, denied by the tree" in out and "| 443/TCP |" in out


def test_every_bad_line_is_reported_at_its_line(tmp_path: Path) -> None:
    good = incident_flows(INCIDENT / "fixed")[0]
    f = tmp_path / "flows.jsonl"
    f.write_text("\n".join([good, good[: len(good) // 2], "[1, 2]", good.replace("29500", "70000"), "",
                            json.dumps({"flow": {"l4": {"TCP": {}}, "source": {}}}), good]) + "\n")
    code, _, err = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"))
    assert code == 2
    lines = err.splitlines()
    assert [ln.split(": ", 2)[1].split(":")[1] for ln in lines] == ["2", "3", "4", "6"]
    assert "truncated?" in lines[0]


def test_a_line_longer_than_the_bound_is_an_error_and_the_next_line_is_read() -> None:
    good = incident_flows(INCIDENT / "fixed")[0].encode()
    data = good + b"\n" + b'{"flow": "' + b"x" * (3 * MAX_LINE) + b'"}\n' + good + b"\n"
    bad: list[BadLine] = []
    got = list(read_flows(io.BytesIO(data), "f", bad))
    assert [b.line for b in bad] == [2] and "longer than" in bad[0].message
    assert [g.line for g in got] == [1, 3]


def test_a_large_file_is_read_as_a_stream(tmp_path: Path) -> None:
    line = incident_flows(INCIDENT / "fixed")[4].encode() + b"\n"
    f = tmp_path / "big.jsonl"
    with f.open("wb") as out:
        for _ in range(40_000):  # about 30 MB
            out.write(line)
    tracemalloc.start()
    with f.open("rb") as stream:
        n = sum(1 for _ in read_flows(stream, str(f), []))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert n == 40_000
    assert peak < 4 * MAX_LINE  # a few lines at a time, not the file


def test_nothing_from_a_flow_becomes_a_ci_command(tmp_path: Path) -> None:
    ns, labels = pod_labels(INCIDENT / "fixed" / "workers.yaml")
    evil = endpoint(ns, {**labels, "x": "y\n::error::owned ##[set-output name=a]"}, "p")
    f = tmp_path / "flows.jsonl"
    f.write_text(flow(evil, "10.0.1.5", WORLD, "203.0.113.9", 8443) + "\n")
    for fmt in ("text", "markdown", "json"):
        code, out, _ = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"), "--format", fmt)
        assert code == 1
        assert not any(ln.lstrip().startswith("::") for ln in out.splitlines()) and "##[" not in out
    code, out, _ = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"), "--suggest")
    assert not any(ln.lstrip().startswith("::") for ln in out.splitlines()) and "##[" not in out


def test_suggest_prints_the_entry_admitting_exactly_the_denied_flow() -> None:
    flows = str(REPO / "fixtures" / "flows" / "incident-fixed.jsonl")
    code, out, _ = _cli(flows, INVENTORY, str(INCIDENT / "fixed"), "--suggest")
    assert code == 1
    assert out.splitlines() == ['# ml-demo/Group/train/Job/gpu-workers -> 198.51.100.7/32 443/TCP: '
                                'the sender is no inventory workload']


# --- replay agrees with trace -------------------------------------------------------------

_OBJECTS = collect([str(INCIDENT / "broken")])
_W = pod_labels(INCIDENT / "broken" / "workers.yaml")
_C = pod_labels(INCIDENT / "broken" / "coordinator.yaml")
_PODS = [_W, _C, ("kube-system", {"k8s-app": "kube-dns"}), ("ml-demo", {"app": "other"})]


@pytest.fixture(scope="module")
def lab_side(tmp_path_factory: pytest.TempPathFactory):  # type: ignore[no-untyped-def]
    t = read_tree("head", INVENTORY, [str(INCIDENT / "broken")], str(tmp_path_factory.mktemp("t")))
    return sides_of(t.inventory, t.objects)["lab"]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(src=st.sampled_from(_PODS), dst=st.sampled_from(_PODS),
       port=st.sampled_from([53, 443, 1024, 29500, 65535]), proto=st.sampled_from(["TCP", "UDP"]))
def test_replay_verdict_equals_trace(lab_side, src, dst, port, proto) -> None:  # type: ignore[no-untyped-def]
    line = flow(endpoint(src[0], src[1], "a"), "10.0.1.1", endpoint(dst[0], dst[1], "b"), "10.0.1.2", port, proto)
    r = replay(read_flows(io.BytesIO(line.encode()), "f", []), lab_side)
    (seen,) = r.seen.values()
    spec = lambda p: f"{p[0]}:" + ",".join(f"{k}={v}" for k, v in sorted(p[1].items()))  # noqa: E731
    t = trace(_OBJECTS, spec(src), spec(dst), f"{port}/{proto}", INVENTORY, "lab")
    assert seen.decision.allowed == (t.verdict == "allowed")


# --- suggest -> generate -> replay -------------------------------------------------------

def _member_end(m) -> dict:  # type: ignore[no-untyped-def]
    """A Hubble endpoint for the pods of a job group, with the labels the tree gives them."""
    return endpoint(m.peer.namespace, dict(m.peer.labels), m.key.rsplit("#", 1)[-1].lower() + "-0")


def test_suggest_then_generate_then_replay_allows_everything_and_the_rules_hold(tmp_path: Path) -> None:
    from topogate.check.run import run_check
    from topogate.replay import run_replay, suggest

    lab = tmp_path / "lab"
    shutil.copytree(REPO / "fixtures" / "lab", lab)
    inv = lab / "inventory.yaml"
    t = read_tree("head", str(inv), [], str(tmp_path / "s"))
    jobs = sides_of(t.inventory, t.objects)["lab"].jobs
    master = next(m for k, m in jobs.items() if k.endswith("#Master"))
    worker = next(m for k, m in jobs.items() if k.endswith("#Worker"))
    dns = endpoint("kube-system", {"k8s-app": "kube-dns"}, "coredns-1")
    flows = tmp_path / "flows.jsonl"
    flows.write_text("\n".join([
        flow(_member_end(worker), "10.0.1.5", _member_end(master), "10.0.1.9", 23456),
        flow(_member_end(worker), "10.0.1.5", dns, "10.0.0.10", 53, "UDP"),
        flow(_member_end(worker), "10.0.1.5", WORLD, "203.0.113.9", 443),
        flow(_member_end(master), "10.0.1.9", {}, "203.0.113.10", 8443),
    ]) + "\n")
    first = run_replay(str(flows), str(inv), [])
    assert {(s.dst.shown, s.port) for s in denied_observed(first.result)} == {("203.0.113.9/32", 443),
                                                                             ("203.0.113.10/32", 8443)}
    text = suggest(first.result, first.inventory)
    entry = yaml.safe_load("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))
    assert entry == {"egress": [{"cidrs": ["203.0.113.10/32"], "ports": [{"port": 8443, "protocol": "TCP"}]},
                                {"cidrs": ["203.0.113.9/32"], "ports": [{"port": 443, "protocol": "TCP"}]}]}
    data = yaml.safe_load(inv.read_text())
    data["workloads"][0]["egress"] = entry["egress"]
    inv.write_text(yaml.safe_dump(data, sort_keys=False))
    again = run_replay(str(flows), str(inv), [])
    assert denied_observed(again.result) == []
    assert len(again.result.seen) == 4
    (job,) = per_job(again.result).values()
    assert (job["rendezvous"]["seen"], job["dns"]["seen"], job["nccl"]["seen"]) == (1, 1, 0)
    found = {f.rule for f in run_check(str(inv)).result.findings}
    assert not found & {"TG107", "TG112"}


def test_suggested_door_admits_the_denied_pod_flow(tmp_path: Path) -> None:
    from topogate.replay import run_replay, suggest

    shutil.copytree(REPO / "fixtures" / "lab", tmp_path / "lab")
    inv = tmp_path / "lab" / "inventory.yaml"
    t = read_tree("head", str(inv), [], str(tmp_path / "s"))
    worker = next(m for k, m in sides_of(t.inventory, t.objects)["lab"].jobs.items() if k.endswith("#Worker"))
    flows = tmp_path / "flows.jsonl"
    flows.write_text(flow(_member_end(worker), "10.0.1.5", endpoint("storage", {"app": "s3-gateway"}, "gw-0"),
                          "10.0.3.3", 9000) + "\n")
    first = run_replay(str(flows), str(inv), [])
    assert len(denied_observed(first.result)) == 1
    doors = yaml.safe_load(suggest(first.result, first.inventory))["doors"]
    assert doors == [{"name": "replay-train-1", "cluster": "lab", "from": {"workloads": ["train"]},
                      "to": {"namespace": "storage", "labels": {"app": "s3-gateway"}},
                      "ports": [{"port": 9000, "protocol": "TCP"}]}]
    data = yaml.safe_load(inv.read_text())
    data["doors"] = doors
    inv.write_text(yaml.safe_dump(data, sort_keys=False))
    (after,) = run_replay(str(flows), str(inv), []).result.seen.values()
    assert after.decision.allowed and "topogate-train" in after.decision.words


def test_check_flows_reports_tg210_at_the_flows_line_and_bad_files_exit_2(tmp_path: Path) -> None:
    flows = str(REPO / "fixtures" / "flows" / "incident-fixed.jsonl")
    r = invoke("check", INVENTORY, str(INCIDENT / "fixed"), "--flows", flows, "--format", "json")
    assert r.exit_code == 1
    hits = [f for f in json.loads(r.stdout)["findings"] if f["rule"] == "TG210"]
    assert [(Path(h["file"]).name, h["line"]) for h in hits] == [("incident-fixed.jsonl", 6)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"flow": {"l4": \n')
    r = invoke("check", INVENTORY, str(INCIDENT / "fixed"), "--flows", str(bad))
    assert r.exit_code == 2 and "bad.jsonl:1:1:" in r.stderr


def _tg210(r: object) -> list[str]:
    return [f["message"] for f in json.loads(r.stdout)["findings"] if f["rule"] == "TG210"]  # type: ignore[attr-defined]


def test_check_flows_replays_against_what_the_check_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """check --flows decides the flows against the objects the check read, not a second read
    (and build) of the same tree; its facts are those of replay's own read. With --exclude (the
    check's view is not the whole tree) the replay reads the tree itself, as before."""
    from topogate.replay import carried_denied, run_replay
    from topogate.sources import manifests

    flows = str(REPO / "fixtures" / "flows" / "incident-fixed.jsonl")
    paths = [str(INCIDENT / "fixed")]
    reads: list[object] = []
    real = manifests.Collecting.__init__

    def counted(self: manifests.Collecting, *args: object, **kwargs: object) -> None:
        reads.append(args[0])
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(manifests.Collecting, "__init__", counted)
    r = invoke("check", INVENTORY, *paths, "--flows", flows, "--format", "json")
    assert r.exit_code == 1, r.output
    assert len(reads) == 1  # the check's read, and no other
    own = [f.message for f in carried_denied(run_replay(flows, INVENTORY, paths), flows)]
    assert _tg210(r) == own and own
    reads.clear()
    r = invoke("check", INVENTORY, *paths, "--flows", flows, "--format", "json",
               "--exclude", "nothing-matches/*")
    assert r.exit_code == 1 and _tg210(r) == own
    assert len(reads) == 2  # the check's, and the replay's own


# --- a file of no flow, an address that is none, and what a flow says printed inert ---------

def _wrapped(tmp_path: Path) -> Path:
    """The incident's flows as an API gateway hands them out: each line `{"result": {...}}`."""
    f = tmp_path / "wrapped.jsonl"
    f.write_text("".join(json.dumps({"result": json.loads(ln)}) + "\n" for ln in incident_flows(INCIDENT / "fixed")))
    return f


@pytest.mark.parametrize("shape", ["wrapped", "lost events only", "empty"])
def test_a_file_of_no_flow_is_exit_2_naming_it_and_the_shapes_read(tmp_path: Path, shape: str) -> None:
    if shape == "wrapped":
        f = _wrapped(tmp_path)
    else:
        f = tmp_path / "none.jsonl"
        f.write_text('{"lost_events": {"source": "HUBBLE_RING_BUFFER", "num_events_lost": 3}}\n'
                     if shape == "lost events only" else "")
    code, out, err = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"))
    assert (code, out) == (2, ""), (out, err)
    (line,) = err.splitlines()
    assert line.startswith(f"topogate replay: {f}: no line is a Hubble flow")
    assert '{"flow": {...}}' in line and "flow.Flow" in line
    if shape == "wrapped":
        assert "line 1 has the keys: result" in line
    r = invoke("check", INVENTORY, str(INCIDENT / "fixed"), "--flows", str(f))
    assert r.exit_code == 2 and r.stdout == ""
    assert f"topogate check: --flows: {f}: no line is a Hubble flow" in r.stderr


@pytest.mark.parametrize("ip", ["not-an-ip", "10.0.1.999", "10.0.0.0/8", " 10.0.1.5"])
def test_an_address_that_is_none_is_an_error_at_its_line_not_world(tmp_path: Path, ip: str) -> None:
    lines = incident_flows(INCIDENT / "fixed")
    bad = json.loads(lines[5])  # the worker's call to an outside address
    bad["flow"]["IP"]["destination"] = ip
    f = tmp_path / "flows.jsonl"
    f.write_text("\n".join([*lines[:5], json.dumps(bad)]) + "\n")
    code, out, err = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"))
    assert (code, out) == (2, "")
    assert err.splitlines() == [f"topogate replay: {f}:6:1: IP.destination {json.dumps(ip)} is not an IP address"]


def test_an_endpoint_naming_nothing_is_an_error_at_its_line_not_world(tmp_path: Path) -> None:
    lines = incident_flows(INCIDENT / "fixed")
    bad = json.loads(lines[5])
    del bad["flow"]["IP"]  # no address, no namespace, no reserved identity: nothing to decide
    f = tmp_path / "flows.jsonl"
    f.write_text("\n".join([*lines[:5], json.dumps(bad)]) + "\n")
    code, _, err = _cli(str(f), INVENTORY, str(INCIDENT / "fixed"))
    assert code == 2
    assert err.splitlines() == [f"topogate replay: {f}:6:1: destination has no namespace, no reserved identity "
                                "and no IP address: nothing to decide it by"]


EVIL = "x\n## Forged heading\n<img src=x onerror=alert(1)> [click](https://evil.example/) | y\r`z`"


def _evil_flows(tmp_path: Path) -> Path:
    """A pod of no job, whose namespace and labels say anything, calling the workers (denied by
    their ingress) and dropped on a call the tree allows, with a drop reason that says anything."""
    ns, labels = pod_labels(INCIDENT / "fixed" / "workers.yaml")
    evil = endpoint("ml-demo", {"app": EVIL}, "evil-0")
    w = endpoint(ns, labels, "gpu-workers-0-abcde")
    f = tmp_path / "flows.jsonl"
    f.write_text("\n".join([flow(evil, "10.0.1.7", w, "10.0.1.5", 8443),
                            flow(w, "10.0.1.5", w, "10.0.1.6", 12345, verdict="DROPPED", reason=EVIL)]) + "\n")
    return f


def test_replay_text_keeps_each_flow_on_its_own_line(tmp_path: Path) -> None:
    code, out, _ = _cli(str(_evil_flows(tmp_path)), INVENTORY, str(INCIDENT / "fixed"))
    assert code == 1
    lines = out.splitlines()
    assert len(lines) == 6, out  # the header, two sections of one flow each, the job line
    assert lines[1] == "observed but denied by the tree: 1" and lines[3] == "dropped by the cluster but allowed by the tree: 1"
    assert lines[2].startswith("  ml-demo:app=x\\n## Forged heading\\n<img")
    assert lines[4].endswith("(drop: x\\n## Forged heading\\n<img src=x onerror=alert(1)> "
                             "[click](https://evil.example/) | y\\r`z`)")


def test_replay_markdown_is_inert(tmp_path: Path) -> None:
    code, out, _ = _cli(str(_evil_flows(tmp_path)), INVENTORY, str(INCIDENT / "fixed"), "--format", "markdown")
    assert code == 1
    headings = [ln for ln in out.splitlines() if ln.lstrip().startswith("#")]
    assert headings == ["## topogate replay", "### Observed, denied by the tree",
                        "### Dropped by the cluster, allowed by the tree"]
    assert "<img" not in out and "](https://" not in out and "\r" not in out
    row = next(ln for ln in out.splitlines() if "Forged" in ln)
    assert row.count(" | ") == 4, row  # the row's own five cells, none added by the label's `|`
    assert "&lt;img src=x onerror=alert(1)&gt; &#91;click&#93;(https://evil.example/)" in row


def test_replay_json_keeps_what_the_flow_said(tmp_path: Path) -> None:
    code, out, _ = _cli(str(_evil_flows(tmp_path)), INVENTORY, str(INCIDENT / "fixed"), "--format", "json")
    assert code == 1
    data = json.loads(out)
    assert data["observed_denied"][0]["source"] == f"ml-demo:app={EVIL}"
    assert data["dropped_allowed"][0]["drop_reason"] == EVIL


def test_suggest_comments_stay_comments(tmp_path: Path) -> None:
    code, out, _ = _cli(str(_evil_flows(tmp_path)), INVENTORY, str(INCIDENT / "fixed"), "--suggest")
    assert code == 1
    assert out.splitlines() and all(ln.startswith("# ") for ln in out.splitlines()), out
    assert yaml.safe_load(out) is None


def _named(f: str, names: list[str]) -> str:
    d = json.loads(f)
    d.get("flow", d)["destination_names"] = names
    return json.dumps(d)


def test_a_flow_to_a_name_the_dns_proxy_answered_is_decided_by_that_name(tmp_path: Path) -> None:
    """A pull from S3 allowed by a toFQDNs rule: Hubble records the name the proxy answered
    (destination_names); replay decides the address by it, as Cilium's FQDN identity does, and
    as trace decides `fqdn:NAME`. Without the name the address alone is decided (denied), and
    --suggest proposes the name, never a /32 of a rotating address."""
    from topogate.replay import run_replay, suggest

    lab = tmp_path / "lab"
    shutil.copytree(REPO / "fixtures" / "lab", lab)
    inv = lab / "inventory.yaml"
    data = yaml.safe_load(inv.read_text())
    data["workloads"][0]["egress"] = [{"fqdns": ["*.s3.us-east-1.amazonaws.com"], "ports": [{"port": 443}]}]
    inv.write_text(yaml.safe_dump(data, sort_keys=False))
    t = read_tree("head", str(inv), [], str(tmp_path / "s"))
    worker = next(m for k, m in sides_of(t.inventory, t.objects)["lab"].jobs.items() if k.endswith("#Worker"))
    pull = flow(_member_end(worker), "10.0.1.5", WORLD, "52.216.8.1", 443)
    other = flow(_member_end(worker), "10.0.1.5", WORLD, "52.216.8.2", 443)
    flows = tmp_path / "flows.jsonl"
    flows.write_text("\n".join([
        _named(pull, ["data.s3.us-east-1.amazonaws.com"]),
        pull,  # the same address, recorded without the name: the address alone decides
        # a CNAME chain: the rule names one of them
        _named(other, ["s3-r-w.us-east-1.amazonaws.com", "eu.s3.us-east-1.amazonaws.com"]),
        _named(flow(_member_end(worker), "10.0.1.5", WORLD, "151.101.1.1", 443), ["pypi.org"]),
    ]) + "\n")
    run = run_replay(str(flows), str(inv), [])
    verdicts = {(s.dst.shown, s.decision.allowed) for s in run.result.seen.values()}
    assert verdicts == {("data.s3.us-east-1.amazonaws.com (52.216.8.1)", True), ("52.216.8.1/32", False),
                        ("eu.s3.us-east-1.amazonaws.com (52.216.8.2)", True), ("pypi.org (151.101.1.1)", False)}
    # trace says the same of the names
    spec = "ml-demo:" + ",".join(f"{k}={v}" for k, v in sorted(worker.peer.labels))
    for name, allowed in (("data.s3.us-east-1.amazonaws.com", True), ("pypi.org", False)):
        assert (trace(t.objects, spec, f"fqdn:{name}", "443/TCP", str(inv), "lab").verdict == "allowed") is allowed
    entry = yaml.safe_load(suggest(run.result, run.inventory))
    assert {"fqdns": ["pypi.org"], "ports": [{"port": 443, "protocol": "TCP"}]} in entry["egress"]
    assert {"cidrs": ["52.216.8.1/32"], "ports": [{"port": 443, "protocol": "TCP"}]} in entry["egress"]
