"""TG124 unread-kind: an object of a kind topogate does not read selects pods or nodes, so a verdict may be wrong.

`check` reads training jobs and their runtimes, plain pod templates, CiliumNetworkPolicies,
CiliumClusterwideNetworkPolicies, NetworkPolicies, Namespaces and Kueue's objects. Any other
object among the PATHs whose spec carries a `podSelector`, `endpointSelector` or
`nodeSelector` says something about who may talk to whom or where pods land that the analysis
does not know: a policy kind can deny flows topogate calls allowed (or allow flows it calls
blocked), a placement kind can put pods where the map says they cannot be. The finding names
the kind and the way the verdict may be wrong. (Objects known to change neither, such as a
Service or a PodDisruptionBudget, are not reported.)

Why: an ok is a statement about every input; one the analysis could not read is named, never
passed over.

Failing example: a `CiliumEgressGatewayPolicy` (its `selectors[].podSelector`) beside the
incident's manifests.

Passing example: the same manifests without it.
"""

from __future__ import annotations

from collections.abc import Iterator

from topogate.core.findings import Issue
from topogate.policies.context import Context
from topogate.policies.coverage.facts import UNREAD

NAME = "unread-kind"
SEVERITY = "warning"


def check(ctx: Context) -> Iterator[Issue]:
    for u in ctx.fact(UNREAD):
        if u.key == "nodeSelector" and "Policy" not in u.kind:
            effect = ("it may place pods where the map says they cannot land, or keep them from "
                      "where it says they can: placement verdicts may be wrong either way")
        else:
            effect = ("it may deny traffic topogate reports as allowed, or allow traffic it "
                      "reports as blocked: network verdicts may be wrong either way")
        yield Issue(u.object, (
            f"{u.object}: topogate does not read {u.kind} objects, and this one selects pods or "
            f"nodes ({u.key}); {effect}. Check its effect by hand, or leave it out of the PATHs "
            "if it is not deployed where these jobs run."), u.pos)
