"""TG110 unprotected-job: a training job in a namespace the inventory manages has no policy.

The inventory names the namespaces its workloads run in. A job found there whose pods no
network policy selects (in either direction) runs wide open: nothing keeps it inside its network
zone.

Why: the boundary between network zones is only as good as the policies that select the pods;
an unmanaged job in a managed namespace is the hole in the fence.

Jobs whose pods all run with `hostNetwork: true` get the same warning with a different fix.
Cilium gives such a pod the node's identity (`host` on its own node, `remote-node` elsewhere)
instead of an endpoint with labels, so no CiliumNetworkPolicy, namespaced or clusterwide with an
`endpointSelector`, and no Kubernetes NetworkPolicy can select it: "apply its generated policy"
would change nothing. What does protect it is a Cilium host policy (a
CiliumClusterwideNetworkPolicy with a `nodeSelector`, with the host firewall enabled), which
filters everything on the selected nodes, or dropping `hostNetwork` so the job's pods become
endpoints again. The warning says so instead of pointing at a policy that cannot work; it still
fires because the job is still unprotected (in a cluster with one network zone no TG107 speaks
for it). Where another network zone's policies leave a door to or from it open, TG107 reports
the open ports as an error.
topogate does not model host policies (TG120 names any among the paths), so this warning stays
until `hostNetwork` is dropped. A job with some hostNetwork groups and some selected groups is
not unprotected; its hostNetwork groups' flows are judged by TG101 and TG107.

Failing example: a PyTorchJob in `ml-demo` with no CiliumNetworkPolicy, NetworkPolicy or
clusterwide policy selecting its pods; or one whose Master and Worker templates set
`hostNetwork: true`, whatever policies exist:

```yaml
pytorchReplicaSpecs:
  Worker:
    template:
      spec:
        hostNetwork: true
```

Passing example: the job is in the inventory, its pods use the pod network, and its generated
policy is applied.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.jobs.facts import UNPROTECTED

NAME = "unprotected-job"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    jobs = {j.object: j for j in ctx.jobs}
    for obj, pos in ctx.fact(UNPROTECTED):
        jm = jobs.get(obj)
        host = [g.name for g in jm.groups if g.host_network and g.pods] if jm is not None else []
        if jm is not None and host and all(g.host_network for g in jm.groups if g.pods):
            yield Issue(
                obj,
                f"{obj} runs every pod with hostNetwork: true ({', '.join(host)}): Cilium gives them "
                "the node's identity (host on their own node, remote-node elsewhere), so no "
                "CiliumNetworkPolicy or NetworkPolicy can select them, a generated one included, and "
                "nothing keeps their traffic inside their network zone. Fix: drop hostNetwork: true so "
                "that the job's policy selects its pods, or protect the nodes it runs on with a Cilium "
                "host policy (a CiliumClusterwideNetworkPolicy with a nodeSelector, host firewall "
                "enabled), which topogate does not model.",
                pos,
            )
            continue
        yield Issue(
            obj,
            f"{obj} runs in a namespace the inventory manages but no network policy selects its "
            "pods: nothing keeps its traffic inside its network zone. Fix: add it to the inventory "
            "and apply its generated policy.",
            pos,
        )
