"""Read VPC Flow Logs records (version 5 fields), trusting nothing in them.

A flow-log line that cannot be read must never count as zero bytes: the per-job report would
then call a talker quiet. Every problem names the object (file, S3 object, log stream) and the
line, and all of them are reported at once; the caller turns them into one error.

Fields the attribution needs: `az-id` (the zone of the network interface that captured the
record), `pkt-srcaddr` and `pkt-dstaddr` (the packet's own addresses, so pod IPs in ENI mode),
`bytes`, `start`, `end` (Unix seconds). Others may be present in any order; the format comes
from the header line S3 delivery writes, or from the flow log's LogFormat for CloudWatch Logs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

REQUIRED = ("az-id", "pkt-srcaddr", "pkt-dstaddr", "bytes", "start", "end")
# The LogFormat of the custom format docs/audit.md asks for (CloudWatch Logs has no header).
DEFAULT_LOG_FORMAT = ("${version} ${account-id} ${interface-id} ${az-id} ${pkt-srcaddr} "
                      "${pkt-dstaddr} ${bytes} ${start} ${end} ${action} ${log-status}")
# A record covers one aggregation interval (at most 10 minutes) of one interface: more bytes than
# a 3.2 Tbit/s interface moves in a day is not a record but a broken line.
MAX_RECORD_BYTES = 10**14
MAX_LINE_CHARS = 4096
MAX_RECORD_SECONDS = 86400
# Problems listed in the error; the rest are counted.
SHOWN_PROBLEMS = 20
_AZ_ID = re.compile(r"[a-z]{2,5}[0-9]{1,2}(?:-[a-z0-9]{2,12})?-az[0-9]{1,2}")
_FIELD = re.compile(r"[a-z][a-z0-9-]{0,40}")
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]")
_EPOCH = re.compile(r"[0-9]{9,11}")


@dataclass(frozen=True)
class FlowRecord:
    """One accepted record: where it was read, and the fields the attribution uses."""

    source: str  # the file, s3://bucket/key or logs:GROUP/STREAM it came from
    line: int  # 1-based line (or event) in that source
    az_id: str
    src: str
    dst: str
    bytes: int
    start: int  # Unix seconds
    end: int


@dataclass(frozen=True)
class FlowFormat:
    fields: tuple[str, ...]

    def index(self, name: str) -> int:
        return self.fields.index(name)


class FlowLogProblems(Exception):
    """Lines that are not VPC Flow Logs records; `problems` name source:line each."""

    def __init__(self, problems: list[str], total: int) -> None:
        super().__init__(f"{total} flow-log problem(s)")
        self.problems = problems
        self.total = total


def _check_fields(fields: tuple[str, ...], where: str) -> FlowFormat:
    bad = [f for f in fields if not _FIELD.fullmatch(f)]
    if bad:
        raise FlowLogProblems([f"{where}: {bad[0][:40]!r} is not a flow-log field name"], 1)
    dup = sorted({f for f in fields if fields.count(f) > 1})
    if dup:
        raise FlowLogProblems([f"{where}: field {dup[0]} appears twice"], 1)
    missing = [f for f in REQUIRED if f not in fields]
    if missing:
        raise FlowLogProblems([
            f"{where}: the format lacks {', '.join(missing)}: create the flow log with a custom "
            f"format holding {' '.join('${' + f + '}' for f in REQUIRED)} (version 5 fields)"], 1)
    return FlowFormat(fields)


def format_from_log_format(log_format: str) -> FlowFormat:
    """`${version} ${az-id} ...` (the flow log's LogFormat) -> its fields, in order."""
    parts = log_format.split()
    names = []
    for p in parts:
        if not (p.startswith("${") and p.endswith("}")):
            raise FlowLogProblems([f"--flow-log-format: {p[:40]!r} is not a ${{field}}"], 1)
        names.append(p[2:-1])
    return _check_fields(tuple(names), "--flow-log-format")


def format_from_header(header: str, source: str) -> FlowFormat:
    """The first line of an S3-delivered object names its fields (`version account-id ...`)."""
    return _check_fields(tuple(header.split()), f"{source}:1 (header)")


def _record(source: str, lineno: int, parts: list[str], fmt: FlowFormat) -> FlowRecord | None | str:
    """A record, None for a record without data (NODATA, SKIPDATA), or the problem."""
    if len(parts) != len(fmt.fields):
        return f"{len(parts)} fields, the format has {len(fmt.fields)}"
    value = dict(zip(fmt.fields, parts, strict=True))
    if value.get("log-status") in ("NODATA", "SKIPDATA") and value["bytes"] == "-":
        return None
    az = value["az-id"]
    if not _AZ_ID.fullmatch(az):
        return f"az-id {az[:40]!r} is not a zone id (use1-az1)"
    for f in ("pkt-srcaddr", "pkt-dstaddr"):
        try:
            ipaddress.ip_address(value[f])
        except ValueError:
            return f"{f} {value[f][:40]!r} is not an IP address"
    raw = value["bytes"]
    if not raw.isdigit() or not raw.isascii():
        return f"bytes {raw[:40]!r} is not a count"
    n = int(raw[:20])
    if len(raw) > 15 or n > MAX_RECORD_BYTES:
        return f"bytes {raw[:40]} is over {MAX_RECORD_BYTES:.0e}, not one interval of one interface"
    times = []
    for f in ("start", "end"):
        if not _EPOCH.fullmatch(value[f]):
            return f"{f} {value[f][:40]!r} is not Unix seconds"
        times.append(int(value[f]))
    start, end = times
    if end < start or end - start > MAX_RECORD_SECONDS:
        return f"start {start} .. end {end} is not one aggregation interval"
    return FlowRecord(source, lineno, az, value["pkt-srcaddr"], value["pkt-dstaddr"], n, start,
                      end)


def parse_lines(source: str, lines: Iterable[str], fmt: FlowFormat | None,
                problems: list[str], *, header: bool) -> tuple[list[FlowRecord], int]:
    """Records of one source, and how many records of it were SKIPDATA (lost by AWS).

    `header`: the first line names the fields (S3 objects, files); it overrides `fmt`. Problems
    are appended as 'source:line: what'.
    """
    records: list[FlowRecord] = []
    skipped = 0
    for lineno, text in enumerate(lines, start=1):
        text = text.rstrip("\r\n")
        if len(text) > MAX_LINE_CHARS or _CONTROL.search(text):
            problems.append(f"{source}:{lineno}: not a flow-log line (control characters or "
                            f"over {MAX_LINE_CHARS} characters)")
            continue
        if header and lineno == 1:
            try:
                fmt = format_from_header(text, source)
            except FlowLogProblems as err:
                problems.extend(err.problems)
                return [], 0
            continue
        if not text.strip():
            continue
        if fmt is None:
            problems.append(f"{source}:{lineno}: no format: give --flow-log-format")
            return records, skipped
        got = _record(source, lineno, text.split(), fmt)
        if isinstance(got, str):
            problems.append(f"{source}:{lineno}: {got}")
        elif got is None:
            skipped += "SKIPDATA" in text.split()
        else:
            records.append(got)
    if header and fmt is None:
        problems.append(f"{source}:1: empty: no header line naming the fields")
    return records, skipped


def raise_problems(problems: list[str]) -> None:
    if problems:
        raise FlowLogProblems(problems[:SHOWN_PROBLEMS], len(problems))


__all__ = ["DEFAULT_LOG_FORMAT", "REQUIRED", "FlowFormat", "FlowLogProblems", "FlowRecord",
           "format_from_header", "format_from_log_format", "parse_lines", "raise_problems"]
