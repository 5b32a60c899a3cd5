"""Ports: ``toPorts``/NP port specs (numbers, ranges, named ports, protocol defaults) and the
``PortRange`` classes a trace reports.
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.netpolicy.model import Peer, PodClass, Verdict

__all__ = ["ANY_PROTOCOL", "L4_PROTOCOLS", "MAX_PORT", "PolicyPort", "PortRange", "PortSet", "read_policy_port"]

MAX_PORT = 65535
# The protocols that carry ports, in the order a trace lists them.
L4_PROTOCOLS = ("TCP", "UDP", "SCTP")
# What a CNP port's protocol ``ANY`` (or none) covers: "any protocols with transport ports (TCP,
# UDP, SCTP)" (CRD text of toPorts.ports.protocol).
ANY_PROTOCOL = frozenset(L4_PROTOCOLS)


@dataclass(frozen=True)
class PortRange:
    """A maximal range of ports of one protocol over which the verdict does not change."""

    protocol: str
    start: int
    end: int  # inclusive
    verdict: Verdict

    def __str__(self) -> str:
        ports = str(self.start) if self.start == self.end else f"{self.start}-{self.end}"
        return f"{ports}/{self.protocol}"


# ---------------------------------------------------------------------------------------------
# Ports
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PolicyPort:
    """One port entry of a rule: a CNP ``toPorts[].ports[]`` or a NetworkPolicy ``ports[]``."""

    protocols: frozenset[str]
    start: int  # 0: every port
    end: int
    name: str | None = None  # named port, resolved against the destination pod

    def span(self) -> tuple[int, int]:
        """(first, last) port of a numeric spec (port 0 is every port)."""
        return (1, MAX_PORT) if self.start == 0 else (self.start, self.end)

    def resolve(self, dst: Peer) -> list[tuple[frozenset[str], int, int]]:
        """Concrete (protocols, start, end) ranges this spec covers for destination ``dst``."""
        if self.name is None:
            return [(self.protocols, *self.span())]
        if not isinstance(dst, PodClass):
            return []
        out = []
        for pname, number, proto in dst.ports:
            proto = (proto or "TCP").upper()
            if pname == self.name and proto in self.protocols:
                out.append((frozenset({proto}), int(number), int(number)))
        return out

    def matches(self, port: int, proto: str, dst: Peer) -> bool:
        return any(proto in protos and lo <= port <= hi for protos, lo, hi in self.resolve(dst))


class PortSet:
    """The ports of one rule, indexed. A rule may list thousands of ports (hostile input does),
    and every port class of a trace or a check asks every rule about one port: scanning the specs
    made that quadratic. Numeric specs become, per protocol, sorted disjoint spans (overlapping
    and adjacent ones merged) searched by bisection; named specs become, per protocol, a set of
    names looked up for each of the destination's few named container ports. Answers exactly as
    ``any(spec.matches(...) for spec in specs)`` does."""

    __slots__ = ("_names", "_spans", "shape")

    def __init__(self, specs: Iterable[PolicyPort]) -> None:
        raw: dict[str, list[tuple[int, int]]] = {}
        names: dict[str, set[str]] = {}
        for spec in specs:
            for proto in spec.protocols:
                if spec.name is not None:
                    names.setdefault(proto, set()).add(spec.name)
                else:
                    raw.setdefault(proto, []).append(spec.span())
        self._names = {p: frozenset(n) for p, n in names.items()}
        self._spans = {p: _merge(spans) for p, spans in raw.items()}
        # What `matches` and `edges` answer from, as a value: two sets of one shape admit the
        # same ports to every destination (PolicySet.open_spans keys on it).
        self.shape: tuple[object, ...] = (tuple(sorted(self._spans.items())),
                                          tuple(sorted((p, tuple(sorted(n))) for p, n in self._names.items())))

    def matches(self, port: int, proto: str, dst: Peer) -> bool:
        spans = self._spans.get(proto)
        if spans is not None:
            starts, ends = spans
            i = bisect.bisect_right(starts, port) - 1
            if i >= 0 and port <= ends[i]:
                return True
        names = self._names.get(proto)
        if names and isinstance(dst, PodClass):
            for pname, number, dproto in dst.ports:
                if pname in names and (dproto or "TCP").upper() == proto and int(number) == port:
                    return True
        return False

    def edges(self, proto: str, dst: Peer) -> Iterator[tuple[int, int]]:
        """(first, last) of every span of ``proto`` this set covers for ``dst``: where a verdict
        can change is at a span's first port and just after its last."""
        starts, ends = self._spans.get(proto, ((), ()))
        yield from zip(starts, ends, strict=True)
        names = self._names.get(proto)
        if names and isinstance(dst, PodClass):
            for pname, number, dproto in dst.ports:
                if pname in names and (dproto or "TCP").upper() == proto:
                    yield int(number), int(number)


def _merge(spans: list[tuple[int, int]]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Sorted disjoint (starts, ends) covering the same ports as ``spans``: overlapping and
    adjacent spans merged, so one bisection answers for a port."""
    starts: list[int] = []
    ends: list[int] = []
    for lo, hi in sorted(spans):
        if ends and lo <= ends[-1] + 1:
            ends[-1] = max(ends[-1], hi)
        else:
            starts.append(lo)
            ends.append(hi)
    return tuple(starts), tuple(ends)


def _parse_port_value(value: Any) -> tuple[int, str | None]:
    """(number, name): number 0 means every port."""
    if value is None:
        return 0, None
    if isinstance(value, bool):
        return 0, None
    if isinstance(value, int):
        return value, None
    text = str(value).strip()
    if text == "":
        return 0, None
    if text.isdigit():
        return int(text), None
    return 0, text


@functools.lru_cache(maxsize=64)
def _one_protocol(proto: str) -> frozenset[str]:
    # One set per protocol, not one per port of every rule (a set is 200 bytes).
    return frozenset({proto})


def read_policy_port(raw: Mapping[str, Any], default_protos: frozenset[str]) -> PolicyPort:
    """``default_protos`` is what a missing protocol means: every L4 protocol for Cilium, TCP for NP."""
    proto = str(raw.get("protocol") or "").upper()
    if proto == "":
        protos = default_protos
    elif proto == "ANY":
        protos = ANY_PROTOCOL
    else:
        protos = _one_protocol(proto)
    number, name = _parse_port_value(raw.get("port"))
    if name is not None:
        return PolicyPort(protos, 0, 0, name)  # endPort is ignored for named ports
    end = raw.get("endPort")
    try:
        end_i = int(end) if end is not None else number
    except (TypeError, ValueError):
        end_i = number
    end_i = max(end_i, number)  # an endPort below port is ignored
    return PolicyPort(protos, number, end_i)
