"""TG108 dns-blocked: a job's pods cannot resolve names through kube-dns.

Every pod of a job must reach kube-dns (`k8s-app=kube-dns` in `kube-system`). The analysis
evaluates UDP and TCP 53 against the job's egress policies and kube-dns's ingress, and decides
from what resolvers need: lookups go over UDP/53 (glibc and musl try UDP first and only retry
over TCP when an answer is truncated), so a denied UDP/53 is this error, whatever TCP/53 says. A
denied TCP/53 with UDP/53 open is not: only answers larger than a UDP datagram fail, which a
training job's service lookups do not produce (its flow still shows as blocked in the report).

Why: once any policy selects a pod for egress, everything not allowed is denied, DNS included.
Workers then fail to resolve the master's service name and the job never starts; the error looks
like a network outage, not a policy.

Failing example: a per-job egress policy that allows only the job's own pods.

Passing example: the same policy plus

```yaml
- toEndpoints: [{matchLabels: {k8s:io.kubernetes.pod.namespace: kube-system, k8s:k8s-app: kube-dns}}]
  toPorts: [{ports: [{port: "53", protocol: UDP}, {port: "53", protocol: TCP}]}]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.core.position import NOWHERE
from topogate.policies.context import Context

NAME = "dns-blocked"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        seen: set[tuple[str, str]] = set()
        group_pos = {g.name: g.pos for g in job.groups}
        for f in job.blocked:
            # UDP/53 decides (module doc): a TCP/53-only denial leaves lookups working.
            if f.purpose != "dns" or f.protocol != "UDP" or (f.src, f.protocol) in seen:
                continue
            seen.add((f.src, f.protocol))
            yield Issue(
                job.object,
                f"{job.object}: group {f.src} cannot reach kube-dns on {f.port}/{f.protocol}: "
                f"{f.reason}. Name lookups go over UDP/53, so lookups of peers fail and the job "
                "never starts. Fix: allow egress to k8s-app=kube-dns in kube-system on UDP and TCP 53.",
                group_pos[f.src] if group_pos.get(f.src, NOWHERE) != NOWHERE else job.pos,
            )
