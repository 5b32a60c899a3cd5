"""The rows of a diff: every (sender, receiver, port range, protocol) whose verdict differs
between the base and the head tree, with the rule that decides it on each side.

Every verdict is the evaluator's (topogate.analysis.netpolicy.PolicySet.port_classes, the call
`trace` makes without --port): per pair of members, each tree cuts 1-65535 of TCP, UDP and SCTP
into maximal ranges of one verdict; the two cuttings are overlaid and the ranges where allowed
and denied differ are the rows, merged where the deciding rules on both sides are the same.
Nothing here decides a flow.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from topogate.analysis.netpolicy import (
    External,
    PodClass,
    PortRange,
    RuleRef,
    SideVerdict,
    SourceRef,
    Verdict,
)
from topogate.diff.members import ANY_ZONE, OUTSIDE, ClusterSide, Member, members, sides_of
from topogate.diff.trees import Tree

PROTOCOLS = ("TCP", "UDP", "SCTP")
MAX_PORT = 65535


@dataclass(frozen=True)
class Decision:
    """What decides a flow in one tree: the deciding rule at its file:line, or default deny."""

    allowed: bool
    words: str  # "allowed by egress rule 0 of CiliumNetworkPolicy/ml-demo/zone-a-only", "default deny (...)"
    where: str = ""  # file:line:column of that rule (of the enforcing policy's rules for default deny)
    rule: str = ""  # the deciding rule or policy, without its place ("" when none decides)
    side: str = ""  # egress | ingress: the side that decides


@dataclass(frozen=True)
class Row:
    cluster: str
    src: Member
    dst: Member
    protocol: str
    start: int
    end: int
    base: Decision
    head: Decision

    @property
    def change(self) -> str:
        return "opened" if self.head.allowed else "closed"

    @property
    def job(self) -> str:
        """The job the row is listed under: the sender's, else the receiver's."""
        return self.src.job or self.dst.job

    @property
    def boundary(self) -> str:
        """"crossed": two different network zones; "maybe": one side may run in any zone; ""."""
        a, b = self.src.nz, self.dst.nz
        if OUTSIDE in (a, b) or a == b:
            return ""
        return "maybe" if ANY_ZONE in (a, b) else "crossed"

    @property
    def ports(self) -> str:
        return f"{self.start}/{self.protocol}" if self.start == self.end else f"{self.start}-{self.end}/{self.protocol}"


@dataclass(frozen=True)
class DiffResult:
    base_label: str  # GITREF, or the base PATHs
    rows: tuple[Row, ...]
    clusters: tuple[str, ...]  # compared
    members: int  # endpoints asked about, over every cluster
    notes: tuple[str, ...] = ()

    @property
    def opened_boundary(self) -> tuple[Row, ...]:
        return tuple(r for r in self.rows if r.change == "opened" and r.boundary)

    @property
    def opened_from_world(self) -> tuple[Row, ...]:
        """Rows that newly let an address outside the cluster reach a job's pods."""
        return tuple(r for r in self.rows if r.change == "opened" and r.dst.job and r.src.nz == OUTSIDE
                     and isinstance(r.src.peer, External) and (r.src.peer.cidr or r.src.peer.fqdn
                                                                or (r.src.peer.entity or "").startswith("world")))


def _rule_words(r: RuleRef) -> str:
    where = "" if r.spec_index is None else f" of specs[{r.spec_index}]"
    return f"{r.section} rule {r.index}{where} of {r.policy}"


def _place(src: SourceRef | None, shown: Callable[[str], str]) -> str:
    return f"{shown(src.file)}:{src.line}:{src.column}" if src is not None else ""


def place_parts(where: str) -> tuple[str, int, int] | None:
    """A Decision's `where` (file:line:column) as its parts; None when it holds no place."""
    file, _, rest = where.rpartition(":")
    file, _, line = file.rpartition(":")
    if not file or not line.isdigit() or not rest.isdigit():
        return None
    return file, int(line), int(rest)


def _denial(sv: SideVerdict, direction: str, side: ClusterSide, shown: Callable[[str], str]) -> Decision:
    if sv.decided_by is not None:
        r = sv.decided_by
        return Decision(False, f"denied by {_rule_words(r)}", _place(r.source, shown), str(r.policy), direction)
    if sv.enforced_by:
        p = sv.enforced_by[0]
        names = ", ".join(str(e) for e in sv.enforced_by)
        return Decision(False, f"default deny ({direction} of {names})",
                        _place(side.policy_at(p.kind, p.namespace, p.name, direction), shown), names, direction)
    return Decision(False, f"denied ({direction}: {sv.reason})", "", "", direction)


def decision(v: Verdict, side: ClusterSide, shown: Callable[[str], str]) -> Decision:
    """The deciding rule of a verdict, as a row shows it."""
    if not v.allowed:
        return (_denial(v.egress, "egress", side, shown) if not v.egress.allowed
                else _denial(v.ingress, "ingress", side, shown))
    # The rule on an enforced side opens the flow (an unenforced side allows by default).
    for sv, direction in ((v.egress, "egress"), (v.ingress, "ingress")):
        if sv.enforced and sv.decided_by is not None:
            r = sv.decided_by
            return Decision(True, f"allowed by {_rule_words(r)}", _place(r.source, shown), str(r.policy), direction)
    return Decision(True, "allowed: no policy enforces either side")


def _overlay(base: Sequence[PortRange], head: Sequence[PortRange]) -> list[tuple[str, int, int, Verdict, Verdict]]:
    """The ranges, per protocol, on which the two cuttings disagree on allowed."""
    out: list[tuple[str, int, int, Verdict, Verdict]] = []
    for proto in PROTOCOLS:
        b = [r for r in base if r.protocol == proto]
        h = [r for r in head if r.protocol == proto]
        i = j = 0
        lo = 1
        while i < len(b) and j < len(h) and lo <= MAX_PORT:
            hi = min(b[i].end, h[j].end)
            if b[i].verdict.allowed != h[j].verdict.allowed:
                out.append((proto, lo, hi, b[i].verdict, h[j].verdict))
            if b[i].end == hi:
                i += 1
            if h[j].end == hi:
                j += 1
            lo = hi + 1
    return out


def pair_rows(cluster: str, src: Member, dst: Member, base: ClusterSide, head: ClusterSide,
              shown: tuple[Callable[[str], str], Callable[[str], str]]) -> list[Row]:
    """The rows of one ordered pair of members."""
    bs, bd, hs, hd = base.peer(src), base.peer(dst), head.peer(src), head.peer(dst)
    rows: list[Row] = []
    for proto, lo, hi, vb, vh in _overlay(base.pset.port_classes(bs, bd, PROTOCOLS),
                                          head.pset.port_classes(hs, hd, PROTOCOLS)):
        db, dh = decision(vb, base, shown[0]), decision(vh, head, shown[1])
        last = rows[-1] if rows else None
        if last is not None and last.protocol == proto and last.end == lo - 1 and (last.base, last.head) == (db, dh):
            rows[-1] = Row(cluster, src, dst, proto, last.start, hi, db, dh)
        else:
            rows.append(Row(cluster, src, dst, proto, lo, hi, db, dh))
    return rows


def _without_covered(rows: list[Row]) -> list[Row]:
    """Rows of a witness pod that a job's group is (its selector's labels are the group's), where
    the group's own row says the same: one opening, told once, in the job's words."""
    said = {(r.src.key, r.dst.key, r.protocol, r.start, r.end, r.base.allowed, r.head) for r in rows}
    groups = {m.key: m for r in rows for m in (r.src, r.dst) if m.job}

    def covered(witness: Member, other: Member, as_src: bool, r: Row) -> bool:
        w = witness.peer
        if witness.job or not isinstance(w, PodClass):
            return False
        for g in groups.values():
            gp = g.peer
            if (isinstance(gp, PodClass) and gp.namespace == w.namespace and set(w.labels) <= set(gp.labels)
                    and w.labels and ((g.key, other.key) if as_src else (other.key, g.key)) + (
                        r.protocol, r.start, r.end, r.base.allowed, r.head) in said):
                return True
        return False

    return [r for r in rows if not covered(r.src, r.dst, True, r) and not covered(r.dst, r.src, False, r)]


def _merged_groups(rows: list[Row]) -> list[Row]:
    """The rows of one job's groups that say the same of the same other end, as one row naming
    the groups: one opening, one row (a rule that opens a job opens each of its groups)."""
    merged: dict[tuple[object, ...], list[Row]] = {}
    for r in rows:
        side = "src" if r.src.job and not r.dst.job else "dst" if r.dst.job and not r.src.job else ""
        if not side:
            merged[("", id(r))] = [r]
            continue
        g, other = (r.src, r.dst) if side == "src" else (r.dst, r.src)
        merged.setdefault((side, g.job, g.nz, other.key, r.protocol, r.start, r.end, r.base, r.head), []).append(r)
    out: list[Row] = []
    for key, group in merged.items():
        if len(group) == 1:
            out.append(group[0])
            continue
        side = str(key[0])
        members_ = [r.src if side == "src" else r.dst for r in group]
        job = members_[0].job
        names = ", ".join(m.key.split("#", 1)[1] for m in members_)
        kind, ns, name = job.split("/", 2)
        one = Member(f"{job}#{names}", f"{ns}/{kind}/{name} ({names})", members_[0].peer, members_[0].nz, job, None)
        r = group[0]
        out.append(Row(r.cluster, one if side == "src" else r.src, one if side == "dst" else r.dst,
                       r.protocol, r.start, r.end, r.base, r.head))
    return out


def _row_order(index: dict[str, int]) -> Callable[[Row], tuple[object, ...]]:
    def key(r: Row) -> tuple[object, ...]:
        return (r.cluster, r.job == "", r.job, r.src.nz, r.dst.nz, index[r.src.key], index[r.dst.key],
                PROTOCOLS.index(r.protocol), r.start)
    return key


def diff_trees(base: Tree, head: Tree, base_label: str) -> DiffResult:
    """Every row of every cluster both trees have (module doc)."""
    b_sides, h_sides = sides_of(base.inventory, base.objects), sides_of(head.inventory, head.objects)
    notes = [*base.notes, *head.notes]
    for name in sorted(set(b_sides) ^ set(h_sides)):
        where = "head" if name in h_sides else "base"
        notes.append(f"cluster {name} has manifests in the {where} tree only: not compared")
    rows: list[Row] = []
    clusters: list[str] = []
    asked = 0
    for name in [c for c in h_sides if c in b_sides]:
        b, h = b_sides[name], h_sides[name]
        clusters.append(name)
        for job in sorted(set(h.stuck) - {m.job for m in b.jobs.values()}):
            notes.append(f"cluster {name}: {job} is new and cannot run: {', '.join(h.stuck[job])} fit no node "
                         "(no flow of its is compared; `topogate check` says why)")
        ms = members(b, h)
        asked += len(ms)
        index = {m.key: i for i, m in enumerate(ms)}
        got: list[Row] = []
        for s in ms:
            if "src" not in s.roles or isinstance(s.peer, External) and s.peer.fqdn:
                continue  # a name selects a destination only (toFQDNs): as a sender it is world
            for d in ms:
                if "dst" not in d.roles:
                    continue  # an address only an ingress rule names: as a receiver it is world
                if not isinstance(s.peer, PodClass) and not isinstance(d.peer, PodClass):
                    continue  # between two outside endpoints no policy applies
                got += pair_rows(name, s, d, b, h, (base.shown, head.shown))
        got = _merged_groups(_without_covered(got))
        # a merged row is ordered where its first group is
        for m in {m.key: m for r in got for m in (r.src, r.dst)}.values():
            if m.key not in index:
                index[m.key] = index[f"{m.job}#{m.key.split('#', 1)[1].split(', ')[0]}"]
        rows += sorted(got, key=_row_order(index))
    return DiffResult(base_label, tuple(rows), tuple(clusters), asked, tuple(notes))


__all__ = ["Decision", "DiffResult", "PROTOCOLS", "Row", "decision", "diff_trees", "place_parts"]
