"""TG120 not-modelled: a policy uses a construct topogate does not model, so its verdicts are bounds.

The evaluator models Cilium's L3/L4 semantics (endpoints, entities, CIDRs, FQDNs with the DNS
rules that permit their lookups, ports, deny rules, default deny). Some constructs it does not
model: L7 rules (http, kafka, ...), `toServices`, CIDR group references, node labels in
`fromNodes`/`toNodes`, host policies (`nodeSelector`),
`authentication.mode` (and the older `auth.type`), TLS SNI `serverNames`, Envoy `listener`
redirects, TLS interception, and policies whose `endpointSelector` names a reserved identity
(`reserved:health`, `reserved:init`: Cilium's own endpoints, not pods). Each is reported at its own line with the way it bounds the verdict:
"treated as allow-all on that port: the verdict may be too permissive", or "selects no peer:
the verdict may be too strict". `trace` prints the same sentences as warnings.

Why: a construct skipped silently turns into a confident but possibly wrong "ok" or "blocked".

Failing example: a CiliumNetworkPolicy whose ingress rule has
`toPorts: [{ports: [{port: "8080"}], rules: {http: [{method: GET}]}}]`.

Passing example: the same rule without `rules:` (L4 only), which topogate models exactly.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.coverage.facts import NOT_MODELLED

NAME = "not-modelled"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for policy, _construct, message, pos in ctx.fact(NOT_MODELLED):
        yield Issue(policy, f"{policy}: {message}.", pos)
