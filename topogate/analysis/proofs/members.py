"""What a proof asks about: members (a pod class, or an outside endpoint, and what a finding
says about it), the zone a member may be in, and the port spans a finding names."""

from __future__ import annotations

from dataclasses import dataclass

from topogate.analysis.netpolicy import External, Peer, PodClass
from topogate.core.position import Position

ANY_ZONE = "*"
# How a pod of another network zone sees a hostNetwork pod: it never shares its node (a node is
# in one zone, a zone in one network zone), so never as `host`, always as `remote-node`.
REMOTE_NODE = External(entity="remote-node")

# (protocol, first port, last port)
Span = tuple[str, int, int]

# The cluster's DNS: every pod of every zone resolves names through it, so reaching it on 53
# is the one door every network zone has without the inventory declaring it.
KUBE_DNS = PodClass("kube-system", (("k8s-app", "kube-dns"),))
# The DNS door every zone's pods use. SCTP/53 too: DNS rules written with `protocol: ANY`, as
# Cilium's own examples write them, open it to kube-dns as well, which serves DNS on TCP and
# UDP only; a crossing nothing listens on is no boundary opened.
DNS_SPANS: tuple[Span, ...] = (("TCP", 53, 53), ("UDP", 53, 53), ("SCTP", 53, 53))


def is_dns(pod: PodClass) -> bool:
    """Whether the pods `pod` stands for may be the cluster's DNS (its labels a subset of
    kube-dns's, in kube-system)."""
    return pod.namespace == KUBE_DNS.namespace and set(pod.labels) <= set(KUBE_DNS.labels)


@dataclass(frozen=True)
class Member:
    """A pod class the proof asks about, and what a finding says about it."""

    pod: PodClass
    nz: str  # its network zone; ANY_ZONE for a pod that may run anywhere
    object: str  # "PyTorchJob/ns/name", or a description for a probe pod or a witness
    group: str
    kind: str = ""  # the job kind, for the ports it uses
    pos: Position | None = None
    job: str = ""  # object id of the job it belongs to ("" for probe pods)
    # hostNetwork: true: `pod` holds its labels, but Cilium sees the node's identity (`peer`)
    host_network: bool = False
    external: External | None = None  # a witness outside the cluster (world, a CIDR, an FQDN)

    @property
    def peer(self) -> Peer:
        if self.external is not None:
            return self.external
        return REMOTE_NODE if self.host_network else self.pod


def span_text(s: Span) -> str:
    proto, lo, hi = s
    return f"{lo}/{proto}" if lo == hi else f"{lo}-{hi}/{proto}"


__all__ = ["ANY_ZONE", "DNS_SPANS", "KUBE_DNS", "REMOTE_NODE", "Member", "Span", "is_dns", "span_text"]
