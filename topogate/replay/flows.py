"""Reading `hubble observe -o json`: one flow (Hubble's flow.Flow, possibly wrapped as
``{"flow": {...}}``) per line, read as a stream.

Every line is bounded (``MAX_LINE`` bytes; a longer one is an error at its line, skipped
without holding it), decoded and checked on its own; every bad line is collected, so one run
lists all of them at ``FILE:line``. An address that is none (``IP.source`` of ``10.0.1.999``)
is a bad line, never the `world` it would otherwise fall to. A file in which no line is a flow
record (a recording wrapped by another tool, ``{"result": {...}}`` per line, or an empty one)
is a problem of the file: replaying it would say "0 flows" of a recording that holds some.
Nothing is decided here: a ``Flow`` is the observed facts only (the two endpoints as Hubble
labelled them, the destination port, the verdict).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

MAX_LINE = 1 << 20  # 1 MiB: a Hubble flow is a few KiB
PROTOCOLS = ("TCP", "UDP", "SCTP")
# What a line may be, named in the error for a file of no flow.
SHAPES = ("one JSON object per line: Hubble's flow.Flow, or {\"flow\": {...}} as "
          "`hubble observe -o json` writes it")


@dataclass(frozen=True)
class FlowEnd:
    """One endpoint as Hubble saw it."""

    ip: str
    namespace: str
    pod: str
    labels: tuple[tuple[str, str], ...]  # k8s: labels, source prefix removed
    reserved: tuple[str, ...]  # reserved:world, reserved:host, ... without the prefix
    service_account: str = ""
    # the DNS names Cilium's DNS proxy saw this address answered for (Hubble's source_names /
    # destination_names): what a toFQDNs rule selects the address by
    names: tuple[str, ...] = ()


@dataclass(frozen=True)
class Flow:
    line: int
    src: FlowEnd
    dst: FlowEnd
    protocol: str
    port: int
    verdict: str  # FORWARDED | DROPPED | ...
    is_reply: bool
    direction: str  # INGRESS | EGRESS | TRAFFIC_DIRECTION_UNKNOWN
    drop_reason: str = ""


@dataclass(frozen=True)
class BadLine:
    file: str
    line: int
    message: str

    def __str__(self) -> str:
        # line 0: a problem of the whole file (no line of it is a flow)
        return f"{self.file}:{self.line}:1: {self.message}" if self.line else f"{self.file}: {self.message}"


_SA = "io.cilium.k8s.policy.serviceaccount"
_CILIUM = ("io.kubernetes.pod.", "io.cilium.k8s.")


def _names(flow: dict[str, Any], key: str) -> tuple[str, ...]:
    value = flow.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{key} must be a list of DNS names")
    return tuple(sorted({v.lower().rstrip(".") for v in value if v.strip()}))


def _end(raw: Any, ip: str, what: str, names: tuple[str, ...] = ()) -> FlowEnd:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ValueError(f"{what} is not an object")
    labels: dict[str, str] = {}
    reserved: list[str] = []
    sa = ""
    for item in raw.get("labels") or ():
        if not isinstance(item, str):
            raise ValueError(f"{what}.labels holds a non-string")
        source, _, rest = item.partition(":")
        key, _, value = rest.partition("=")
        if source == "reserved":
            reserved.append(key)
        elif source == "k8s" and key == _SA:
            sa = value
        elif source == "k8s" and not key.startswith(_CILIUM):
            labels[key] = value
    ns, pod = raw.get("namespace", ""), raw.get("pod_name", "")
    if not isinstance(ns, str) or not isinstance(pod, str):
        raise ValueError(f"{what}.namespace and pod_name must be strings")
    if not (ns or reserved or ip):
        raise ValueError(f"{what} has no namespace, no reserved identity and no IP address: nothing to decide it by")
    return FlowEnd(ip, ns, pod, tuple(sorted(labels.items())), tuple(sorted(reserved)), sa, names)


def _port(l4: Any) -> tuple[str, int]:
    if not isinstance(l4, dict):
        raise ValueError("l4 is missing: no TCP, UDP or SCTP destination port")
    for proto in PROTOCOLS:
        body = l4.get(proto)
        if isinstance(body, dict):
            port = body.get("destination_port")
            if not isinstance(port, int) or isinstance(port, bool) or not 1 <= port <= 65535:
                raise ValueError(f"l4.{proto}.destination_port must be 1-65535")
            return proto, port
    raise ValueError("l4 has no TCP, UDP or SCTP part")


def _ip(ips: dict[str, Any], key: str) -> str:
    """IP.source or IP.destination: an address, or "" when the flow has none."""
    value = ips.get(key, "")
    if not isinstance(value, str):
        raise ValueError("IP.source and IP.destination must be strings")
    if value:
        try:
            ipaddress.ip_address(value)
        except ValueError:
            raise ValueError(f"IP.{key} {json.dumps(value[:64])} is not an IP address") from None
    return value


class _NotAFlow(Exception):
    """A JSON object that is no flow record (a lost-events notice, or not Hubble's at all)."""

    def __init__(self, keys: list[str]) -> None:
        super().__init__("not a flow")
        self.keys = keys


def _parse(text: str, line: int) -> Flow | None:
    """One line: the L4 flow, None for a flow with no port (ICMP); _NotAFlow for a record
    that is no flow."""
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError("not a JSON object")
    flow = obj.get("flow", obj)
    if not isinstance(flow, dict):
        raise ValueError("flow is not an object")
    if "flow" in obj or "source" in flow or "l4" in flow:
        l4 = flow.get("l4")
        if isinstance(l4, dict) and not any(p in l4 for p in PROTOCOLS):
            return None  # ICMP: no port to decide
        proto, port = _port(l4)
        ips = flow.get("IP") or {}
        if not isinstance(ips, dict):
            raise ValueError("IP is not an object")
        src_ip, dst_ip = _ip(ips, "source"), _ip(ips, "destination")
        verdict = flow.get("verdict", "")
        reply = flow.get("is_reply", False)
        if not isinstance(verdict, str) or not isinstance(reply, bool):
            raise ValueError("verdict must be a string and is_reply a boolean")
        return Flow(line, _end(flow.get("source"), src_ip, "source", _names(flow, "source_names")),
                    _end(flow.get("destination"), dst_ip, "destination", _names(flow, "destination_names")),
                    proto, port, verdict, reply, str(flow.get("traffic_direction", "")),
                    str(flow.get("drop_reason_desc", "")))
    raise _NotAFlow([str(k) for k in obj])  # lost_events, node status, or another tool's wrapping


def _no_flow(file: str, lines: int, first: tuple[int, list[str]] | None) -> BadLine:
    if not lines:
        read = "the file is empty"
    else:
        read = f"{lines} line{'s' if lines != 1 else ''} read"
        if first is not None:
            number, keys = first
            shown = ", ".join(k[:40] for k in keys[:5]) + (", ..." if len(keys) > 5 else "")
            read += f"; line {number} has the keys: {shown or 'none'}"
    return BadLine(file, 0, f"no line is a Hubble flow ({read}); give {SHAPES}")


def read_flows(stream: IO[bytes], file: str, bad: list[BadLine]) -> Iterator[Flow]:
    """The flows of a stream, one line at a time; bad lines are appended to ``bad``, and a
    file in which no line is a flow record is a problem of its own (module doc)."""
    number = lines = records = 0
    other: tuple[int, list[str]] | None = None  # the first line that is JSON but no flow
    while True:
        chunk = stream.readline(MAX_LINE + 1)
        if not chunk:
            if not records:
                bad.append(_no_flow(file, lines, other))
            return
        number += 1
        if len(chunk) > MAX_LINE and not chunk.endswith(b"\n"):
            bad.append(BadLine(file, number, f"line longer than {MAX_LINE} bytes"))
            while chunk and not chunk.endswith(b"\n"):  # skip the rest without holding it
                chunk = stream.readline(MAX_LINE + 1)
            continue
        text = chunk.strip()
        if not text:
            continue
        lines += 1
        try:
            got = _parse(text.decode("utf-8"), number)
        except _NotAFlow as no:
            if other is None:
                other = (number, no.keys)
            continue
        except UnicodeDecodeError:
            bad.append(BadLine(file, number, "not UTF-8"))
            continue
        except json.JSONDecodeError as err:
            bad.append(BadLine(file, number, f"not JSON ({err.msg}, column {err.colno}); truncated?"))
            continue
        except (ValueError, RecursionError) as err:
            bad.append(BadLine(file, number, str(err)))
            continue
        records += 1
        if got is not None:
            yield got


__all__ = ["MAX_LINE", "SHAPES", "BadLine", "Flow", "FlowEnd", "read_flows"]
