"""TG125 policy-refused: the Cilium agent refuses a policy the CRD schema lets through, so none of it is enforced.

The agent sanitizes every rule of a CiliumNetworkPolicy or CiliumClusterwideNetworkPolicy before
it imports anything (pkg/policy/api rule_validation.go of the version the inventory's
`cilium.version` names); on one error it logs the reason and imports nothing of the object: no
rule, and no default deny. The API server accepts such a policy, `kubectl apply` succeeds, and the
pods it was written for stay open. Reported at the offending rule with the agent's own reason:
two peer kinds in one rule (`toEndpoints` with `toCIDR`, `fromEndpoints` with `fromEntities`,
...), `fromNodes`/`toNodes` without `enable-node-selector-labels`, an except outside its CIDR,
`icmps` beside `toPorts`, a DNS rule on ingress, L7 rules on a port 0 or on UDP, more than 40 ports
in one `toPorts` entry, a port that is neither a number nor a port name; and what the API server
itself refuses of the version's CRD (a `fromRequires` item from 1.19 on).

Why: a policy that is never imported is the quietest way for a door to stay open.

Failing example: an egress rule `{toEndpoints: [{matchLabels: {app: db}}], toCIDR: [10.0.0.0/8]}`.

Passing example: the same peers as two rules, one `toEndpoints`, one `toCIDR`.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.coverage.facts import REFUSED

NAME = "policy-refused"
SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for policy, why, pos in ctx.fact(REFUSED):
        yield Issue(policy, f"{policy}: {why}.", pos)
