"""TG107 opens-boundary: a policy lets pods cross between network zones that the inventory
separates, on some port of some protocol.

For every ordered pair of network zones of a cluster the analysis proves that no pod of one
reaches a pod of the other on any port of TCP, UDP or SCTP (1-65535, cut into classes at every
port a rule names), except through the doors the inventory declares (`doors:`). The pods asked
about: every replica group of every job, a pod of each network zone that carries only topogate's
`topogate.dev/network-zone` label (in each namespace the inventory manages), and an unlabelled
pod in a namespace nothing manages, which may run in any zone. A finding names the open port
ranges and protocols, the rule that opens them (the finding sits at that rule's own line), both
network zones, and the job kind's own ports inside the range (PyTorchJob 23456, TrainJob 29500,
MPIJob SSH 22). When no policy among the paths decides either side, the finding says that
nothing enforces the boundary and how to include the policies `topogate generate` writes.

Pods with `hostNetwork: true` are asked as Cilium sees them. They are not endpoints: they carry
the node's identity, which a pod of another network zone (always on another node) sees as
`remote-node`. As senders, the receiving zone's ingress decides: rules naming `remote-node`,
`cluster` or `all` let them in, and label-based rules, the boundary policies' deny rules among
them, cannot stop them. As receivers, no CiliumNetworkPolicy or NetworkPolicy applies to their
ingress at all; only the sender's egress towards `remote-node` can close the door. Such a
finding names the job and its hostNetwork groups, says which side is open and why, and is an
error: the policies among the paths leave it open, and apart from a host policy nothing else in
Cilium filters a hostNetwork pod's traffic, so the door is proven open, not guessed. When a host
policy (a CiliumClusterwideNetworkPolicy with `nodeSelector`) is among the paths, the finding is
a warning instead: topogate does not model host policies (TG120), and one may close the door at
the node, so "open" may be too strict. Traffic between two nodes' host networks (kubelet, node
agents) is not asked: it is no pod's boundary.

Why: a wide allow (`toEntities: [cluster]`, an empty selector, a namespace-wide NetworkPolicy)
quietly re-opens a boundary that exists for isolation or for cost; topogate's boundary policies
deny it, but hand-written policies in a cluster without them do not.

Failing example:

```yaml
kind: CiliumNetworkPolicy
spec:
  endpointSelector: {}
  egress: [{toEntities: [cluster]}]
```

Also failing: `toPorts` of TCP 1-23455 to `toEntities: [cluster]` (every port below PyTorch's
rendezvous port, the MPI launcher's SSH on 22 among them).

Also failing: a job whose pod templates set `hostNetwork: true`, next to the generated policies
(they select pods by label, and Cilium gives these pods the node's identity instead).

Passing example: per-job policies that allow only the job's own pods, plus the boundary
CiliumClusterwideNetworkPolicies `topogate generate` writes.

What it does not cover: pods of Deployments and other non-job templates are not zone members
(their zone is not known), pairs of two pods no manifest shows are reported only when a rule
opens them, and a hand-written allow that names pods of another zone only through `NotIn` or
`Exists` is checked against the jobs' pods it selects, not against pods outside the manifests.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.analysis.proofs.boundary import Opening
from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import BOUNDARY_OPENINGS

NAME = "opens-boundary"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    inv = ctx.inventory_file or "INVENTORY"
    for o in ctx.fact(BOUNDARY_OPENINGS):
        ports = ", ".join(o.ranges)
        uses = f" (including {', '.join(o.uses)})" if o.uses else ""
        head = (f"{_side(o.src_object, o.src_group, o.src_nz, o.host_network == 'src')} can reach "
                f"{_side(o.dst_object, o.dst_group, o.dst_nz, o.host_network == 'dst')} on {ports}{uses}")
        if o.host_network:
            text, severity = _host_network(o, head)
            yield Issue(o.src_object if o.host_network == "src" else o.dst_object, text, o.pos,
                        severity=severity)
            continue
        if o.enforced:
            text = (f"{head}: opened by {o.decided_by}. The inventory separates "
                    f"{_pair(o)}, and no declared door covers these ports. Fix: narrow that rule "
                    "to the job's own pods (or to the ports of a door declared in the inventory), "
                    "or apply the boundary policies from `topogate generate`.")
        else:
            text = (f"{head}: no policy selects {_who(o.src_object, o.src_group)} or "
                    f"{_who(o.dst_object, o.dst_group)}: allowed by default; nothing among the "
                    f"checked paths enforces the boundary between {_pair(o)}. Fix: include the policies "
                    f"`topogate generate` writes: run `topogate generate {inv} -o OUT` and pass "
                    "OUT/clusters/<cluster>/network (the boundary) and the jobs' "
                    "ciliumnetworkpolicy.yaml among the PATHs, or run `topogate check` without "
                    "PATHs to check the generated tree.")
        yield Issue(o.src_object if "/" in o.src_object else o.dst_object, text, o.pos)


def _host_network(o: Opening, head: str) -> tuple[str, str]:
    """The finding about a hostNetwork group, and its severity ("" = the rule's)."""
    sender = o.host_network == "src"
    obj, group, nz = (o.src_object, o.src_group, o.src_nz) if sender else (o.dst_object, o.dst_group, o.dst_nz)
    if sender:
        why = ("its pods run with hostNetwork: true: Cilium gives them the node's identity "
               "(remote-node, seen from pods on other nodes), which no endpointSelector, NetworkPolicy "
               "or label-based rule selects, the boundary policies' deny rules included")
        how = (f"; the receiver's ingress admits that identity: opened by {o.decided_by}" if o.enforced
               else "; nothing on the receiving side closes its ingress to that identity")
    else:
        why = ("its pods run with hostNetwork: true: they are not Cilium endpoints, so no "
               "CiliumNetworkPolicy or NetworkPolicy applies to their ingress and the boundary "
               "policies cannot close it")
        how = (f"; the sender's egress to the node's identity is opened by {o.decided_by}" if o.enforced
               else "; the sender's egress does not close traffic to the node's identity (remote-node)")
    fix = (f" Fix: drop hostNetwork: true from {obj} ({group}) so that pod policies select it, or "
           f"close it at the node with a Cilium host policy (a CiliumClusterwideNetworkPolicy with a "
           f"nodeSelector for the nodes of {_zone(nz)}, with the host firewall enabled); topogate "
           "does not model host policies, so with one among the paths this is a warning.")
    if o.host_policies:
        return (f"{head}: {why}{how}. Host policies among the paths ({', '.join(o.host_policies)}) may "
                "close it at the node; topogate does not model them (TG120): the verdict may be too "
                f"strict.{fix}", "warning")
    return f"{head}: {why}{how}.{fix}", ""


def _side(obj: str, group: str, nz: str, host_network: bool = False) -> str:
    # A probe's stand-in pod is already named by its network zone ("a pod of network zone X").
    if "/" not in obj:
        return obj
    hn = ", hostNetwork" if host_network else ""
    return f"{obj} ({group}, {_zone(nz)}{hn})" if group else f"{obj} ({_zone(nz)}{hn})"


def _who(obj: str, group: str) -> str:
    return f"{obj} ({group})" if "/" in obj and group else obj


def _zone(nz: str) -> str:
    return "any network zone" if nz == "*" else f"network zone {nz}"


def _pair(o: Opening) -> str:
    src, dst = o.src_nz, o.dst_nz
    if "*" in (src, dst):
        return f"network zone {dst if src == '*' else src} from pods it does not manage"
    return f"{src} and {dst}"
