"""Ports: ``toPorts``/NP port specs (numbers, ranges, named ports, protocol defaults) and the
``PortRange`` classes a trace reports.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from topogate.analysis.netpolicy.model import _L4_PROTOCOLS, _MAX_PORT, Peer, PodClass, Verdict


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
class _PortSpec:
    protocols: frozenset[str]
    start: int  # 0: every port
    end: int
    name: str | None = None  # named port, resolved against the destination pod

    def resolve(self, dst: Peer) -> list[tuple[frozenset[str], int, int]]:
        """Concrete (protocols, start, end) ranges this spec covers for destination ``dst``."""
        if self.name is None:
            if self.start == 0:
                return [(self.protocols, 1, _MAX_PORT)]
            return [(self.protocols, self.start, self.end)]
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


def _port_spec(raw: Mapping[str, Any], default_protos: frozenset[str]) -> _PortSpec:
    """``default_protos`` is what a missing protocol means: every L4 protocol for Cilium, TCP for NP."""
    proto = str(raw.get("protocol") or "").upper()
    if proto == "":
        protos = default_protos
    elif proto == "ANY":
        protos = _L4_PROTOCOLS
    else:
        protos = frozenset({proto})
    number, name = _parse_port_value(raw.get("port"))
    if name is not None:
        return _PortSpec(protos, 0, 0, name)  # endPort is ignored for named ports
    end = raw.get("endPort")
    try:
        end_i = int(end) if end is not None else number
    except (TypeError, ValueError):
        end_i = number
    end_i = max(end_i, number)  # an endPort below port is ignored
    return _PortSpec(protos, number, end_i)
