"""The answer of ``topogate trace``: resolved endpoints, the port asked about, each side's
summary and the verdict per port class; and ``TraceError``, what bad input raises."""

from __future__ import annotations

from dataclasses import dataclass

from topogate.analysis.netpolicy import Peer, PodClass, PolicyRef, PortRange, SourceRef
from topogate.core.exitcodes import exit_when
from topogate.core.position import Position

DEFAULT_NAMESPACE = "default"


class TraceError(Exception):
    """Bad input: printed as one line (``file:line:column: message`` when there is a place)."""

    def __init__(self, message: str, pos: Position | None = None) -> None:
        super().__init__(f"{pos}: {message}" if pos else message)
        self.message = message
        self.pos = pos


@dataclass(frozen=True)
class Endpoint:
    """One side of the trace, resolved."""

    spec: str  # as the user wrote it
    kind: str  # workload | labels | entity | cidr | fqdn
    peer: Peer
    object: str | None = None  # "PyTorchJob/ml-demo/train" for a workload
    group: str | None = None  # replica group of a training job
    source: Position | None = None  # where its pod template is written
    notes: tuple[str, ...] = ()  # e.g. what the inventory says about it

    @property
    def is_pod(self) -> bool:
        return isinstance(self.peer, PodClass)

    @property
    def display(self) -> str:
        if self.object is not None:
            kind, ns, name = self.object.split("/", 2)
            return f"{ns}/{kind}/{name}" + (f"/{self.group}" if self.group else "")
        if isinstance(self.peer, PodClass):
            labels = ",".join(f"{k}={v}" for k, v in self.peer.labels)
            return f"{self.peer.namespace}:{labels}"
        return str(self.peer)


@dataclass(frozen=True)
class PortQuery:
    port: int
    protocol: str
    name: str | None = None  # the container-port name it was resolved from

    def __str__(self) -> str:
        named = f" ({self.name})" if self.name else ""
        return f"{self.port}/{self.protocol}{named}"


@dataclass(frozen=True)
class SideSummary:
    """What is true of one side for every port: who selects the pod, and is it default deny."""

    direction: str  # egress | ingress
    applies: bool  # False when that side is not a Cilium endpoint (world, a CIDR, ...)
    enforced: bool
    selected_by: tuple[PolicyRef, ...]
    enforced_by: tuple[PolicyRef, ...]
    # Where each enforcing policy's rules of this direction start (its `ingress:`/`egress:`
    # key): what a default-deny verdict cites as its deciding line.
    enforced_at: tuple[SourceRef, ...] = ()


@dataclass(frozen=True)
class TraceResult:
    src: Endpoint
    dst: Endpoint
    port: PortQuery | None  # None: answered per port class
    egress: SideSummary
    ingress: SideSummary
    classes: tuple[PortRange, ...]  # one entry with start == end == port when --port is given
    namespace_labels: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    cluster: str = "default"
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str:
        allowed = [c.verdict.allowed for c in self.classes]
        if all(allowed):
            return "allowed"
        if not any(allowed):
            return "denied"
        return "partial"

    @property
    def exit_code(self) -> int:
        return exit_when(self.verdict != "allowed")  # denied or partial: any class denied
