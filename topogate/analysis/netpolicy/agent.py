"""The Cilium agent as configured: its version and the settings that change a verdict.

A verdict depends on the agent that enforces it, not only on the policies: which labels make up a
pod's identity (the agent's ``labels`` option), whether CIDR rules may select nodes
(``policy-cidr-match-mode``), whether fromNodes/toNodes are accepted
(``enable-node-selector-labels``), whether the local host reaches its pods (``allow-localhost``),
the enforcement mode (``enable-policy``), the cluster name every identity carries (``cluster-name``),
where the kube-apiserver runs (which identity its address gets), and whether Kubernetes
ClusterNetworkPolicy is read at all (the hidden ``enable-k8s-cluster-network-policy``).

`Agent` holds them, each defaulting to what the named version does when the option is not set
(read from that version's sources: pkg/defaults, pkg/option, daemon/cmd, pkg/labelsfilter).
Every caller gets it from one place, `agent_for` (the inventory cluster's ``cilium:`` block), and
hands it to `PolicySet`; nothing else reads those settings. What the inventory leaves unset is
remembered (`Agent.unset`), so an answer that depends on it can say so.

The versions topogate knows, newest last, and what differs between them (each read from the
version's own sources, served by the Go module proxy as github.com/cilium/cilium):

- 1.18: the default label filter keeps ``topology.kubernetes.io`` labels; ``fromRequires`` and
  ``toRequires`` are enforced; no ``cluster-mesh`` entity; ClusterNetworkPolicy is not read.
- 1.19: the default label filter drops ``topology.kubernetes.io`` labels (cilium/cilium#43725);
  the CRDs allow no ``fromRequires``/``toRequires`` item (``maxItems: 0``): the API server refuses
  a policy that has one.
- 1.20: the ``cluster-mesh`` entity; ClusterNetworkPolicy with enable-k8s-cluster-network-policy
  (default off: not read).

Every one of them applies a NetworkPolicy's ingress and egress rules whatever its ``policyTypes``
says (pkg/k8s ParseNetworkPolicy iterates both; cilium/cilium#48703): a NetworkPolicy with
``policyTypes: [Egress]`` and ingress rules isolates its pods' ingress too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from topogate.inventory.model import CiliumConfig

__all__ = ["DEFAULT_VERSION", "KNOWN_VERSIONS", "Agent", "LabelFilter", "agent_for"]

# "major.minor.patch" of every version whose sources were read, newest last.
KNOWN_VERSIONS = ("1.18.0", "1.19.0", "1.20.0", "1.20.1", "1.20.2")
DEFAULT_VERSION = KNOWN_VERSIONS[-1]
# Where the kube-apiserver runs, named by the identity its address gets besides kube-apiserver:
# a node of the cluster (remote-node to every pod not on it), the pod's own node (host: a
# single-node cluster), or outside the cluster (world: a managed control plane such as EKS).
# This is what is decided when the inventory does not say.
_API_SERVER_DEFAULT = "remote-node"
ALLOW_LOCALHOST = ("auto", "always", "policy")
ENFORCEMENT = ("default", "always", "never")
CIDR_MATCH_MODES = ("nodes", "pods")

_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?$")


def parse_version(text: str) -> tuple[int, int, int] | None:
    """(major, minor, patch) of ``1.20``, ``1.20.2`` or ``v1.20.2``; None for anything else."""
    m = _VERSION.match(text.strip())
    if m is None:
        return None
    return int(m[1]), int(m[2]), int(m[3] or 0)


class LabelFilterError(ValueError):
    pass


@dataclass(frozen=True)
class _Prefix:
    ignore: bool
    source: str  # "" for any source
    expr: re.Pattern[str]
    text: str


def _parse_prefix(text: str) -> _Prefix:
    """One entry of the ``labels`` option: ``[source:][!]regexp`` (pkg/labelsfilter
    parseLabelPrefix). The regexp must match at the key's start."""
    source, sep, prefix = text.partition(":")
    if not sep:
        source, prefix = "", text
    ignore = prefix.startswith("!")
    if ignore:
        prefix = prefix[1:]
    if not prefix:
        raise LabelFilterError(f"{text!r}: an empty prefix")
    try:
        expr = re.compile(prefix)
    except re.error as err:
        raise LabelFilterError(f"{text!r}: not a regular expression: {err}") from None
    return _Prefix(ignore, source, expr, text)


# 1.19 and 1.20's default list (pkg/labelsfilter defaultLabelPrefixCfg); 1.18 lacks the last.
_DEFAULT_PREFIXES = (
    r"reserved:.*",
    re.escape("io.kubernetes.pod.namespace"),
    re.escape("io.cilium.k8s.namespace.labels"),
    re.escape("app.kubernetes.io"),
    re.escape("io.cilium.k8s.policy.cluster"),
    re.escape("io.cilium.k8s.policy.serviceaccount"),
    r"!io\.kubernetes",
    r"!kubernetes\.io",
    "!" + re.escape("statefulset.kubernetes.io/pod-name"),
    "!" + re.escape("apps.kubernetes.io/pod-index"),
    "!" + re.escape("batch.kubernetes.io/job-completion-index"),
    "!" + re.escape("batch.kubernetes.io/controller-uid"),
    r"!.*beta\.kubernetes\.io",
    r"!k8s\.io",
    r"!pod-template-generation",
    r"!pod-template-hash",
    r"!controller-revision-hash",
    r"!controller-uid",
    r"!annotation.*",
    r"!etcd_node",
    r"!topology\.kubernetes\.io",
)


class LabelFilter:
    """Which of a pod's labels make up its identity: the agent's default list plus the ``labels``
    option, decided as pkg/labelsfilter does. A label is kept when no include entry was given and
    no ignore entry matches it, or when the longest include entry matching it matches more of the
    key than the shortest ignore entry that does (``{!foo, foo.bar}`` keeps ``foo.bar``). Python's
    regular expressions stand in for Go's RE2; the entries people write (escaped prefixes,
    ``.*``) mean the same in both."""

    def __init__(self, extra: tuple[str, ...] = (), *, topology: bool = True) -> None:
        defaults = [p for p in _DEFAULT_PREFIXES if topology or "topology" not in p]
        self.prefixes = tuple(_parse_prefix(p) for p in defaults) + tuple(
            _parse_prefix(p) for p in extra if p)
        # An include entry of the user's turns the list into an allow list.
        self.whitelist = any(not _parse_prefix(p).ignore for p in extra if p)
        self._cache: dict[tuple[str, str], bool] = {}

    def keeps(self, key: str, source: str = "k8s") -> bool:
        got = self._cache.get((key, source))
        if got is None:
            got = self._keeps(key, source)
            self._cache[(key, source)] = got
        return got

    def _keeps(self, key: str, source: str) -> bool:
        included = ignored = 0
        for p in self.prefixes:
            if p.source and p.source != source:
                continue
            m = p.expr.search(key)
            if m is None or m.start() != 0:
                continue
            length = m.end()
            if p.ignore:
                if ignored == 0 or length < ignored:
                    ignored = length
            elif length > included:
                included = length
        return (not self.whitelist and ignored == 0) or included > ignored


@dataclass(frozen=True)
class Agent:
    """One cluster's Cilium agent: its version and the settings that change verdicts."""

    version: str = DEFAULT_VERSION
    labels: tuple[str, ...] = ()  # the agent's `labels` option, each entry as written
    policy_cidr_match_mode: tuple[str, ...] = ()
    enable_node_selector_labels: bool = False
    allow_localhost: str = "auto"
    enforcement: str = "default"
    cluster_name: str = "default"
    api_server: str = _API_SERVER_DEFAULT
    enable_k8s_cluster_network_policy: bool = False
    # The settings the inventory did not give (their defaults decide, and answers that depend on
    # them say so), by their names in the inventory.
    unset: frozenset[str] = frozenset()
    label_filter: LabelFilter = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "label_filter", LabelFilter(self.labels, topology=self.at_least(1, 19)))

    @property
    def release(self) -> tuple[int, int, int]:
        got = parse_version(self.version)
        return got if got is not None else (1, 20, 2)

    def at_least(self, major: int, minor: int, patch: int = 0) -> bool:
        return self.release >= (major, minor, patch)

    @property
    def always_allow_localhost(self) -> bool:
        """allow-localhost: the agent in Kubernetes turns auto into always (daemon/cmd/daemon.go)."""
        return self.allow_localhost in ("auto", "always")

    @property
    def requires_enforced(self) -> bool:
        """fromRequires/toRequires are enforced (1.18); 1.19's CRDs allow none."""
        return not self.at_least(1, 19)

    @property
    def has_cluster_mesh_entity(self) -> bool:
        return self.at_least(1, 20)

    @property
    def reads_cluster_network_policy(self) -> bool:
        return self.at_least(1, 20) and self.enable_k8s_cluster_network_policy

    @property
    def words(self) -> str:
        """The agent as a report names it, e.g. 'Cilium 1.20.2 (defaults)'."""
        return f"Cilium {self.version}" + (" (defaults)" if not self.explicit else "")

    @property
    def explicit(self) -> tuple[str, ...]:
        return tuple(k for k in SETTINGS if k not in self.unset and k != "version")


# The settings by their inventory names, in the order a report lists them.
SETTINGS = ("version", "labels", "policyCIDRMatchMode", "enableNodeSelectorLabels", "allowLocalhost",
            "policyEnforcement", "clusterName", "kubeAPIServer", "enableK8sClusterNetworkPolicy")

DEFAULT_AGENT = Agent(unset=frozenset(SETTINGS))


def agent_for(cilium: CiliumConfig | None) -> Agent:
    """The agent of a cluster from its inventory ``cilium:`` block (already validated by the
    inventory's loader), or the newest known version's defaults when there is none. The one
    place every caller gets its agent from."""
    if cilium is None:
        return DEFAULT_AGENT
    given: dict[str, Any] = {name: getattr(cilium, attr) for name, attr in _ATTRS.items()
                             if getattr(cilium, attr) is not None}
    return Agent(
        version=_version(str(given.get("version", DEFAULT_VERSION))),
        labels=tuple(given.get("labels", ())),
        policy_cidr_match_mode=tuple(given.get("policyCIDRMatchMode", ())),
        enable_node_selector_labels=bool(given.get("enableNodeSelectorLabels", False)),
        allow_localhost=str(given.get("allowLocalhost", "auto")),
        enforcement=str(given.get("policyEnforcement", "default")),
        cluster_name=str(given.get("clusterName", "default")),
        api_server=str(given.get("kubeAPIServer", _API_SERVER_DEFAULT)),
        enable_k8s_cluster_network_policy=bool(given.get("enableK8sClusterNetworkPolicy", False)),
        unset=frozenset(k for k in SETTINGS if k not in given),
    )


# The inventory's names of the settings and CiliumConfig's attributes.
_ATTRS = {"version": "version", "labels": "labels", "policyCIDRMatchMode": "policy_cidr_match_mode",
          "enableNodeSelectorLabels": "enable_node_selector_labels", "allowLocalhost": "allow_localhost",
          "policyEnforcement": "policy_enforcement", "clusterName": "cluster_name",
          "kubeAPIServer": "kube_api_server", "enableK8sClusterNetworkPolicy": "enable_k8s_cluster_network_policy"}


def _version(text: str) -> str:
    """A version as written (1.20, v1.20.2) as the known release it is modelled by: the same one,
    else (no patch release written, or one not known) the newest known of its minor."""
    got = parse_version(text)
    if got is None:
        return DEFAULT_VERSION
    exact = ".".join(map(str, got))
    if exact in KNOWN_VERSIONS and text.strip().lstrip("v").count(".") == 2:
        return exact
    same_minor = [v for v in KNOWN_VERSIONS if parse_version(v)[:2] == got[:2]]  # type: ignore[index]
    return same_minor[-1] if same_minor else DEFAULT_VERSION
