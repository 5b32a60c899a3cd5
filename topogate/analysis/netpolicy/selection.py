"""Which policies select an endpoint: the units of a cluster held per namespace, and per pod
class the units that select it and the policies that switch default deny on.

Both answers are asked again by every flow of every job, so each is computed once per pod
class (and, for default deny, per direction).
"""

from __future__ import annotations

from collections.abc import Sequence

from topogate.analysis.netpolicy.labels import IdentityLabels
from topogate.analysis.netpolicy.model import PodClass, PolicyRef
from topogate.analysis.netpolicy.rules import PolicyUnit, policy_sort_key
from topogate.analysis.netpolicy.scope import NamespaceScope

__all__ = ["SelectionIndex"]

# (policies selecting the pod, those of them that switch default deny on in the direction)
_Policies = tuple[tuple[PolicyRef, ...], tuple[PolicyRef, ...]]


class SelectionIndex:
    """The compiled units of one cluster, in policy order, and the selection of each pod class."""

    def __init__(self, units: Sequence[PolicyUnit], labels: IdentityLabels) -> None:
        ordered = sorted(units, key=lambda u: policy_sort_key(u.policy))
        # A CCNP may select a pod of any namespace; a CNP or an NP only pods of its own.
        self.clusterwide: list[PolicyUnit] = [u for u in ordered if u.subject_ns is None]
        self.by_namespace: dict[str, list[PolicyUnit]] = {}
        for u in ordered:
            if u.subject_ns is not None:
                self.by_namespace.setdefault(u.subject_ns, []).append(u)
        self._labels = labels
        self._scopes: dict[str, NamespaceScope] = {}
        self._units_cache: dict[PodClass, tuple[PolicyUnit, ...]] = {}
        # One tuple per distinct set of selecting units: the pods a set selects alike (a job's
        # Master and Worker, every job a namespace-wide policy selects) share it, so what only
        # the units decide can be remembered under it (its id) rather than once per pod class.
        self._interned: dict[tuple[int, ...], tuple[PolicyUnit, ...]] = {}
        self._policies_cache: dict[tuple[PodClass, str], _Policies] = {}

    def units_for(self, pod: PodClass) -> tuple[PolicyUnit, ...]:
        """The units that select the pod, in policy order: for pods selected alike, one tuple
        (the same object), kept as long as this index."""
        got = self._units_cache.get(pod)
        if got is None:
            scope = self._scopes.get(pod.namespace)
            if scope is None:
                # Only the clusterwide policies and those of the pod's own namespace can select it.
                scope = NamespaceScope(self.clusterwide + self.by_namespace.get(pod.namespace, []))
                self._scopes[pod.namespace] = scope
            got = scope.selecting(pod, self._labels)
            got = self._interned.setdefault(tuple(map(id, got)), got)
            self._units_cache[pod] = got
        return got

    def policies(self, pod: PodClass, direction: str) -> _Policies:
        """(policies selecting the pod, those that switch default deny on in `direction`)."""
        key = (pod, direction)
        got = self._policies_cache.get(key)
        if got is None:
            units = self.units_for(pod)
            got = (tuple(dict.fromkeys(u.policy for u in units)),
                   tuple(dict.fromkeys(u.policy for u in units if u.enforce.get(direction))))
            self._policies_cache[key] = got
        return got

    def policies_selecting(self, pod: PodClass) -> list[PolicyRef]:
        out: list[PolicyRef] = []
        for u in self.units_for(pod):
            if u.policy not in out:
                out.append(u.policy)
        return out
