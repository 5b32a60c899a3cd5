"""The value types of network-policy evaluation (pods, externals, references, verdicts), the
policy kinds and the two directions: what every other module of the package shares.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ACTION_ACCEPT", "ACTION_DENY", "ACTION_PASS", "DIRECTION_EGRESS", "DIRECTION_INGRESS", "KIND_ANP",
           "KIND_BANP", "KIND_CCNP", "KIND_CNP", "KIND_KCNP", "KIND_NP", "POLICY_KINDS", "TIER_ADMIN",
           "TIER_BASELINE", "TIER_NORMAL", "Cited", "External", "Peer", "PodClass", "PolicyError",
           "PolicyRef", "RuleRef", "SideVerdict", "SourceRef", "Verdict", "policy_key"]

# ---------------------------------------------------------------------------------------------
# Public value types
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SourceRef:
    """Where a YAML object (or a part of it) came from; line and column are 1-based."""

    file: str
    line: int
    column: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class PodClass:
    """A class of pods with identical labels, i.e. what Cilium turns into one identity."""

    namespace: str
    labels: tuple[tuple[str, str], ...]
    # kubernetes.io/metadata.name=<namespace> is always implied.
    namespace_labels: tuple[tuple[str, str], ...] = ()
    # Named container ports (name, number, protocol), for named ports in toPorts / NP ports.
    ports: tuple[tuple[str, int, str], ...] = ()
    service_account: str | None = None

    def __post_init__(self) -> None:
        # Every cache of the evaluator is keyed by pod classes, so a flow hashes several: the
        # hash of the fields (nested tuples) is computed once, when the class is made.
        object.__setattr__(self, "_hash", hash(
            (self.namespace, self.labels, self.namespace_labels, self.ports, self.service_account)))

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined, no-any-return]

    def __getstate__(self) -> dict[str, object]:
        # A copy in another process hashes its strings with another seed: never carry it over.
        return {k: v for k, v in self.__dict__.items() if k != "_hash"}

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)
        self.__post_init__()

    def __str__(self) -> str:
        shown = ",".join(f"{k}={v}" for k, v in self.labels)
        return f"{self.namespace}/{{{shown}}}"


@dataclass(frozen=True)
class External:
    """The non-pod side of a flow: an entity ("world", "host", "kube-apiserver", "cluster",
    "remote-node", ...), a CIDR or single IP, or a DNS name (matched by toFQDNs)."""

    entity: str | None = None
    cidr: str | None = None
    fqdn: str | None = None
    # A node (entity host or remote-node): its labels where known (a pool of the inventory), which
    # fromNodes/toNodes select by; () for a node of unknown labels, which every node selector may name.
    labels: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        parts = [p for p in (self.entity, self.cidr, self.fqdn) if p]
        shown = "/".join(parts) if parts else "world"
        if self.labels:
            shown += "{" + ",".join(f"{k}={v}" for k, v in self.labels) + "}"
        return shown


Peer = PodClass | External


@dataclass(frozen=True, slots=True)
class PolicyRef:
    kind: str
    namespace: str | None  # None for CiliumClusterwideNetworkPolicy
    name: str
    source: SourceRef

    def __str__(self) -> str:
        if self.namespace is None:
            return f"{self.kind}/{self.name}"
        return f"{self.kind}/{self.namespace}/{self.name}"


@dataclass(frozen=True, slots=True)
class RuleRef:
    policy: PolicyRef
    section: str  # "ingress" | "ingressDeny" | "egress" | "egressDeny"
    index: int  # index of the rule inside its section
    source: SourceRef
    spec_index: int | None = None  # index into a CNP's ``specs`` list, None for ``spec``

    def __str__(self) -> str:
        where = "" if self.spec_index is None else f" of specs[{self.spec_index}]"
        return f"{self.section} rule {self.index}{where} of {self.policy} ({self.source})"


@dataclass(frozen=True, slots=True)
class Cited:
    """"allowed by <rule> (file:line)", written out only when read: a caller's source may find
    its line only when asked (tracing a built policy back to its file parses sources), and most
    verdicts are never shown."""

    verb: str  # "allowed" | "denied"
    rule: RuleRef

    def __str__(self) -> str:
        return f"{self.verb} by {self.rule}"


@dataclass(frozen=True, slots=True)
class SideVerdict:
    enforced: bool  # is default deny in force in this direction
    selected_by: tuple[PolicyRef, ...]
    allowed: bool
    decided_by: RuleRef | None  # the allow or deny rule that decided it
    why: str | Cited  # the sentence `reason` reads
    # Policies that switched default deny on in this direction (empty when not enforced).
    enforced_by: tuple[PolicyRef, ...] = ()

    @property
    def reason(self) -> str:
        return self.why if isinstance(self.why, str) else str(self.why)


@dataclass(frozen=True, slots=True)
class Verdict:
    allowed: bool
    egress: SideVerdict  # the sender side (not applicable when the sender is External)
    ingress: SideVerdict  # the receiver side (not applicable when the receiver is External)

    @property
    def reason(self) -> str:
        if not self.egress.allowed:
            return f"egress: {self.egress.reason}"
        if not self.ingress.allowed:
            return f"ingress: {self.ingress.reason}"
        return f"egress: {self.egress.reason}; ingress: {self.ingress.reason}"

    @property
    def decided_by(self) -> RuleRef | None:
        """The rule that denied the flow, or None (default deny, or allowed)."""
        if not self.egress.allowed:
            return self.egress.decided_by
        if not self.ingress.allowed:
            return self.ingress.decided_by
        return None


# ---------------------------------------------------------------------------------------------
# Constants
# ---------------------------------------------------------------------------------------------

KIND_CNP = "CiliumNetworkPolicy"
KIND_CCNP = "CiliumClusterwideNetworkPolicy"
KIND_NP = "NetworkPolicy"
# policy.networking.k8s.io (network-policy-api): v1alpha2 ClusterNetworkPolicy, which Cilium 1.20
# enforces behind --enable-k8s-cluster-network-policy, and the v1alpha1 pair it replaced, which
# Cilium never read.
KIND_KCNP = "ClusterNetworkPolicy"
KIND_ANP = "AdminNetworkPolicy"
KIND_BANP = "BaselineAdminNetworkPolicy"

# Every kind the evaluator reads, and those of them without a namespace.
POLICY_KINDS = (KIND_CNP, KIND_CCNP, KIND_NP, KIND_KCNP, KIND_ANP, KIND_BANP)
CLUSTER_SCOPED_POLICY_KINDS = frozenset((KIND_CCNP, KIND_KCNP, KIND_ANP, KIND_BANP))


def policy_key(kind: str, namespace: str | None, name: str) -> str:
    """A policy as `PolicyRef` prints it: clusterwide kinds have no namespace, a namespaced one
    without metadata.namespace lives in ``default``."""
    if kind in CLUSTER_SCOPED_POLICY_KINDS:
        return f"{kind}/{name}"
    return f"{kind}/{namespace or 'default'}/{name}"


# The tiers a side is decided in, in order: the Admin tier of ClusterNetworkPolicy, then the
# policies of Cilium and Kubernetes (CNP, CCNP, NP), then the Baseline tier (Cilium
# pkg/policy/types: Admin, Normal, Baseline).
TIER_ADMIN = "Admin"
TIER_NORMAL = "Normal"
TIER_BASELINE = "Baseline"

# The actions of a tiered rule (ClusterNetworkPolicy ``action``).
ACTION_ACCEPT = "Accept"
ACTION_DENY = "Deny"
ACTION_PASS = "Pass"

# The two sides of a flow: the keys of a unit's rule tables and the word a verdict's sentence
# uses. DIRECTION_ in the name because "ingress" is also a Cilium entity (peers.py).
DIRECTION_INGRESS = "ingress"
DIRECTION_EGRESS = "egress"


class PolicyError(ValueError):
    """A policy object too malformed to evaluate (the API server would have rejected it)."""

    def __init__(self, source: SourceRef, message: str):
        super().__init__(f"{source.file}:{source.line}:{source.column}: {message}")
        self.source = source
        self.message = message
