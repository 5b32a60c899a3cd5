"""The map, as data: what `check` and `explain` computed, for rules and reporters to read.

Rules never recompute anything; reporters never reason. Both read these frozen objects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from topogate.core.findings import Finding
from topogate.core.position import NOWHERE, Position
from topogate.inventory.model import Waiver


@dataclass(frozen=True, slots=True)
class PoolVerdict:
    zone: str
    pool: str
    feasible: bool
    reason: str = ""  # why the pool was removed ("" when feasible)
    undeclared: tuple[str, ...] = ()  # label keys the group's selector names that the pool lacks


@dataclass(frozen=True, slots=True)
class GroupMap:
    name: str
    pods: int
    gpus_per_pod: int
    zones: tuple[str, ...]  # where this group's pods can land
    pools: tuple[PoolVerdict, ...] = ()
    pos: Position = NOWHERE  # the group's pod template in its manifest
    labels: tuple[tuple[str, str], ...] = ()  # pod labels (template + controller)
    splits: bool = False  # every feasible placement spreads this group's pods over zones
    # hostNetwork: true: no Cilium endpoint, so no pod policy selects it (it has the node's identity)
    host_network: bool = False
    # where the constraint that keeps every pool from the group is written (a nodeSelector of the
    # base, an affinity a patch added), when one constraint does; NOWHERE otherwise
    cause: Position = NOWHERE


@dataclass(frozen=True, slots=True)
class Flow:
    """One required flow of a job between two groups in one pair of zones, with its verdict."""

    src: str  # group name, or "kube-dns"
    dst: str
    src_zone: str
    dst_zone: str
    port: int
    protocol: str
    purpose: str  # "rendezvous", "nccl", "dns", "ssh"
    allowed: bool
    plain_reason: str  # the sentence when there is no `cite` to write it
    decided_by: str = ""  # Kind/ns/name of the deciding policy
    decided_at: Position = NOWHERE  # where that policy (rule) is written
    # Builds the sentence that cites each side's deciding line. Called only when someone reads
    # `reason`: citing a line re-reads the policy's file, and most allowed flows are never shown.
    cite: Callable[[], str] | None = field(default=None, compare=False, repr=False)
    # `reason` once written (a slot: tens of thousands of flows are kept, and a class with slots
    # is a third smaller than one with an instance dict)
    _said: str | None = field(default=None, init=False, compare=False, repr=False)

    @property
    def reason(self) -> str:
        """The sentence that says which side decided and which rule, at which line."""
        if self._said is None:
            object.__setattr__(self, "_said", self.cite() if self.cite is not None else self.plain_reason)
        assert self._said is not None
        return self._said


@dataclass(frozen=True, slots=True)
class JobMap:
    object: str  # Kind/namespace/name
    cluster: str
    kind: str
    namespace: str
    name: str
    groups: tuple[GroupMap, ...]
    colocated: bool
    schedulable: bool
    split_reasons: tuple[str, ...] = ()
    unschedulable_reasons: tuple[str, ...] = ()
    flows: tuple[Flow, ...] = ()
    pos: Position = NOWHERE  # the job object in its manifest
    inventory_pos: Position = NOWHERE  # the inventory workload entry, when there is one
    capacity: dict[str, Any] = field(default_factory=dict, compare=False)
    # Schedule orders that strand the job: a pod placed first where the others cannot follow.
    pending_risks: tuple[str, ...] = ()  # {"needs", "has", "zone", "fits", "message"}
    # What could not be resolved about the job itself (a TrainJob's runtime not among PATHs).
    problems: tuple[str, ...] = ()
    kueue: str = ""  # how Kueue's topology-aware scheduling places the job ("" when it does not)
    # DRA claims of its groups topogate cannot model: (what and which way the verdict may be
    # wrong, where the group's pod template is written).
    device_notes: tuple[tuple[str, Position], ...] = ()
    # Groups another scheduler places: (group, schedulerName, what topogate read and assumed,
    # where the group's pod template is written).
    other_schedulers: tuple[tuple[str, str, str, Position], ...] = ()

    @property
    def blocked(self) -> tuple[Flow, ...]:
        return tuple(f for f in self.flows if not f.allowed)

    @property
    def zones(self) -> tuple[str, ...]:
        return tuple(sorted({z for g in self.groups for z in g.zones}))

    def as_dict(self) -> dict[str, Any]:
        """The stable JSON shape of DESIGN.md's report."""
        return {
            "object": self.object,
            "cluster": self.cluster,
            "groups": [{"name": g.name, "zones": list(g.zones)} for g in self.groups],
            "colocated": self.colocated,
            "schedulable": self.schedulable,
            "blocked": [
                {"from": f.src, "to": f.dst, "fromZone": f.src_zone, "toZone": f.dst_zone,
                 "port": f.port, "protocol": f.protocol, "reason": f.reason}
                for f in self.blocked
            ],
        }


@dataclass(frozen=True)
class RuleInfo:
    """What reporters need of a rule (SARIF lists every registered rule)."""

    id: str
    name: str
    severity: str
    summary: str  # first line of the rule's docstring
    doc: str  # the whole docstring (markdown)


@dataclass(frozen=True)
class Scope:
    """What a `check --changed-since` run covered (topogate.check.changed), for the summary line."""

    since: str  # the git ref as given
    text: str  # e.g. "1 of 10 clusters changed (c3), 1 of 10 kustomize roots built"
    checked: str  # "changed" (narrowed), "everything" (fell back) or "nothing"
    note: str = ""  # the one stderr line of a fallback


@dataclass(frozen=True)
class Narrowed:
    """One setting of the settings file that narrowed a check, and what it left out
    (topogate.check.settings_report); reporters name it with its counts."""

    setting: str  # select | ignore | per-path-ignores | exclude | cluster
    value: tuple[str, ...]  # as the file writes it: rules, patterns, or the one cluster
    pos: Position  # where it is written (the file as shown, or `REF:path` for a file read at a ref)
    ref: str = ""  # the git ref the file was read at ("" the working tree's file)
    glob: str = ""  # per-path-ignores: the files it covers
    findings: tuple[Finding, ...] = ()  # select, ignore, per-path-ignores: the findings it hid
    paths: tuple[str, ...] = ()  # exclude: the PATH entries it left unread
    clusters: tuple[str, ...] = ()  # cluster: the clusters left out
    objects: int = 0  # cluster: the objects of those clusters not analysed


@dataclass(frozen=True)
class SettingsUse:
    """The settings file a check used and what its settings left out. None on a result when
    no file was used, so such a report keeps its bytes."""

    file: str  # the settings file used, as shown ("" when only `base` was)
    narrowed: tuple[Narrowed, ...] = ()
    hidden: tuple[Finding, ...] = ()  # the findings the file hid that the command line did not
    base: str = ""  # check --changed-since: where the settings taken from the ref were read
    taken: tuple[str, ...] = ()  # those settings
    said: str = ""  # the sentence that says so ("ignore from main:.topogate.yaml: this file narrows it more ...")

    @property
    def label(self) -> str:
        return self.file or self.base


@dataclass(frozen=True)
class BaselineUse:
    """The baseline file a check used (topogate.check.baseline): the findings it listed, which
    fail nothing and are counted; its entries no finding matched any more; and, under
    --changed-since, the entries the pull request added, which are not honoured."""

    file: str
    findings: tuple[Finding, ...] = ()
    unmatched: int = 0
    refused: tuple[Position, ...] = ()  # where each entry the pull request added is written
    ref: str = ""  # the ref whose baseline was honoured ("" the working tree's)


@dataclass(frozen=True)
class Suppression:
    """A `topogate.dev/ignore` annotation on an object (policies.selection reads them)."""

    object: str  # Kind/namespace/name
    rule: str  # rule ID
    reason: str
    pos: Position
    # where the annotated object's document is written: (file, first line, last line)
    span: tuple[str, int, int] | None = None

    def shows(self, f: Finding) -> bool:
        """Whether `f` is reported at a line of the annotated object's document."""
        return self.span is not None and f.file == self.span[0] and self.span[1] <= f.line <= self.span[2]


@dataclass(frozen=True)
class Waived:
    """A finding an inventory waiver hid, with the waiver that hid it (policies.engine)."""

    finding: Finding
    waiver: Waiver


@dataclass(frozen=True)
class CheckResult:
    findings: tuple[Finding, ...]
    jobs: tuple[JobMap, ...]
    rules: tuple[RuleInfo, ...]
    inventory: str = ""  # inventory file as given
    # Findings hidden by a `topogate.dev/ignore` annotation (topogate.policies.selection.Suppression):
    # reporters count them so a quiet report never hides that something was silenced.
    suppressed: tuple[Suppression, ...] = ()
    # Findings hidden by an inventory waiver (topogate.policies.engine): counted and listed for
    # the same reason, and kept in SARIF as suppressed results so code scanning shows them.
    waived: tuple[Waived, ...] = ()
    # (Finding, Suppression) for every finding an annotation hid: SARIF keeps them as
    # suppressed results; the other formats count `suppressed`.
    annotated: tuple[tuple[Finding, Suppression], ...] = ()
    scope: Scope | None = None  # set by --changed-since
    settings: SettingsUse | None = None  # set by `check` when a settings file was used
    baseline: BaselineUse | None = None  # set by `check` with a baseline file

    @property
    def errors(self) -> int:
        return sum(1 for f in self.findings if f.severity == "error")

    @property
    def warnings(self) -> int:
        return sum(1 for f in self.findings if f.severity == "warning")

__all__ = ["BaselineUse", "CheckResult", "Flow", "GroupMap", "JobMap", "Narrowed", "PoolVerdict", "RuleInfo", "Scope",
           "SettingsUse", "Suppression", "Waived"]
