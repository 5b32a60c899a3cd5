"""The facts the coverage rules read (TG120, TG124-TG127): what the policy evaluator does not
model, what the agent refuses, selectors on labels the identity drops, kinds not read.

A policy shared by several clusters is compiled in each: each of these is kept once, where it
was first found.
"""

from __future__ import annotations

from typing import Any

from topogate.analysis.locate import position_of
from topogate.analysis.map.coverage import Unread, unread_objects
from topogate.analysis.map.facts import Fact, OneCluster, of_map, per_cluster
from topogate.analysis.netpolicy import PolicyRef, refusal_text, unselecting_text
from topogate.core.position import Position


def _where(one: OneCluster, policy: PolicyRef, path: tuple[str | int, ...]) -> Position:
    """The line of the policy's construct, or the policy's own when its object is not known."""
    pobj = one.map.locate_rule.by_ref.get(str(policy))
    return pobj.locate(path) if pobj is not None else position_of(policy.source)


# (policy, construct, message, where): constructs the evaluator does not model (TG120)
NOT_MODELLED = per_cluster("not-modelled", lambda one: [
    (str(n.policy), n.construct, n.message, _where(one, n.policy, n.path)) for n in one.map.pset.not_modelled],
    distinct=True)
# (policy, why, where): policies the agent (or the API server) refuses (TG125)
REFUSED = per_cluster("refused", lambda one: [
    (str(r.policy), refusal_text(r, one.map.pset.agent), _where(one, r.policy, r.path))
    for r in one.map.pset.refused], distinct=True)
# (policy, sentence, where, subject): selectors on labels the identity drops (TG126, TG127)
UNSELECTING = per_cluster("unselecting", lambda one: [
    (str(u.policy), unselecting_text(u, one.map.pset.agent), _where(one, u.policy, u.path), u.subject)
    for u in one.map.pset.unselecting], distinct=True)
UNREAD: Fact[object, tuple[Unread, ...]] = of_map("unread", lambda whole: unread_objects(whole.objects))

FACTS: tuple[Fact[Any, Any], ...] = (NOT_MODELLED, REFUSED, UNSELECTING, UNREAD)

__all__ = ["FACTS", "NOT_MODELLED", "REFUSED", "UNREAD", "UNSELECTING"]
