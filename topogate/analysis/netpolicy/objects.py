"""From Kubernetes objects to compiled policies: which objects are policies (CNP, CCNP, NP,
ClusterNetworkPolicy; AdminNetworkPolicy and BaselineAdminNetworkPolicy named only),
which are Namespaces whose labels selectors see, and which are ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from topogate.analysis.netpolicy.agent import DEFAULT_AGENT, Agent
from topogate.analysis.netpolicy.cilium import CiliumCompiler, no_api_version
from topogate.analysis.netpolicy.clusternetworkpolicy import ClusterNetworkPolicyCompiler
from topogate.analysis.netpolicy.compiler import NotModelled, PathMap, Refused, Unselecting
from topogate.analysis.netpolicy.kubernetes import NetworkPolicyCompiler
from topogate.analysis.netpolicy.model import (
    KIND_ANP,
    KIND_BANP,
    KIND_CCNP,
    KIND_CNP,
    KIND_KCNP,
    KIND_NP,
    PolicyError,
    SourceRef,
)
from topogate.analysis.netpolicy.rules import PolicyUnit

__all__ = ["compile_objects"]


@dataclass
class CompiledPolicies:
    """What the objects of one cluster say about its network policies."""

    units: list[PolicyUnit]
    namespace_labels: dict[str, dict[str, str]]  # from the Namespace objects read
    warnings: list[str]
    not_modelled: list[NotModelled]
    refused: list[Refused] = field(default_factory=list)
    unselecting: list[Unselecting] = field(default_factory=list)


# The group of ClusterNetworkPolicy and of the v1alpha1 kinds it replaced. Its CRD (v0.3.0) serves
# v1alpha2 and v1beta1 with one schema and no conversion, so Cilium, which lists v1alpha2, enforces
# an object written in either.
_NETWORK_POLICY_API = "policy.networking.k8s.io/"


class _Compiler(CiliumCompiler, NetworkPolicyCompiler, ClusterNetworkPolicyCompiler):
    """The compilers over one record of what is not modelled."""


def _take(compiler: _Compiler, units: list[PolicyUnit], ns_labels: dict[str, dict[str, str]],
          obj: Any, ref: SourceRef, paths: PathMap | None) -> None:
    # A module function, not a closure inside compile_objects: a recursive closure is a
    # reference cycle (function, cell), which would hold every compiled unit of a cluster until
    # a cyclic collection, and check runs with the collector paused.
    if not isinstance(obj, Mapping):
        return
    api = str(obj.get("apiVersion", ""))
    kind = str(obj.get("kind", ""))
    if kind.endswith("List") and isinstance(obj.get("items"), list):
        for item in obj["items"]:
            _take(compiler, units, ns_labels, item, ref, None)
    elif kind in (KIND_CNP, KIND_CCNP) and not api:
        raise PolicyError(ref, no_api_version(obj, kind))
    elif kind in (KIND_CNP, KIND_CCNP) and api.startswith("cilium.io/"):
        units.extend(compiler.cilium(obj, ref, paths))
    elif kind == KIND_NP and api == "networking.k8s.io/v1":
        units.extend(compiler.netpol(obj, ref, paths))
    elif kind == KIND_KCNP and api in (_NETWORK_POLICY_API + "v1alpha2", _NETWORK_POLICY_API + "v1beta1"):
        if compiler.agent.reads_cluster_network_policy:
            units.extend(compiler.cluster_network_policy(obj, ref, paths))
        else:
            # Read all the same, by a compiler whose notes are dropped: the API server refuses a
            # malformed one whatever the agent reads.
            _Compiler(compiler.agent).cluster_network_policy(obj, ref, paths)
            compiler.not_read(obj, ref)
    elif kind in (KIND_ANP, KIND_BANP) and api.startswith(_NETWORK_POLICY_API):
        units.extend(compiler.admin_network_policy(obj, ref))
    elif kind == "Namespace" and api == "v1":
        meta = obj.get("metadata") or {}
        name = meta.get("name")
        if name:
            labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
            ns_labels.setdefault(str(name), {}).update(labels)


def compile_objects(objs: Iterable[tuple[Any, ...]], agent: Agent = DEFAULT_AGENT) -> CompiledPolicies:
    """Compile ``(object, SourceRef)`` pairs or ``(object, SourceRef, paths)`` triples (see
    `PolicySet.from_objects`) as `agent` reads them. A malformed policy raises `PolicyError`
    naming where it is."""
    compiler = _Compiler(agent)
    units: list[PolicyUnit] = []
    ns_labels: dict[str, dict[str, str]] = {}

    for item in objs:
        obj, ref = item[0], item[1]
        paths = item[2] if len(item) > 2 else None
        try:
            _take(compiler, units, ns_labels, obj, ref, paths)
        except PolicyError:
            raise
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as err:
            # A policy the API server would reject (wrong types): say where, never crash.
            kind = obj.get("kind", "object") if isinstance(obj, Mapping) else "object"
            raise PolicyError(ref, f"cannot read this {kind}: {type(err).__name__}: {err}; "
                                   "check it against the CRD schema") from None
    return CompiledPolicies(units, ns_labels, compiler.warnings, compiler.not_modelled, compiler.refused,
                            compiler.unselecting)
