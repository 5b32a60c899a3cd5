"""`audit egress --flow-logs`: measured inter-AZ bytes and dollars per training job.

Real parts: a moto_server on 127.0.0.1 serves S3, CloudWatch Logs and Cost Explorer; the flow-log
lines are made from the pods of fixtures/live/eks (tests/flowlog_support.py), so the bytes each
job must be given are known, and the Cost Explorer figures are seeded to agree by construction
(the jobs' bytes, the other traffic, the unknown peers, and a known rest).
"""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import boto3
import pytest

pytest.register_assert_rewrite("audit_support", "flowlog_support")
pytest_plugins = ["audit_support"]
from audit_support import Moto, page, result  # noqa: E402
from conftest import invoke  # noqa: E402
from flowlog_support import JOB, Flow, addresses, records, s3_body, s3_key, truth  # noqa: E402

from topogate.audit.attribute import COLOCATED  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
LIVE = REPO / "fixtures" / "live" / "eks"
INVENTORY = str(REPO / "fixtures" / "audit" / "flowlogs" / "inventory.yaml")
BASES = str(LIVE / "bases")
BROKEN = LIVE / "live-broken.json"  # train split: master, worker-0 in 1a; worker-1, worker-2 in 1b
OK = LIVE / "live-ok.json"  # train colocated in 1a
KEY = "topogate.dev/cluster"
UT = "DataTransfer-Regional-Bytes"
D = dt.date.fromisoformat
DAYS = (D("2026-11-24"), D("2026-11-25"), D("2026-11-26"))
GB = 10**9
REST_GB = 7  # billed to the tag, seen by no flow log (an interface without flow logs)


def split_night(days: tuple[dt.date, ...] = DAYS) -> list[Flow]:
    d1, d2, d3 = days
    return [
        Flow("10.0.1.201", "10.0.2.211", 40 * GB, d1),      # master 1a -> worker-1 1b
        Flow("10.0.2.212", "10.0.1.210", 25 * GB, d1, 30),  # worker-2 1b -> worker-0 1a
        Flow("10.0.1.210", "10.0.1.201", 90 * GB, d2),      # same zone: free
        Flow("10.0.2.211", "10.0.1.201", 60 * GB, d2, 5),   # worker-1 1b -> master 1a
        Flow("10.0.2.211", "10.0.1.53", 2 * GB, d3),        # worker-1 -> coredns 1a: a door
        Flow("10.0.2.10", "10.0.1.53", 3 * GB, d3, 9),      # system node -> coredns: no job
        Flow("10.0.1.201", "10.0.9.9", 5 * GB, d3, 20),     # a peer the snapshot does not know
    ]


def _ce_pages(lines: dict[dt.date, list[str]], flows: list[Flow], days: tuple[dt.date, ...]) -> dict:
    """Cost Explorer agrees with the flow logs by construction: each day bills what the
    interfaces recorded (every record of both sides) plus REST_GB on the first day."""
    per_day = {d: 0 for d in days}
    for d, ls in lines.items():
        for ln in ls:
            fields = ln.split()
            if fields[6] != "-":
                src, dst = fields[4], fields[5]
                book = addresses(BROKEN)
                a, b = book.get(src), book.get(dst)
                if a is None or b is None or a.zone != b.zone:
                    per_day[d] += int(fields[6])
    per_day[days[0]] += REST_GB * GB
    out = []
    for d in days:
        gb = Decimal(per_day[d]) / GB
        out.append(result(d.isoformat(), [(f"{KEY}$eks", UT, str(gb / 100), str(gb))]))
    return page(out)


@pytest.fixture
def aws(moto_ce: Moto, monkeypatch: pytest.MonkeyPatch) -> Moto:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_ce.url)
    monkeypatch.setenv("AWS_ENDPOINT_URL_CLOUDWATCH_LOGS", moto_ce.url)
    return moto_ce


def _seed_s3(lines: dict[dt.date, list[str]], bucket: str = "flow-logs") -> str:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    for d, ls in sorted(lines.items()):
        half = len(ls) // 2
        for n, part in enumerate((ls[:half], ls[half:])):
            s3.put_object(Bucket=bucket, Key=s3_key(d, n), Body=s3_body(part))
    return f"s3://{bucket}/AWSLogs/"


def _cli(*args: str, window: tuple[dt.date, dt.date] = (DAYS[0], DAYS[-1] + dt.timedelta(1))
         ) -> tuple[int, str, str]:
    res = invoke("audit", "egress", INVENTORY, *args, "--start",
                 window[0].isoformat(), "--end", window[1].isoformat())
    return res.exit_code, res.stdout, res.stderr


def _check_against_truth(data: dict[str, Any], flows: list[Flow]) -> None:
    want = truth(flows, addresses(BROKEN))
    fl = data["flowLogs"]
    assert fl["addresses"] == "pod"
    assert {j["job"]: j["bytes"] for j in fl["jobs"]} == want["jobs"]
    (job,) = fl["jobs"]
    assert {(JOB, p["from"], p["to"]): p["bytes"] for p in job["zonePairs"]} == want["pairs"]
    assert Decimal(job["usd"]) == Decimal(want["jobs"][JOB]) / GB * Decimal("0.01")
    assert fl["otherBytes"] == want["other"] and fl["unknownPeerBytes"] == want["unknown"]
    # the rest the bill holds beyond the jobs: the other traffic, the unknown peer, REST_GB
    rest = Decimal(fl["unattributedGB"])
    assert rest == Decimal(want["other"] + want["unknown"]) / GB + REST_GB


def test_s3_flow_logs_give_each_job_its_measured_bytes_and_dollars(aws: Moto) -> None:
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    source = _seed_s3(lines)
    code, out, err = _cli(BASES, "--flow-logs", source, "--from-file", str(BROKEN),
                          "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    _check_against_truth(data, flows)
    (job,) = data["flowLogs"]["jobs"]
    assert job["cause"].startswith("TG102 may-split: PyTorchJob/ml-demo/train can be split")
    assert len(data["flowLogs"]["objects"]) == 6 and data["flowLogs"]["records"] == 13


def test_cloudwatch_logs_give_the_same_attribution(aws: Moto) -> None:
    today = dt.date.today()
    days = tuple(today - dt.timedelta(days=n) for n in (5, 4, 3))
    flows = split_night(days)
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, days))
    logs = boto3.client("logs")
    logs.create_log_group(logGroupName="vpc-flow")
    for n, d in enumerate(sorted(lines)):
        stream = f"eni-{n:04d}-all"
        logs.create_log_stream(logGroupName="vpc-flow", logStreamName=stream)
        events = sorted(({"timestamp": int(ln.split()[7]) * 1000, "message": ln} for ln in lines[d]),
                        key=lambda e: e["timestamp"])
        logs.put_log_events(logGroupName="vpc-flow", logStreamName=stream, logEvents=events)
    code, out, err = _cli(BASES, "--flow-logs", "logs:vpc-flow", "--from-file", str(BROKEN),
                          "--format", "json", window=(days[0], days[-1] + dt.timedelta(1)))
    assert code == 0, err
    _check_against_truth(json.loads(out), flows)


def test_a_repeated_cloudwatch_logs_token_is_exit_75_never_a_partial_sum(
        aws: Moto, monkeypatch: pytest.MonkeyPatch) -> None:
    """FilterLogEvents answering a nextToken it gave before is going round: what was read is
    part of the window, so it is exit 75 naming the group, as Cost Explorer's repeated
    NextPageToken is. moto_server makes each nextToken from the last event of its page (unique
    event ids), so it never repeats one: botocore's Stubber answers instead, on a real logs
    client (parameters and answers checked against the service model)."""
    from botocore.stub import ANY, Stubber

    from topogate.audit import flowsource

    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    client = boto3.client("logs", region_name="us-east-1")
    stub = Stubber(client)
    for n, (day, token) in enumerate(((DAYS[0], None), (DAYS[1], "page-2"))):
        events = [{"logStreamName": "eni-all", "timestamp": int(ln.split()[7]) * 1000, "message": ln,
                   "ingestionTime": int(ln.split()[7]) * 1000, "eventId": f"{n}-{i}"}
                  for i, ln in enumerate(lines[day])]
        want = {"logGroupName": "vpc-flow", "startTime": ANY, "endTime": ANY}
        stub.add_response("filter_log_events", {"events": events, "nextToken": "page-2"},
                          {**want, "nextToken": token} if token else want)
    stub.activate()
    monkeypatch.setattr(flowsource, "_client", lambda service, max_attempts: client)
    code, out, err = _cli(BASES, "--flow-logs", "logs:vpc-flow", "--from-file", str(BROKEN))
    assert (code, out) == (75, ""), (code, out, err)
    (line,) = err.splitlines()
    assert "FilterLogEvents of logs:vpc-flow returned the same nextToken twice" in line, line
    assert "0 Cost Explorer requests answered" in line  # refused before any paid request
    stub.assert_no_pending_responses()


def test_local_files_text_report_names_the_job_zones_dollars_and_cause(
        aws: Moto, tmp_path: Path) -> None:
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    for d, ls in lines.items():
        (tmp_path / f"{d}.log.gz").write_bytes(s3_body(ls))
    code, out, err = _cli(BASES, "--flow-logs", str(tmp_path), "--from-file", str(BROKEN))
    assert code == 0, err
    assert f"  {JOB}: 254.00 GB, $2.54" in out
    assert "    zones: us-east-1a -> us-east-1b 127.00 GB, us-east-1b -> us-east-1a 127.00 GB" in out
    assert "    why: TG102 may-split:" in out
    assert "addresses: pod IPs (VPC CNI / ENI mode" in out
    assert "unattributed rest 18.00 GB ($0.18)" in out


def test_a_job_budget_over_is_exit_1_and_named(aws: Moto, tmp_path: Path) -> None:
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    for d, ls in lines.items():
        (tmp_path / f"{d}.log").write_bytes(s3_body(ls))
    code, out, _ = _cli(BASES, "--flow-logs", str(tmp_path), "--from-file", str(BROKEN),
                        "--job-budget-usd-per-day", "1")
    assert code == 1 and f"Verdict: OVER BUDGET: job {JOB}" in out and "OVER job budget" in out


def test_a_colocated_job_with_inter_az_bytes_is_told_to_look_at_its_doors(
        aws: Moto, tmp_path: Path) -> None:
    # live-ok: the job runs in us-east-1a; it talks to the system node of us-east-1b
    flows = [Flow("10.0.1.201", "10.0.2.10", 4 * GB, d) for d in DAYS]
    book = addresses(OK)
    lines = records(flows, book)
    aws.seed(page([result(d.isoformat(), [(f"{KEY}$eks", UT, "0.08", "8")]) for d in DAYS]))
    for d, ls in lines.items():
        (tmp_path / f"{d}.log").write_bytes(s3_body(ls))
    code, out, err = _cli("--flow-logs", str(tmp_path), "--from-file", str(OK), "--format", "json")
    assert code == 0, err
    (job,) = json.loads(out)["flowLogs"]["jobs"]
    assert job["job"] == JOB and job["bytes"] == 24 * GB and job["cause"] == COLOCATED


def test_overlay_mode_attributes_node_pairs_and_says_so(aws: Moto, tmp_path: Path) -> None:
    # An overlay: the VPC sees node addresses only. master/worker-0 on ip-10-0-1-41 (1a),
    # worker-1 on ip-10-0-2-41 (1b); only the job runs on both nodes.
    flows = [Flow("10.0.1.41", "10.0.2.41", 10 * GB, DAYS[0]),
             Flow("10.0.1.10", "10.0.2.10", 1 * GB, DAYS[1]),  # system nodes: no job
             Flow("10.0.1.41", "10.0.1.42", 5 * GB, DAYS[2])]
    lines = records(flows, addresses(BROKEN))
    aws.seed(page([result(d.isoformat(), [(f"{KEY}$eks", UT, "0.20", "20")]) for d in DAYS]))
    for d, ls in lines.items():
        (tmp_path / f"{d}.log").write_bytes(s3_body(ls))
    code, out, err = _cli(BASES, "--flow-logs", str(tmp_path), "--from-file", str(BROKEN),
                          "--format", "json")
    assert code == 0, err
    fl = json.loads(out)["flowLogs"]
    assert fl["addresses"] == "node"
    assert [(j["job"], j["bytes"]) for j in fl["jobs"]] == [(JOB, 20 * GB)]
    assert fl["otherBytes"] == 2 * GB


HOSTILE = [
    ("too few fields", "5 123456789012 eni-1 use1-az4 10.0.1.201 10.0.2.211 100 1764000000"),
    ("bytes not a count", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 1e9 1764000000 1764000060 ACCEPT OK"),
    ("negative bytes", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 -5 1764000000 1764000060 ACCEPT OK"),
    ("absurd bytes", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 99999999999999999 1764000000 "
                     "1764000060 ACCEPT OK"),
    ("not an address", "5 1 eni-1 use1-az4 10.0.1.999 10.0.2.211 100 1764000000 1764000060 ACCEPT OK"),
    ("bad az-id", "5 1 eni-1 us-east-1a 10.0.1.201 10.0.2.211 100 1764000000 1764000060 ACCEPT OK"),
    ("end before start", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 100 1764000060 1764000000 ACCEPT OK"),
    ("control character", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 100 1764000000 1764000060 "
                          "ACCEPT OK\x1b]0;pwned\x07"),
    ("a dash for bytes of a record with data", "5 1 eni-1 use1-az4 10.0.1.201 10.0.2.211 - "
                                               "1764000000 1764000060 ACCEPT OK"),
]


@pytest.mark.parametrize(("name", "bad"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_a_hostile_line_is_an_error_at_its_object_and_line_never_a_zero(
        aws: Moto, name: str, bad: str) -> None:
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    lines[DAYS[1]].insert(1, bad)
    source = _seed_s3(lines)
    code, out, err = _cli(BASES, "--flow-logs", source, "--from-file", str(BROKEN))
    assert code == 2, (name, out)
    assert out == ""
    (line,) = err.strip().splitlines()
    # the second line of the object (after the header) of the day with the bad line
    assert f"s3://flow-logs/{s3_key(DAYS[1], 0)}:3: " in line, line
    assert "\x1b" not in line
    assert "0 Cost Explorer requests answered" in line  # refused before any paid request


def test_every_problem_of_every_object_is_named_at_once(aws: Moto, tmp_path: Path) -> None:
    (tmp_path / "a.log").write_text("version az-id pkt-srcaddr pkt-dstaddr bytes start end\n"
                                    "5 use1-az4 10.0.1.1 10.0.2.1 x 1764000000 1764000060\n"
                                    "5 use1-az4 10.0.1.1 10.0.2.1 1 1764000000\n")
    (tmp_path / "b.log").write_text("version srcaddr dstaddr bytes\n5 a b 1\n")
    code, _, err = _cli("--flow-logs", str(tmp_path), "--from-file", str(BROKEN))
    assert code == 2
    assert f"{tmp_path}/a.log:2: bytes 'x' is not a count" in err
    assert f"{tmp_path}/a.log:3: 6 fields, the format has 7" in err
    assert f"{tmp_path}/b.log:1 (header): the format lacks az-id, pkt-srcaddr, pkt-dstaddr" in err


def test_no_record_in_the_window_is_exit_75_not_a_quiet_night(aws: Moto, tmp_path: Path) -> None:
    aws.seed(page([result(d.isoformat(), []) for d in DAYS]))
    lines = records([Flow("10.0.1.201", "10.0.2.211", GB, D("2026-11-01"))], addresses(BROKEN))
    (tmp_path / "old.log").write_bytes(s3_body(lines[D("2026-11-01")]))
    code, out, err = _cli("--flow-logs", str(tmp_path), "--from-file", str(BROKEN))
    assert code == 75 and out == ""
    assert "no flow-log record of 2026-11-24..2026-11-27" in err


def test_every_member_of_a_gzip_object_is_read(aws: Moto, tmp_path: Path) -> None:
    """gzip allows members one after the other (`cat a.gz b.gz`), and `gzip -d` reads them all:
    so does the audit (the second member was once dropped without a word)."""
    import gzip

    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    first, *rest = sorted(lines)
    (tmp_path / "all.log.gz").write_bytes(
        s3_body(lines[first]) + b"".join(gzip.compress(("\n".join(lines[d]) + "\n").encode(), mtime=0)
                                         for d in rest))
    code, out, err = _cli(BASES, "--flow-logs", str(tmp_path), "--from-file", str(BROKEN), "--format", "json")
    assert code == 0, err
    _check_against_truth(json.loads(out), flows)


@pytest.mark.parametrize("damage", ["cut short", "bytes after it", "not gzip inside"])
def test_a_damaged_gzip_object_is_exit_2_never_a_partial_count(aws: Moto, tmp_path: Path, damage: str) -> None:
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    body = s3_body([ln for d in sorted(lines) for ln in lines[d]])
    body = {"cut short": body[: len(body) * 2 // 3], "bytes after it": body + b"more text\n",
            "not gzip inside": body[:10] + b"\xff" * (len(body) - 10)}[damage]
    f = tmp_path / "all.log.gz"
    f.write_bytes(body)
    code, out, err = _cli(BASES, "--flow-logs", str(tmp_path), "--from-file", str(BROKEN))
    assert (code, out) == (2, ""), err
    (line,) = err.splitlines()
    assert f"{f}: " in line and ("gzip" in line), line


def test_flow_log_options_need_flow_logs(aws: Moto) -> None:
    code, _, err = _cli("--from-file", str(BROKEN))
    assert code == 2 and "belong to --flow-logs" in err


def _docs_report(aws: Moto, monkeypatch: pytest.MonkeyPatch, fmt: str) -> str:
    monkeypatch.chdir(REPO)  # the report names the snapshot as given: a repository path
    aws.reset()
    flows = split_night()
    lines = records(flows, addresses(BROKEN))
    aws.seed(_ce_pages(lines, flows, DAYS))
    code, out, err = _cli("fixtures/live/eks/bases", "--flow-logs", _seed_s3(lines),
                          "--from-file", "fixtures/live/eks/live-broken.json", "--format", fmt)
    assert code == 0, err
    return out


def test_docs_show_the_per_job_report_this_test_renders(aws: Moto,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    text = _docs_report(aws, monkeypatch, "text")
    start = text.index("Measured inter-AZ bytes per training job")
    section = text[start:text.index("\n\n", start)]
    assert section in (REPO / "docs" / "audit.md").read_text(), "docs/audit.md sample is stale"
    job = section[section.index(f"  {JOB}:"):section.index("    why:")]
    assert job in (REPO / "README.md").read_text(), "README.md per-job sample is stale"
