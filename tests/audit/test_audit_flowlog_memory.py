"""`audit egress --flow-logs`: memory grows with what is summed, not with what is read.

A flow-log object is read as a stream and each record is added to the sums as it goes by, so
the audit's peak memory is bounded by the distinct (job, zone pair, day) keys, not by the
records, the lines or the inflated size. Two objects: one that inflates to 1 GiB (the most the
audit reads of one object), 1 MiB blocks of padded records of one job's two zone pairs over the
window's three days; and 64 MiB of blank lines after a few records (63 KiB of gzip, which
peaked at 1.8 GiB when objects were read whole). Each is served by moto_server on 127.0.0.1 and
read by the audit in a child process under an address-space limit, whose peak resident size
(ru_maxrss from wait4) must stay under 200 MiB. The gzip stream is made without inflating 1 GiB anywhere: one block is deflated
after a full flush (which makes what follows independent of what came before) and that output
repeated, between a gzip header and a trailer carrying the CRC and size of the whole.
"""

from __future__ import annotations

import datetime as dt
import gzip
import io
import json
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import boto3
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.register_assert_rewrite("audit_support", "flowlog_support")
pytest_plugins = ["audit_support"]
from audit_support import Moto, page, result  # noqa: E402
from conftest import TOPOGATE  # noqa: E402
from flowlog_support import ACCOUNT, FIELDS, JOB, addresses, s3_key  # noqa: E402

from topogate.audit.errors import InvocationError  # noqa: E402
from topogate.audit.flowsource import MAX_LINE_BYTES, numbered_lines, object_lines  # noqa: E402

REPO = Path(__file__).resolve().parent.parent.parent
INVENTORY = "fixtures/audit/flowlogs/inventory.yaml"
BROKEN = "fixtures/live/eks/live-broken.json"
DAYS = (dt.date(2026, 11, 24), dt.date(2026, 11, 25), dt.date(2026, 11, 26))
BLOCK = 1 << 20
INFLATED = 1 << 30  # the audit's bound on one object once inflated: at the bound, not over it
LINE = 4096  # a record padded to the longest line the audit reads, newline included
PEAK_MIB = 200
AS_LIMIT = 3 << 30  # a child that held the object would fail here, long before the machine does
RECORD_BYTES = 1000


def _records(book: dict) -> list[bytes]:  # type: ignore[type-arg]
    """The job's master (us-east-1a) and worker-1 (us-east-1b), each way, on each day."""
    master, worker = "10.0.1.201", "10.0.2.211"
    out = []
    for day in DAYS:
        t0 = int(dt.datetime.combine(day, dt.time(), dt.UTC).timestamp()) + 3600
        for src, dst in ((master, worker), (worker, master)):
            text = (f"5 {ACCOUNT} eni-0a{src[-3:]} {book[src].zone_id} {src} {dst} {RECORD_BYTES} {t0} "
                    f"{t0 + 60} ACCEPT OK")
            out.append(text.encode().ljust(LINE - 1) + b"\n")
    return out


def _block(lines: list[bytes], header: bool, most: int) -> tuple[bytes, int]:
    """One BLOCK of at most `most` records (after the header line in the first), and how many
    it holds."""
    out = bytearray((FIELDS + "\n").encode() if header else b"")
    n = 0
    while len(out) + LINE <= BLOCK and n < most:
        out += lines[n % len(lines)]
        n += 1
    out += b"\n" * (BLOCK - len(out))  # blank lines to the block's end
    return bytes(out), n


def gzip_stream(first: bytes, block: bytes, repeat: int) -> bytes:
    """gzip of `first` then `block` `repeat` times, deflating `block` once (module doc)."""
    c = zlib.compressobj(1, zlib.DEFLATED, -15)  # level 1: inflates at memory speed
    head = c.compress(first) + c.flush(zlib.Z_FULL_FLUSH)
    body = c.compress(block) + c.flush(zlib.Z_FULL_FLUSH)
    crc = zlib.crc32(first)
    for _ in range(repeat):
        crc = zlib.crc32(block, crc)
    size = len(first) + repeat * len(block)
    last = zlib.compressobj(1, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)  # an empty final block
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + head + body * repeat + last
            + struct.pack("<II", crc, size & 0xFFFFFFFF))


def test_the_stream_maker_makes_gzip() -> None:
    first, block = b"head\n" * 3, b"0123456789\n" * 100
    assert zlib.decompress(gzip_stream(first, block, 5), 16 + zlib.MAX_WBITS) == first + block * 5


# argv: the file for the peak RSS (KiB), the address-space limit, the command. The soft limit
# only: the audit may still give its own children (git) the limit it chooses.
_SPAWN = """
import os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (int(sys.argv[2]), resource.RLIM_INFINITY))
proc = subprocess.Popen(sys.argv[3:])
_, status, usage = os.wait4(proc.pid, 0)
open(sys.argv[1], "w").write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize(("inflated", "per_block"), [(INFLATED, BLOCK), (64 * BLOCK, 0)],
                         ids=["1 GiB of padded records", "64 MiB of blank lines"])
def test_an_object_is_summed_in_under_200_mib(moto_ce: Moto, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             inflated: int, per_block: int) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", moto_ce.url)
    lines = _records(addresses(REPO / BROKEN))
    first, in_first = _block(lines, header=True, most=max(per_block, len(lines)))
    block, per_block = _block(lines, header=False, most=per_block)
    repeat = (inflated - len(first)) // BLOCK
    assert len(first) + repeat * BLOCK == inflated
    body = gzip_stream(first, block, repeat)
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket="flow-logs", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
    s3.put_object(Bucket="flow-logs", Key=s3_key(DAYS[0], 0), Body=body)
    moto_ce.seed(page([result(d.isoformat(), []) for d in DAYS]))
    out, err = tmp_path / "out.json", tmp_path / "err.txt"
    with out.open("wb") as o, err.open("wb") as e:
        # Spawned and waited for by a small Python, which reports the peak: a child forked from
        # this test process would count the pages it shares with it until exec (a long pytest
        # run grows them) in its own peak RSS.
        peak = tmp_path / "peak"
        proc = subprocess.run(
            [sys.executable, "-c", _SPAWN, str(peak), str(AS_LIMIT), *TOPOGATE, "audit", "egress", INVENTORY,
             "--flow-logs", "s3://flow-logs/AWSLogs/", "--from-file", BROKEN, "--format", "json",
             "--start", DAYS[0].isoformat(), "--end", (DAYS[-1] + dt.timedelta(1)).isoformat()],
            cwd=REPO, stdout=o, stderr=e, check=False)
    assert proc.returncode == 0, err.read_text()[-2000:]
    fl = json.loads(out.read_text())["flowLogs"]
    records = in_first + per_block * repeat
    assert fl["records"] == records
    (job,) = fl["jobs"]
    assert job["job"] == JOB and job["bytes"] == records * RECORD_BYTES
    assert sorted(d["date"] for d in job["days"]) == [d.isoformat() for d in DAYS]
    peak_mib = int(peak.read_text()) / 1024  # KiB on Linux
    assert peak_mib < PEAK_MIB, f"peak RSS {peak_mib:.0f} MiB reading {len(body)} bytes that inflate to {inflated}"


# --- the lines of a stream of blocks, wherever the blocks are cut ----------------------------

_PIECES = st.one_of(st.just(b""), st.just(b"\r"), st.binary(max_size=8).filter(lambda b: b"\n" not in b),
                    st.builds(lambda c, n: c * n, st.sampled_from([b"a", b" ", "\u00e9".encode(), "\u2028".encode()]),
                              st.integers(1, MAX_LINE_BYTES + 10)))


@settings(max_examples=200, deadline=None)
@given(pieces=st.lists(_PIECES, max_size=12), end_nl=st.booleans(), cuts=st.lists(st.integers(0, 1 << 16), max_size=8))
def test_numbered_lines_are_the_lines_of_the_whole(pieces: list[bytes], end_nl: bool, cuts: list[int]) -> None:
    """Line numbers and text as if the object were split whole (blank lines left out, a line
    over MAX_LINE_BYTES cut to its head), whatever blocks it arrives in."""
    data = b"\n".join(pieces) + (b"\n" if end_nl and pieces else b"")
    points = sorted({min(c, len(data)) for c in cuts} | {0, len(data)})
    blocks = [data[a:b] for a, b in zip(points, points[1:], strict=False)]
    want = []
    for number, raw in enumerate(data.split(b"\n"), 1):
        if not raw:
            continue
        if len(raw) > MAX_LINE_BYTES:
            want.append((number, raw[:MAX_LINE_BYTES].decode("utf-8", errors="replace")))
        else:
            try:
                want.append((number, raw.decode("utf-8")))
            except UnicodeDecodeError:
                want.append((number, None))
                break
    got: list[tuple[int, str | None]] = []
    try:
        got.extend(numbered_lines("obj", blocks))
    except InvocationError as err:
        assert want and want[-1][1] is None and str(err).startswith(f"obj:{want[-1][0]}: not UTF-8 text")
        got.append((want[-1][0], None))
    assert got == want


@settings(max_examples=100, deadline=None)
@given(members=st.lists(st.binary(max_size=3000), min_size=1, max_size=4), padding=st.integers(0, 3),
       reads=st.lists(st.integers(1, 70_000), min_size=1, max_size=6))
def test_gzip_objects_read_in_any_pieces_are_what_gzip_reads(members: list[bytes], padding: int,
                                                               reads: list[int]) -> None:
    """The lines of a gzip object of several members (and the zero bytes gzip allows after
    them), read however short each read is, are those of the bytes Python's gzip inflates."""
    body = b"".join(gzip.compress(m, mtime=0) for m in members) + b"\0" * padding
    plain = gzip.decompress(body)
    stream = io.BytesIO(body)
    sizes = iter(reads * (len(body) + 1))

    def read(n: int) -> bytes:
        return stream.read(min(n, next(sizes)))

    def lines(read_: object, data: bytes | None = None) -> list[tuple[int, str]] | str:
        try:
            return list(object_lines("obj", read_) if data is None else numbered_lines("obj", [data]))  # type: ignore[arg-type]
        except InvocationError as err:
            return str(err)

    assert lines(read) == lines(None, plain)
