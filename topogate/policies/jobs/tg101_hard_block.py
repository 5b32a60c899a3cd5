"""TG101 hard-block: a connection the training job needs is denied by network policy.

For every replica group pair of a job the analysis evaluates the flows the job's kind needs:
NCCL's random TCP ports between all members (both directions), the rendezvous port on the
coordinator (PyTorchJob 23456, TrainJob 29500) and the MPIJob launcher's SSH (TCP 22) to its
workers. A flow is blocked when the sender's egress or the receiver's ingress denies it, with
the real Cilium semantics (default deny once selected, deny rules win, namespace scoping). DNS
has its own rule, TG108.

Why: a blocked rendezvous or NCCL connection does not fail loudly. Pods are Running, the job
waits in `init_process_group` until its timeout, and training never starts.

Failing example: workers may only talk to pods labelled `zone: zone-a`, and the master carries
`zone: zone-b`:

```yaml
kind: CiliumNetworkPolicy
spec:
  endpointSelector: {matchLabels: {zone: zone-a}}
  egress:
  - toEndpoints: [{matchLabels: {zone: zone-a}}]
```

Passing example: one policy per job that allows all TCP among the job's own pods, as
`topogate generate` writes.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.core.position import NOWHERE
from topogate.policies.context import Context

NAME = "hard-block"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        seen: set[tuple[str, str, str]] = set()
        group_pos = {g.name: g.pos for g in job.groups}
        for f in job.blocked:
            if f.purpose == "dns" or (f.src, f.dst, f.purpose) in seen:
                continue
            seen.add((f.src, f.dst, f.purpose))
            nccl = ("every TCP port" if f.port == 0
                    else f"random TCP ports; {f.port}/TCP is the first denied")
            what = {"nccl": f"NCCL traffic ({nccl})",
                    "rendezvous": f"the rendezvous port {f.port}/TCP",
                    "ssh": "SSH (22/TCP) from the launcher"}.get(f.purpose, f"{f.port}/{f.protocol}")
            where = f" when {f.src} runs in {f.src_zone} and {f.dst} in {f.dst_zone}" if f.src_zone else ""
            cited = f.decided_by and str(f.decided_at) in f.reason  # the reason names the rule's line
            policy = f" (decided by {f.decided_by} at {f.decided_at})" if f.decided_by and not cited else ""
            yield Issue(
                job.object,
                f"{job.object}: {f.src} -> {f.dst}: {what} is denied{where}: {f.reason}{policy}. "
                "The job will never start: its pods run but wait for peers until the rendezvous "
                "times out. Fix: allow all TCP between the job's pods (topogate generate writes "
                "that policy), or keep the job inside one network zone.",
                group_pos[f.src] if group_pos.get(f.src, NOWHERE) != NOWHERE else job.pos,
            )
