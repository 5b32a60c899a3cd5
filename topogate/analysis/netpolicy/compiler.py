"""What the Cilium and NetworkPolicy compilers share: the record of constructs not modelled,
source positions and CIDR peers.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

from topogate.analysis.netpolicy.model import PolicyRef, RuleRef, SourceRef
from topogate.analysis.netpolicy.peers import CIDRMatcher

__all__ = ["TOO_PERMISSIVE", "TOO_STRICT", "CompilerBase", "NotModelled", "PathMap"]

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


class CompilerBase:
    """What the Cilium and NetworkPolicy compilers share: the warnings about what is not modelled,
    source positions and CIDR peers."""

    def __init__(self) -> None:
        self.warnings: list[str] = []
        self.not_modelled: list[NotModelled] = []

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
