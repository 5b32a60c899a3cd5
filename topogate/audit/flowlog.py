"""Read VPC Flow Logs records (version 5 fields), trusting nothing in them.

A flow-log line that cannot be read must never count as zero bytes: the per-job report would
then call a talker quiet. Every problem names the object (file, S3 object, log stream) and the
line, and all of them are counted at once (the first SHOWN_PROBLEMS kept, so a broken object of
a million lines costs no more memory than one); the caller turns them into one error. Records
are handed to the caller's sink one by one as they are read, never collected.

Fields the attribution needs: `az-id` (the zone of the network interface that captured the
record), `pkt-srcaddr` and `pkt-dstaddr` (the packet's own addresses, so pod IPs in ENI mode),
`bytes`, `start`, `end` (Unix seconds). Others may be present in any order; the format comes
from the header line S3 delivery writes, or from the flow log's LogFormat for CloudWatch Logs.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

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
_PLAIN_ASCII = bytes(range(0x20, 0x7F)) + b"\t\n"  # the ASCII characters _CONTROL lets through
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

    @functools.cached_property
    def positions(self) -> tuple[int, ...]:
        """Where az-id, pkt-srcaddr, pkt-dstaddr, bytes, start, end and log-status (-1 when
        absent) are in a line: looked up once per format, not once per record."""
        return (*(self.fields.index(f) for f in REQUIRED),
                self.fields.index("log-status") if "log-status" in self.fields else -1)


@dataclass
class Problems:
    """Every problem counted, the first SHOWN_PROBLEMS kept (module doc)."""

    shown: list[str] = field(default_factory=list)
    total: int = 0

    def add(self, problem: str) -> None:
        self.total += 1
        if len(self.shown) < SHOWN_PROBLEMS:
            self.shown.append(problem)

    def extend(self, problems: Iterable[str]) -> None:
        for p in problems:
            self.add(p)


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


@functools.lru_cache(maxsize=4096)  # a flow log names a few addresses many times over
def _is_address(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _bad_line(text: str) -> bool:
    """Over MAX_LINE_CHARS or holding a character of _CONTROL. An ASCII line is checked by
    deleting the characters it may hold and seeing whether any is left: a C loop, where the
    pattern costs some nanoseconds a character (padded lines of 4 KiB add up)."""
    if len(text) > MAX_LINE_CHARS:
        return True
    if text.isascii():
        return bool(text.encode("ascii").translate(None, _PLAIN_ASCII))
    return _CONTROL.search(text) is not None


def _record(source: str, lineno: int, parts: list[str], fmt: FlowFormat) -> FlowRecord | None | str:
    """A record, None for a record without data (NODATA, SKIPDATA), or the problem."""
    if len(parts) != len(fmt.fields):
        return f"{len(parts)} fields, the format has {len(fmt.fields)}"
    i_az, i_src, i_dst, i_bytes, i_start, i_end, i_status = fmt.positions
    raw = parts[i_bytes]
    if i_status >= 0 and parts[i_status] in ("NODATA", "SKIPDATA") and raw == "-":
        return None
    az = parts[i_az]
    if not _AZ_ID.fullmatch(az):
        return f"az-id {az[:40]!r} is not a zone id (use1-az1)"
    for f, i in (("pkt-srcaddr", i_src), ("pkt-dstaddr", i_dst)):
        if not _is_address(parts[i]):
            return f"{f} {parts[i][:40]!r} is not an IP address"
    if not raw.isdigit() or not raw.isascii():
        return f"bytes {raw[:40]!r} is not a count"
    n = int(raw[:20])
    if len(raw) > 15 or n > MAX_RECORD_BYTES:
        return f"bytes {raw[:40]} is over {MAX_RECORD_BYTES:.0e}, not one interval of one interface"
    times = []
    for f, i in (("start", i_start), ("end", i_end)):
        if not _EPOCH.fullmatch(parts[i]):
            return f"{f} {parts[i][:40]!r} is not Unix seconds"
        times.append(int(parts[i]))
    start, end = times
    if end < start or end - start > MAX_RECORD_SECONDS:
        return f"start {start} .. end {end} is not one aggregation interval"
    return FlowRecord(source, lineno, az, parts[i_src], parts[i_dst], n, start, end)


def parse_lines(source: str, lines: Iterable[tuple[int, str]], fmt: FlowFormat | None,
                problems: Problems, sink: Callable[[FlowRecord], None], *, header: bool) -> int:
    """Hand each record of one source to `sink`; how many records of it were SKIPDATA (lost
    by AWS).

    `lines` are (line number, text), blank lines left out or not. `header`: line 1 names the
    fields (S3 objects, files); it overrides `fmt`. Problems are added as 'source:line: what'.
    """
    skipped = 0
    first = True
    for lineno, raw in lines:
        text = raw.rstrip("\r\n")
        if header and first:
            first = False
            if lineno != 1:
                problems.add(f"{source}:1: empty: no header line naming the fields")
                return 0
            if _bad_line(text):
                problems.add(f"{source}:1: not a flow-log line (control characters or over "
                             f"{MAX_LINE_CHARS} characters)")
                return 0
            try:
                fmt = format_from_header(text, source)
            except FlowLogProblems as err:
                problems.extend(err.problems)
                return 0
            continue
        if _bad_line(text):
            problems.add(f"{source}:{lineno}: not a flow-log line (control characters or "
                         f"over {MAX_LINE_CHARS} characters)")
            continue
        parts = text.split()
        if not parts:
            continue
        if fmt is None:
            problems.add(f"{source}:{lineno}: no format: give --flow-log-format")
            return skipped
        got = _record(source, lineno, parts, fmt)
        if isinstance(got, str):
            problems.add(f"{source}:{lineno}: {got}")
        elif got is None:
            skipped += "SKIPDATA" in parts
        else:
            sink(got)
    if header and first:
        problems.add(f"{source}:1: empty: no header line naming the fields")
    return skipped


__all__ = ["DEFAULT_LOG_FORMAT", "MAX_LINE_CHARS", "FlowLogProblems", "FlowRecord", "Problems",
           "format_from_log_format", "parse_lines"]
