"""TG208 unmanaged-policy: a network policy runs in the cluster that the generated tree does not
contain.

`check --live` lists CiliumClusterwideNetworkPolicies, and CiliumNetworkPolicies and
NetworkPolicies in the namespaces of the inventory's workloads and of the training jobs found,
and compares them with what `topogate generate` writes for the cluster.

Why: Cilium enforces every policy that selects a pod, not only the generated ones. A policy
someone applied by hand may deny a flow the job needs, and `check` of the repository cannot see
it. A warning: the policy may be harmless, but the verdict of `check` may be too optimistic.

Failing example: a CiliumNetworkPolicy `deny-egress` in `ml-demo` applied with kubectl.

Passing example: the cluster's policies in those namespaces are exactly the generated ones.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.live.facts import UNMANAGED, issues

NAME = "unmanaged-policy"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    yield from issues(ctx, UNMANAGED)
