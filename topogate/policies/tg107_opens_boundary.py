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

Passing example: per-job policies that allow only the job's own pods, plus the boundary
CiliumClusterwideNetworkPolicies `topogate generate` writes.

What it does not cover: pods of Deployments and other non-job templates are not zone members
(their zone is not known), pairs of two pods no manifest shows are reported only when a rule
opens them, and a hand-written allow that names pods of another zone only through `NotIn` or
`Exists` is checked against the jobs' pods it selects, not against pods outside the manifests.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.analysis.boundary import Opening
from topogate.analysis.context import Context
from topogate.findings import Issue

NAME = "opens-boundary"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    inv = ctx.inventory_file or "INVENTORY"
    for o in ctx.boundary_openings:
        ports = ", ".join(o.ranges)
        uses = f" (including {', '.join(o.uses)})" if o.uses else ""
        head = (f"{_side(o.src_object, o.src_group, o.src_nz)} can reach "
                f"{_side(o.dst_object, o.dst_group, o.dst_nz)} on {ports}{uses}")
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


def _side(obj: str, group: str, nz: str) -> str:
    # A probe's stand-in pod is already named by its network zone ("a pod of network zone X").
    if "/" not in obj:
        return obj
    return f"{obj} ({group}, {_zone(nz)})" if group else f"{obj} ({_zone(nz)})"


def _who(obj: str, group: str) -> str:
    return f"{obj} ({group})" if "/" in obj and group else obj


def _zone(nz: str) -> str:
    return "any network zone" if nz == "*" else f"network zone {nz}"


def _pair(o: Opening) -> str:
    src, dst = o.src_nz, o.dst_nz
    if "*" in (src, dst):
        return f"network zone {dst if src == '*' else src} from pods it does not manage"
    return f"{src} and {dst}"
