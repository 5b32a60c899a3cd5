"""Where flow-log lines come from: local files, S3 objects (as flow-log delivery writes them), or a
CloudWatch Logs group. Each source yields (name, lines, has_header) per object or log stream.

S3 and CloudWatch Logs are read through boto3 with the standard credential chain and endpoint
overrides (AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL_CLOUDWATCH_LOGS); every call checks the
audit's deadline. A compressed object larger than MAX_OBJECT_BYTES once inflated is an error,
never a silently truncated count.
"""

from __future__ import annotations

import datetime as dt
import functools
import gzip
import os
import re
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from topogate.audit.errors import AuditError, InvocationError, TemporaryError, classify
from topogate.audit.session import scrubbed_session

MAX_OBJECT_BYTES = 1 << 30
MAX_OBJECTS = 100_000
# Flow-log delivery to S3 writes keys .../vpcflowlogs/REGION/YYYY/MM/DD/...: objects of days
# outside the window (one day of slack either side: delivery runs late) are not read.
_KEY_DAY = re.compile(r"/([0-9]{4})/([0-9]{2})/([0-9]{2})/")


@dataclass(frozen=True)
class Chunk:
    name: str
    lines: tuple[str, ...]
    header: bool  # the first line names the fields


Deadline = Callable[[], None]


def _text(name: str, data: bytes) -> tuple[str, ...]:
    if data[:2] == b"\x1f\x8b":
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = d.decompress(data, MAX_OBJECT_BYTES + 1)
        except (zlib.error, EOFError, gzip.BadGzipFile) as err:
            raise InvocationError(f"{name}: not a readable gzip object ({err})") from None
        if len(data) > MAX_OBJECT_BYTES or d.unconsumed_tail:
            raise InvocationError(f"{name}: over {MAX_OBJECT_BYTES} bytes once inflated; not a "
                                  "flow-log object (split it)")
    try:
        return tuple(data.decode("utf-8").splitlines())
    except UnicodeDecodeError as err:
        line = data[:err.start].count(b"\n") + 1
        raise InvocationError(f"{name}:{line}: not UTF-8 text (byte {err.start}): not a "
                              "flow-log object") from None


def local_chunks(path: str) -> Iterator[Chunk]:
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
    if not files:
        raise InvocationError(f"{path}: no flow-log file there")
    for f in files:
        try:
            with open(f, "rb") as fh:
                data = fh.read(MAX_OBJECT_BYTES + 1)
        except OSError as err:
            raise InvocationError(f"{f}: cannot read: {err.strerror}") from None
        yield Chunk(f, _text(f, data), header=True)


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
        data = _aws(functools.partial(obj["Body"].read, MAX_OBJECT_BYTES + 1), f"reading {name}")
        yield Chunk(name, _text(name, data), header=True)


def logs_chunks(group: str, start: dt.date, end: dt.date, deadline: Deadline,
                max_attempts: int = 4) -> Iterator[Chunk]:
    """Every event of the group in the window, one chunk per log stream (events in order)."""
    logs = _client("logs", max_attempts)
    t0 = int(dt.datetime.combine(start, dt.time(), dt.UTC).timestamp() * 1000)
    t1 = int(dt.datetime.combine(end, dt.time(), dt.UTC).timestamp() * 1000)
    streams: dict[str, list[str]] = {}
    token: str | None = None
    seen: set[str] = set()
    count = 0
    while True:
        deadline()
        kw: dict[str, Any] = {"logGroupName": group, "startTime": t0, "endTime": t1 - 1}
        if token:
            kw["nextToken"] = token
        resp = _aws(functools.partial(logs.filter_log_events, **kw), f"reading logs:{group}")
        for ev in resp.get("events") or []:
            streams.setdefault(str(ev.get("logStreamName", "")), []).append(str(ev.get("message", "")))
            count += 1
        if count > MAX_OBJECTS * 100:
            raise InvocationError(f"logs:{group}: over {MAX_OBJECTS * 100} events in the window")
        token = resp.get("nextToken")
        if not token or token in seen:
            break
        seen.add(token)
    if not streams:
        raise TemporaryError(f"logs:{group}: no flow-log event for {start}..{end}; delivery may "
                             "lag, or the group is wrong")
    for stream in sorted(streams):
        yield Chunk(f"logs:{group}/{stream}", tuple(streams[stream]), header=False)


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


__all__ = ["Chunk", "MAX_OBJECT_BYTES", "chunks", "local_chunks", "logs_chunks", "s3_chunks"]
