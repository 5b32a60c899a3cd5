"""Where flow-log lines come from: local files, S3 objects (as flow-log delivery writes them), or a
CloudWatch Logs group. Each source yields chunks: a name (the file, the object, the log stream),
its lines as (line number, text), streamed, and whether its first line is a header.

Nothing is read whole. A file or object is read in blocks of READ_BYTES, inflated (gzip, every
member of it) in blocks of at most READ_BYTES, and cut into lines as it goes, blank lines
skipped in C; a line is held only up to MAX_LINE_BYTES (past that it is cut, and reported as
too long by the parser), so what one object costs in memory is a few blocks, whatever its
size. A compressed object larger than MAX_OBJECT_BYTES once inflated, a gzip stream cut short
or followed by other bytes, and text that is not UTF-8 are errors, never a silently truncated
count. CloudWatch Logs is read a page of events at a time, each event one line of its stream,
its pages followed by the one paging mechanism (topogate.audit.session.follow_pages): a
nextToken answered twice is exit 75 naming the group, never a partial sum.

S3 and CloudWatch Logs are read through boto3 with the standard credential chain and endpoint
overrides (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_CLOUDWATCH_LOGS); every call checks the
audit's deadline.
"""

from __future__ import annotations

import datetime as dt
import functools
import os
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from topogate.audit.errors import AuditError, InvocationError, TemporaryError, classify
from topogate.audit.flowlog import MAX_LINE_CHARS
from topogate.audit.session import follow_pages, scrubbed_session

MAX_OBJECT_BYTES = 1 << 30
MAX_OBJECTS = 100_000
READ_BYTES = 1 << 20
# A line longer than this many bytes has more than MAX_LINE_CHARS characters (UTF-8 spends at
# most 4 bytes on one): it is cut here, and the parser reports it as too long.
MAX_LINE_BYTES = 4 * MAX_LINE_CHARS + 4
# Flow-log delivery to S3 writes keys .../vpcflowlogs/REGION/YYYY/MM/DD/...: objects of days
# outside the window (one day of slack either side: delivery runs late) are not read.
_KEY_DAY = re.compile(r"/([0-9]{4})/([0-9]{2})/([0-9]{2})/")
_LINE = re.compile(rb"[^\n]+")
_GZIP = b"\x1f\x8b"

Lines = Iterable[tuple[int, str]]


@dataclass(frozen=True)
class Chunk:
    name: str
    lines: Lines  # (line number, text), streamed: read them once, in order
    header: bool  # line 1 names the fields


Deadline = Callable[[], None]
Read = Callable[[int], bytes]  # read(n): at most n bytes, b"" at the end


def _inflated(name: str, read: Read) -> Iterator[bytes]:
    """The object's bytes in blocks, inflated when it is gzip (every member, as `gzip -d`)."""
    data = read(READ_BYTES)
    while 0 < len(data) < 2:  # a short first read: the magic number needs two bytes
        more = read(READ_BYTES)
        if not more:
            break
        data += more
    total = 0
    if data[:2] != _GZIP:
        while data:
            total += len(data)
            if total > MAX_OBJECT_BYTES:
                raise InvocationError(f"{name}: over {MAX_OBJECT_BYTES} bytes; not a flow-log object (split it)")
            yield data
            data = read(READ_BYTES)
        return
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    while True:
        try:
            out = d.decompress(data, READ_BYTES)
        except zlib.error as err:
            raise InvocationError(f"{name}: not a readable gzip object ({err})") from None
        data = d.unconsumed_tail
        if out:
            total += len(out)
            if total > MAX_OBJECT_BYTES:
                raise InvocationError(f"{name}: over {MAX_OBJECT_BYTES} bytes once inflated; not a "
                                      "flow-log object (split it)")
            yield out
        if d.eof:  # a member ended: another may follow (zero bytes of padding are allowed)
            rest = d.unused_data.lstrip(b"\0")
            while len(rest) < 2:  # what follows, two bytes of it at least (reads may be short)
                more = read(READ_BYTES)
                if not more:
                    break
                rest = (rest + more).lstrip(b"\0")
            if not rest:
                return
            if rest[:2] != _GZIP:
                raise InvocationError(f"{name}: bytes after the end of its gzip stream; not a flow-log object")
            d, data = zlib.decompressobj(16 + zlib.MAX_WBITS), rest
        elif not out and not data:  # all output given: more input is needed
            data = read(READ_BYTES)
            if not data:
                raise InvocationError(f"{name}: not a readable gzip object (cut short before its end)")


def _decoded(name: str, number: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InvocationError(f"{name}:{number}: not UTF-8 text (byte {err.start} of the line): not a "
                              "flow-log object") from None


def _cut(raw: bytes | bytearray) -> str:
    """A line over MAX_LINE_BYTES, its head only: enough for the parser to call it too long."""
    return bytes(raw[:MAX_LINE_BYTES]).decode("utf-8", errors="replace")


def numbered_lines(name: str, blocks: Iterable[bytes]) -> Iterator[tuple[int, str]]:
    """(line number, text) of every line that is not empty, from blocks of bytes (module doc)."""
    number = 1  # the line the next byte belongs to
    pending = bytearray()  # the head of line `number`, whose end is not read yet
    cut = False  # line `number` is over MAX_LINE_BYTES: the rest of it is skipped
    for block in blocks:
        nl = block.find(b"\n")
        if nl < 0:
            if not cut:
                pending += block
                cut = len(pending) > MAX_LINE_BYTES
            continue
        if not cut:
            pending += block[:nl]
        if pending:
            yield number, (_cut(pending) if cut or len(pending) > MAX_LINE_BYTES
                           else _decoded(name, number, bytes(pending)))
        pending, cut = bytearray(), False
        number += 1
        pos, last = nl + 1, block.rfind(b"\n")
        for m in _LINE.finditer(block, pos, last):
            number += block.count(b"\n", pos, m.start())
            pos = m.end()
            raw = m.group()
            yield number, (_cut(raw) if len(raw) > MAX_LINE_BYTES else _decoded(name, number, raw))
        number += block.count(b"\n", pos, last + 1)
        pending += block[last + 1:]
        cut = len(pending) > MAX_LINE_BYTES
    if pending:
        yield number, (_cut(pending) if cut else _decoded(name, number, bytes(pending)))


def object_lines(name: str, read: Read) -> Lines:
    return numbered_lines(name, _inflated(name, read))


def local_chunks(path: str) -> Iterator[Chunk]:
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
    if not files:
        raise InvocationError(f"{path}: no flow-log file there")
    for f in files:
        try:
            fh = open(f, "rb")  # closed once the chunk's lines are read (the `with` below)
        except OSError as err:
            raise InvocationError(f"{f}: cannot read: {err.strerror}") from None
        with fh:
            yield Chunk(f, object_lines(f, functools.partial(_read_file, f, fh)), header=True)


def _read_file(name: str, fh: Any, n: int) -> bytes:
    try:
        return bytes(fh.read(n))
    except OSError as err:
        raise InvocationError(f"{name}: cannot read: {err.strerror}") from None


def _key_in_window(key: str, start: dt.date, end: dt.date) -> bool:
    m = _KEY_DAY.search(key)
    if not m:
        return True
    try:
        day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError:
        return True
    return start - dt.timedelta(days=1) <= day <= end


def _client(service: str, max_attempts: int) -> Any:
    # lazy: as boto3 above
    from botocore.config import Config

    try:
        return scrubbed_session().client(service, config=Config(
            retries={"mode": "standard", "total_max_attempts": max_attempts},
            connect_timeout=10, read_timeout=60))
    except Exception as exc:  # noqa: BLE001 - mapped to the audit's exit codes
        raise classify(exc, requests=0) from None


def _aws(call: Callable[[], Any], what: str) -> Any:
    try:
        return call()
    except AuditError:
        raise
    except Exception as exc:  # noqa: BLE001 - mapped to the audit's exit codes
        err = classify(exc, requests=0)
        raise type(err)(f"{what}: {err.message}") from None


def s3_chunks(url: str, start: dt.date, end: dt.date, deadline: Deadline,
              max_attempts: int = 4) -> Iterator[Chunk]:
    bucket, _, prefix = url.removeprefix("s3://").partition("/")
    if not bucket:
        raise InvocationError(f"{url}: no bucket (s3://BUCKET/PREFIX)")
    s3 = _client("s3", max_attempts)
    keys: list[str] = []
    token: str | None = None
    while True:
        deadline()
        kw: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
        if token:
            kw["ContinuationToken"] = token
        resp = _aws(functools.partial(s3.list_objects_v2, **kw), f"listing {url}")
        keys.extend(str(o["Key"]) for o in resp.get("Contents") or [] if not str(o["Key"]).endswith("/"))
        if len(keys) > MAX_OBJECTS:
            raise InvocationError(f"{url}: over {MAX_OBJECTS} objects; give a narrower prefix")
        token = resp.get("NextContinuationToken")
        if not resp.get("IsTruncated") or not token:
            break
    keys = sorted(k for k in keys if _key_in_window(k, start, end))
    if not keys:
        raise TemporaryError(f"{url}: no flow-log object for {start}..{end}; delivery may lag, or "
                             "the prefix is wrong")
    for key in keys:
        deadline()
        name = f"s3://{bucket}/{key}"
        obj = _aws(functools.partial(s3.get_object, Bucket=bucket, Key=key), f"reading {name}")
        body = obj["Body"]
        try:
            yield Chunk(name, object_lines(name, functools.partial(_read_body, name, body, deadline)), header=True)
        finally:
            body.close()


def _read_body(name: str, body: Any, deadline: Deadline, n: int) -> bytes:
    deadline()
    return bytes(_aws(functools.partial(body.read, n), f"reading {name}"))


def logs_chunks(group: str, start: dt.date, end: dt.date, deadline: Deadline,
                max_attempts: int = 4) -> Iterator[Chunk]:
    """Every event of the group in the window, a page at a time: one chunk per log stream of
    each page, its events numbered on from the stream's events of earlier pages."""
    logs = _client("logs", max_attempts)
    t0 = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp() * 1000)
    t1 = int(dt.datetime.combine(end, dt.time(), dt.UTC).timestamp() * 1000)

    def fetch(token: str | None) -> Any:
        deadline()
        kw: dict[str, Any] = {"logGroupName": group, "startTime": t0, "endTime": t1 - 1}
        if token:
            kw["nextToken"] = token
        return _aws(functools.partial(logs.filter_log_events, **kw), f"reading logs:{group}")

    def token_of(resp: Any) -> str | None:
        token = resp.get("nextToken")
        return str(token) if token else None

    numbers: dict[str, int] = {}  # events of each stream so far
    count = 0
    for resp in follow_pages(fetch, token_of, f"FilterLogEvents of logs:{group}", "nextToken", max_pages=None):
        page: dict[str, list[tuple[int, str]]] = {}
        for ev in resp.get("events") or []:
            stream = str(ev.get("logStreamName", ""))
            numbers[stream] = numbers.get(stream, 0) + 1
            page.setdefault(stream, []).append((numbers[stream], str(ev.get("message", ""))))
            count += 1
        if count > MAX_OBJECTS * 100:
            raise InvocationError(f"logs:{group}: over {MAX_OBJECTS * 100} events in the window")
        for stream in sorted(page):
            yield Chunk(f"logs:{group}/{stream}", page[stream], header=False)
    if not numbers:
        raise TemporaryError(f"logs:{group}: no flow-log event for {start}..{end}; delivery may "
                             "lag, or the group is wrong")


def chunks(source: str, start: dt.date, end: dt.date, deadline: Deadline,
           max_attempts: int = 4) -> Iterator[Chunk]:
    """s3://BUCKET/PREFIX, logs:GROUP, or a local file or directory."""
    if source.startswith("s3://"):
        return s3_chunks(source, start, end, deadline, max_attempts)
    if source.startswith("logs:"):
        return logs_chunks(source.removeprefix("logs:"), start, end, deadline, max_attempts)
    if not os.path.exists(source):
        raise InvocationError(f"--flow-logs {source}: no such file or directory (or give "
                              "s3://BUCKET/PREFIX or logs:GROUP)")
    return local_chunks(source)


__all__ = ["MAX_LINE_BYTES", "chunks", "numbered_lines", "object_lines"]
