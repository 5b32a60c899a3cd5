"""What the Cilium and NetworkPolicy compilers share: the record of constructs not modelled,
source positions and CIDR peers.
"""

from __future__ import annotations

import functools
import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.netpolicy.agent import DEFAULT_AGENT, Agent
from topogate.analysis.netpolicy.labels import CLUSTER_LABEL, POD_NAMESPACE_LABEL
from topogate.analysis.netpolicy.model import PolicyRef, RuleRef, SourceRef
from topogate.analysis.netpolicy.peers import CIDRMatcher
from topogate.analysis.netpolicy.selectors import CompiledSelector, Requirement

__all__ = ["TOO_PERMISSIVE", "TOO_STRICT", "CompilerBase", "NotModelled", "PathMap", "Refused", "Unselecting",
           "refusal_text", "unselecting_text"]

PathMap = Mapping[tuple[str | int, ...], SourceRef]

# How a construct the evaluator does not model bounds the verdict.
TOO_PERMISSIVE = "the verdict may be too permissive"
TOO_STRICT = "the verdict may be too strict"


@dataclass(frozen=True)
class NotModelled:
    """A construct the evaluator does not model, where it is written, and how that bounds the
    verdict: what `check` reports (TG120) and `trace` prints as a warning."""

    policy: PolicyRef
    path: tuple[str | int, ...]  # inside the policy object
    construct: str  # e.g. "toServices", "L7 rules (http)"
    message: str  # the whole sentence, bound included


@dataclass(frozen=True)
class Refused:
    """A policy the agent (or the API server) does not import, with the reason in the agent's own
    words: none of it is enforced, its default deny included."""

    policy: PolicyRef
    path: tuple[str | int, ...]  # the offending part, inside the policy object
    reason: str
    by: str = "the agent"  # or "the API server"


@dataclass(frozen=True)
class Unselecting:
    """A selector that can select no pod: every pod it could name lacks a label the agent's
    identity filter drops (`keys`)."""

    policy: PolicyRef
    path: tuple[str | int, ...]
    keys: tuple[str, ...]
    subject: bool  # the policy's subject (its doors are not locked) or a peer (nothing opens)


@functools.lru_cache(maxsize=1 << 14)
def _requirement(key: str, op: str, value: str | None) -> Requirement:
    """One object per added requirement: every selector of a fleet's policies gets the same few."""
    return Requirement(key, op, frozenset() if value is None else frozenset({value}), True, "k8s")


def refusal_text(r: Refused, agent: Agent) -> str:
    """Why nothing of a policy is enforced, in the agent's (or the API server's) words."""
    who = f"Cilium {agent.version}'s agent" if r.by == "the agent" else r.by
    return (f"{who} refuses this policy ({r.reason}), so none of it is enforced, its default deny "
            "included; fix the rule the reason names")


def unselecting_text(u: Unselecting, agent: Agent) -> str:
    """What a selector on labels the identity filter drops means for its policy."""
    keys = ", ".join(u.keys)
    where = _path_words(u.path)
    why = (f"{where} requires {keys}, {'labels' if len(u.keys) > 1 else 'a label'} Cilium {agent.version} "
           "leaves out of every pod's identity (its label filter")
    if agent.labels:
        why += f" with labels {' '.join(agent.labels)!r})"
    elif "version" in agent.unset:
        why += "; the inventory names no cilium.version)"
    else:
        why += ")"
    what = ("the policy selects no pod, so its doors are not locked" if u.subject
            else "it selects no pod, so the rule opens nothing to pods")
    return f"{why}: {what}; select on a label the identity keeps, or keep this one (cilium.labels)"


def _path_words(path: tuple[str | int, ...]) -> str:
    """("spec", "ingress", 0, "fromEndpoints", 1) -> "ingress rule 0 fromEndpoints[1]"."""
    parts = [p for p in path if p not in ("spec",)]
    if len(parts) >= 4 and isinstance(parts[1], int) and isinstance(parts[3], int):
        return f"{parts[0]} rule {parts[1]} {parts[2]}[{parts[3]}]"
    if len(parts) >= 2 and isinstance(parts[1], int):
        return f"{parts[0]} rule {parts[1]}"
    return str(parts[-1]) if parts else "its selector"


class CompilerBase:
    """What the Cilium and NetworkPolicy compilers share: the warnings about what is not modelled,
    source positions and CIDR peers."""

    def __init__(self, agent: Agent = DEFAULT_AGENT) -> None:
        self.agent = agent
        self.warnings: list[str] = []
        self.not_modelled: list[NotModelled] = []
        self.refused: list[Refused] = []
        self.unselecting: list[Unselecting] = []

    def _refuse(self, pref: PolicyRef, path: tuple[str | int, ...], reason: str, by: str = "the agent") -> None:
        r = Refused(pref, path, reason, by)
        self.refused.append(r)
        self.warnings.append(f"{pref}: {refusal_text(r, self.agent)}")

    def _unselecting(self, pref: PolicyRef, path: tuple[str | int, ...], sel: CompiledSelector,
                     subject: bool) -> None:
        """Record a selector some of whose required labels the identity filter drops (a peer's
        only where the policy's subject does select pods: else the subject's finding says it)."""
        if not subject and any(u.policy == pref and u.subject for u in self.unselecting):
            return
        keeps = self.agent.label_filter.keeps
        dead = tuple(dict.fromkeys(r.key for r in sel.reqs if r.pod_source and r.op in ("In", "Exists")
                                   and not keeps(r.key)))
        if dead:
            u = Unselecting(pref, path, dead, subject)
            self.unselecting.append(u)
            self.warnings.append(f"{pref}: {unselecting_text(u, self.agent)}")

    def _cluster(self) -> Requirement:
        """The cluster filter the agent adds to peer selectors (policy-default-local-cluster)."""
        return _requirement(CLUSTER_LABEL, "In", self.agent.cluster_name)

    @staticmethod
    def _namespace(ns: str | None) -> Requirement:
        """The namespace scope the agent adds: the policy's namespace, or (clusterwide) any."""
        return _requirement(POD_NAMESPACE_LABEL, "Exists" if ns is None else "In", ns)

    def _warn(self, where: PolicyRef | RuleRef, path: tuple[str | int, ...], construct: str,
              text: str) -> None:
        """Record a construct that is not modelled: a trace warning and a check finding."""
        self.warnings.append(f"{where}: {text}")
        policy = where.policy if isinstance(where, RuleRef) else where
        self.not_modelled.append(NotModelled(policy, path, construct, text))

    def _src(self, paths: PathMap | None, path: tuple[str | int, ...], fallback: SourceRef) -> SourceRef:
        if paths:
            # The closest enclosing path that has a position.
            for cut in range(len(path), 0, -1):
                got = paths.get(path[:cut])
                if got is not None:
                    return got
        return fallback

    def _cidr(self, text: str, excepts: list[str], rref: RuleRef) -> CIDRMatcher | None:
        try:
            net = ipaddress.ip_network(text, strict=False)
            exc = tuple(ipaddress.ip_network(x, strict=False) for x in excepts)
        except ValueError:
            self.warnings.append(f"{rref}: invalid CIDR {text!r} ignored")
            return None
        return CIDRMatcher(net, exc)
