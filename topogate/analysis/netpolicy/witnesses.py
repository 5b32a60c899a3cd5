"""Witnesses: for each peer selector of a rule, the pods (or outside endpoints) it describes.

A proof that quantifies over every pod cannot enumerate pods; it enumerates what the rules can
tell apart. A peer matcher admits a set of peers; its witness is one member of that set, built
from the selector itself, so whatever the rule decides for the set it decides for the witness:

- an endpoint selector (CNP `fromEndpoints`/`toEndpoints`, a NetworkPolicy `podSelector`):
  a pod carrying the labels its `matchLabels` and `In`/`Exists` expressions require (`NotIn` and
  `DoesNotExist` are met by leaving the key out), with the `k8s:`/`any:` prefixes stripped, in
  the namespace the selector names (`io.kubernetes.pod.namespace`), else the policy's own for a
  CNP or NetworkPolicy, else (a CCNP) a namespace no inventory manages; namespace labels a
  selector or a `namespaceSelector` requires are carried by the witness's namespace; a service
  account it names is the witness's;
- entities: the outside endpoint each names (`world`, `host`, `remote-node`, ...), and for
  `cluster`/`all` an unlabelled pod of an unmanaged namespace as well;
- a CIDR: an address inside it and outside its `except` blocks; an FQDN: a name it matches;
- fromNodes/toNodes: the `remote-node` entity.

A selector that nothing can satisfy (`In` and `NotIn` on the same value) has no witness. The
words of each witness say what it stands for in a finding ("any pod of namespace tools", "pods
app=dashboard in namespace data", "10.0.0.0/8").
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from topogate.analysis.netpolicy.labels import (
    CLUSTER_LABEL,
    NAMESPACE_LABELS_PREFIX,
    POD_NAMESPACE_LABEL,
    SERVICE_ACCOUNT_LABEL,
)
from topogate.analysis.netpolicy.model import External, Peer, PodClass
from topogate.analysis.netpolicy.peers import (
    AnyPeer,
    CIDRMatcher,
    EndpointMatcher,
    EntityMatcher,
    FQDNMatcher,
    NetworkPolicyPeerMatcher,
    NodeMatcher,
    PeerMatcher,
)
from topogate.analysis.netpolicy.selectors import CompiledSelector, Requirement
from topogate.core.labels import NAMESPACE_NAME_LABEL

# The namespace of a witness whose selector leaves the namespace open: one no inventory manages.
OPEN_NAMESPACE = "topogate-witness"
_ANY_VALUE = "topogate-witness"  # a value for `Exists`


@dataclass(frozen=True)
class Witness:
    peer: Peer
    words: str  # what it stands for, in a finding


def _solve(reqs: Iterable[Requirement]) -> dict[str, str] | None:
    """Labels meeting every requirement, or None when no label set can."""
    want: dict[str, set[str] | None] = {}  # key -> allowed values (None: any value)
    banned: dict[str, set[str]] = {}
    absent: set[str] = set()
    for r in reqs:
        if not r.pod_source:
            if r.op in ("In", "Exists"):
                return None  # a source (reserved:, cidr:) no pod carries
            continue
        if r.op == "In":
            prev = want.get(r.key)
            want[r.key] = set(r.values) if prev is None else prev & set(r.values)
        elif r.op == "Exists":
            want.setdefault(r.key, None)
        elif r.op == "NotIn":
            banned.setdefault(r.key, set()).update(r.values)
        elif r.op == "DoesNotExist":
            absent.add(r.key)
        else:
            return None  # an operator nobody understands selects nothing
    out: dict[str, str] = {}
    for key, values in want.items():
        if key in absent:
            return None
        if values is None:
            choice = next(v for v in (_ANY_VALUE, _ANY_VALUE + "-1") if v not in banned.get(key, ()))
        else:
            allowed = sorted(values - banned.get(key, set()))
            if not allowed:
                return None
            choice = allowed[0]
        out[key] = choice
    return out


def _split(labels: dict[str, str]) -> tuple[dict[str, str], str | None, dict[str, str], str | None, bool]:
    """(pod labels, namespace, namespace labels, service account, cluster label seen) of a
    selector's solved labels, as Cilium builds an identity's labels."""
    pod: dict[str, str] = {}
    ns: str | None = None
    ns_labels: dict[str, str] = {}
    sa: str | None = None
    cluster = False
    for k, v in labels.items():
        if k == POD_NAMESPACE_LABEL:
            ns = v
        elif k.startswith(NAMESPACE_LABELS_PREFIX):
            ns_labels[k[len(NAMESPACE_LABELS_PREFIX):]] = v
        elif k == SERVICE_ACCOUNT_LABEL:
            sa = v
        elif k == CLUSTER_LABEL:
            cluster = True
        else:
            pod[k] = v
    return pod, ns, ns_labels, sa, cluster


def _words(ns: str, pod: dict[str, str], ns_labels: dict[str, str]) -> str:
    where = (f"namespace {ns}" if ns != OPEN_NAMESPACE else "any namespace"
             ) + (f" labelled {_shown(ns_labels)}" if ns_labels else "")
    return f"pods {_shown(pod)} in {where}" if pod else f"any pod of {where}"


def _shown(labels: dict[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _pod(ns: str, pod: dict[str, str], ns_labels: dict[str, str], sa: str | None) -> Witness:
    if NAMESPACE_NAME_LABEL in ns_labels:
        ns = ns_labels.pop(NAMESPACE_NAME_LABEL)
    return Witness(PodClass(ns, tuple(sorted(pod.items())), tuple(sorted(ns_labels.items())), (),
                            sa or "default"), _words(ns, pod, ns_labels))


def _endpoint(sel: CompiledSelector, scope: str | None) -> list[Witness]:
    reserved = [r for r in sel.reqs if r.source == "reserved" and r.op in ("In", "Exists")]
    if reserved:
        # A selector with a reserved: key selects that reserved identity (the agent leaves it
        # unscoped): its witness is the entity.
        return [Witness(External(entity=r.key), f"the {r.key} entity") for r in reserved[:1]]
    solved = _solve(sel.reqs)
    if solved is None:
        return []
    pod, ns, ns_labels, sa, _ = _split(solved)
    if ns is not None and scope is not None and ns != scope:
        return []  # names another namespace than the one the policy scopes it to
    return [_pod(ns or scope or OPEN_NAMESPACE, pod, ns_labels, sa)]


def _network_policy(m: NetworkPolicyPeerMatcher) -> list[Witness]:
    pod: dict[str, str] = {}
    if m.pod_sel is not None:
        solved = _solve(m.pod_sel.reqs)
        if solved is None:
            return []
        pod = solved
    if m.ns_sel is None:
        return [_pod(m.policy_ns, pod, {}, None)]
    ns_labels = _solve(m.ns_sel.reqs)
    if ns_labels is None:
        return []
    return [_pod(OPEN_NAMESPACE, pod, ns_labels, None)]


def _cidr(m: CIDRMatcher) -> list[Witness]:
    """An address inside the block and outside every except."""
    candidates = [m.net.network_address, m.net.broadcast_address]
    for x in m.excepts:
        candidates += [x.broadcast_address + 1, x.network_address - 1]
    for addr in candidates:
        if addr in m.net and not any(addr in x for x in m.excepts):
            host = ipaddress.ip_network(f"{addr}/{addr.max_prefixlen}")
            return [Witness(External(cidr=str(host)), f"{addr} (in {m.net})")]
    return []


def _fqdn(m: FQDNMatcher) -> list[Witness]:
    out = []
    for p in m.patterns:
        text = p.pattern
        # the regexes fqdn_regex builds: escaped literals, `[-a-z0-9_]*` for *, a `(...)+` prefix for **.
        name = (text.replace(r"(?:[-a-z0-9_]+\.)+", "w.").replace("[-a-z0-9_]*", "w").replace(".*", "w")
                .replace("\\", ""))
        if p.fullmatch(name):
            # the words are the name or pattern as the rule writes it (a witness `w.example.com`
            # stands for `*.example.com`; shown as such, it would be a name nobody wrote)
            written = (text.replace(r"(?:[-a-z0-9_]+\.)+", "**.").replace("[-a-z0-9_]*", "*")
                       .replace(".*", "*").replace("\\", ""))
            out.append(Witness(External(fqdn=name), written))
    return out


def _nodes(m: NodeMatcher) -> list[Witness]:
    """A node the selector describes (its labels solved), as the remote-node entity. The proofs
    place the inventory's pools in its stead where they know them (analysis.proofs.witness)."""
    if m.sel is None or not m.sel.reqs:
        return [Witness(External(entity="remote-node"), "any node (fromNodes/toNodes)")]
    solved = _solve(m.sel.reqs)
    if solved is None:
        return []
    return [Witness(External(entity="remote-node", labels=tuple(sorted(solved.items()))),
                    f"nodes {_shown(solved)}" if solved else "any node (fromNodes/toNodes)")]


def _unmanaged_pod() -> Witness:
    return Witness(PodClass(OPEN_NAMESPACE, (), (), (), "default"), "any pod of any namespace")


def witnesses(m: PeerMatcher) -> list[Witness]:
    """The witnesses of one peer matcher (module doc)."""
    if isinstance(m, EndpointMatcher):
        return _endpoint(m.sel, m.scope_ns)
    if isinstance(m, NetworkPolicyPeerMatcher):
        return _network_policy(m)
    if isinstance(m, EntityMatcher):
        out = [Witness(External(entity=e), f"the {e} entity") for e in sorted(m.entities)
               if e not in ("all", "cluster")]
        if "all" in m.entities:
            out.append(Witness(External(entity="world"), "the world entity"))
        if m.entities & {"all", "cluster"}:
            out += [_unmanaged_pod(), Witness(External(entity="remote-node"), "the remote-node entity")]
        return out
    if isinstance(m, CIDRMatcher):
        return _cidr(m)
    if isinstance(m, FQDNMatcher):
        return _fqdn(m)
    if isinstance(m, NodeMatcher):
        return _nodes(m)
    if isinstance(m, AnyPeer):
        return [_unmanaged_pod(), Witness(External(entity="world"), "the world entity")]
    return []


__all__ = ["OPEN_NAMESPACE", "Witness", "witnesses"]
