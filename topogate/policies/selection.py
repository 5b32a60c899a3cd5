"""Which findings a check reports: `--select/--ignore` and per-object suppression annotations.

Both act after the rules ran, on the finished result, so the analysis is the same whatever is
selected and `explain` (which shows the whole map) is unaffected.

`--select` and `--ignore` take comma-separated rule IDs (TG101), ID prefixes (TG1: every TG1xx
rule) or names (hard-block), as ruff does. `--ignore` wins over `--select`.

An object suppresses one rule's findings on itself with an annotation that says why:

    metadata:
      annotations:
        topogate.dev/ignore: "TG102: the nightly smoke job runs on one node"

Several rules: one `RULE: reason` per line. On a member of a job made of several objects (a
`topogate.dev/group`), the annotation covers that job's findings too. It also covers the rule's
findings shown at the annotated object (reported at a line of its document), whatever object
they are about: TG112's finding about a job is shown at the policy rule that opens the job, and
that policy is where a person reading the report annotates. A suppression without a reason is not honoured
(the finding stays and TG010 says what to write): a reason is what a reviewer reads.
Suppressions are counted in the report's summary, next to where waivers are explained, so a
quiet report never hides that something was silenced.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from topogate.analysis.result import CheckResult, RuleInfo, Suppression
from topogate.core.findings import Finding
from topogate.core.position import Position
from topogate.core.words import did_you_mean
from topogate.k8s.objects import K8sObject
from topogate.safeio.saferead import InputError, read_text

ANNOTATION = "topogate.dev/ignore"
# Findings about the suppressions themselves must never be hidden by them, nor the one about the
# gate's settings.
UNSUPPRESSIBLE = ("TG001", "TG010", "TG011")


class SelectionError(Exception):
    """A --select/--ignore value naming no rule (exit 2)."""


LISTS_THEM = " (`topogate rules` lists them)"


def resolve_rules(spec: Sequence[str], rules: Iterable[RuleInfo], option: str) -> frozenset[str]:
    """Rule IDs named by comma-separated IDs, ID prefixes or names; unknown values are an error."""
    infos = tuple(rules)
    out: set[str] = set()
    unknown: list[str] = []
    for raw in spec:
        for item in (s.strip() for s in raw.split(",")):
            if not item:
                continue
            hit = {r.id for r in infos
                   if r.id.upper().startswith(item.upper()) or r.name == item.lower()}
            if not hit:
                unknown.append(item)
            out |= hit
    if unknown:
        names = [r.id for r in infos] + [r.name for r in infos]
        raise SelectionError("; ".join(f"{option} {u}: no such rule{did_you_mean(u, names)}" for u in unknown)
                             + LISTS_THEM)
    return frozenset(out)


def parse_annotation(value: object, known: Mapping[str, str]) -> tuple[list[tuple[str, str]], list[str]]:
    """(rule ID, reason) pairs of one annotation value, and the problems with it (TG010).

    `known` maps rule IDs to names."""
    pairs: list[tuple[str, str]] = []
    problems: list[str] = []
    if not isinstance(value, str):
        return pairs, [f"{ANNOTATION} must be a string of `RULE: reason` lines"]
    for line in (ln.strip() for ln in value.splitlines()):
        if not line:
            continue
        rule, sep, reason = line.partition(":")
        rule, reason = rule.strip(), reason.strip()
        ids = [rid for rid, name in sorted(known.items()) if rid == rule.upper() or name == rule.lower()]
        if not ids:
            hint = did_you_mean(rule, [*known, *known.values()])
            problems.append(f"{ANNOTATION}: '{rule}' is not a rule ID or name{hint} (see `topogate rules`)")
        elif not sep or not reason:
            problems.append(f"{ANNOTATION}: {ids[0]} has no reason; write `{ids[0]}: why it is safe`")
        elif ids[0] in UNSUPPRESSIBLE:
            problems.append(f"{ANNOTATION}: {ids[0]} cannot be suppressed")
        else:
            pairs.append((ids[0], reason))
    return pairs, problems


def object_annotations(o: K8sObject) -> dict[str, object]:
    md = o.obj.get("metadata")
    ann = md.get("annotations") if isinstance(md, dict) else None
    return ann if isinstance(ann, dict) else {}


def suppressions(objects: Iterable[K8sObject], known: Mapping[str, str]) -> tuple[Suppression, ...]:
    """Every honoured suppression (the malformed ones are TG010's findings)."""
    found: list[Suppression] = []
    for o in objects:
        value = object_annotations(o).get(ANNOTATION)
        if value is None:
            continue
        pairs, _ = parse_annotation(value, known)
        pos = o.locate(("metadata", "annotations", ANNOTATION))
        span = _span(o.pos) if pairs else None
        found += [Suppression(o.ref, rid, reason, pos, span) for rid, reason in pairs]
    return tuple(sorted(set(found), key=lambda s: (s.object, s.rule)))


def _span(start: Position) -> tuple[str, int, int] | None:
    """(file, first line, last line) of the YAML document that starts at `start`: up to the next
    `---` or `...` at column 0 (or the end of the file). None when the file cannot be read."""
    try:
        lines = read_text(start.file, start.file).splitlines()
    except (InputError, OSError):
        return None
    end = next((i for i in range(start.line, len(lines)) if lines[i].startswith(("---", "..."))), len(lines))
    return start.file, start.line, end


def _owners(result: CheckResult) -> dict[str, list[str]]:
    """Member object -> the jobs it belongs to: findings of a job made of several objects
    (a `topogate.dev/group`) name the group, and the annotation sits on one of its members."""
    out: dict[str, list[str]] = {}
    for job in result.jobs:
        for g in job.groups:
            kind, _, name = g.name.partition("/")
            if name and "/" not in name:
                out.setdefault(f"{kind}/{job.namespace}/{name}", []).append(job.object)
    return out


@dataclass(frozen=True)
class SelectedResult(CheckResult):
    """A CheckResult after --select/--ignore. What they left out is kept, to be counted: a
    report that says "ok: 0 errors" under a job that is NOT colocated must say why."""

    deselected: tuple[Finding, ...] = ()


def deselected(result: CheckResult) -> tuple[Finding, ...]:
    """The findings --select/--ignore left out of `result` (none when no selection was made)."""
    return result.deselected if isinstance(result, SelectedResult) else ()


def _keep(f: Finding, select: frozenset[str] | None, ignore: frozenset[str]) -> bool:
    if f.rule in ignore:
        return False
    return select is None or f.rule in select


def apply(result: CheckResult, objects: Iterable[K8sObject], select: frozenset[str] | None,
          ignore: frozenset[str]) -> CheckResult:
    """The result with unselected findings dropped and annotated ones moved to `suppressed`."""
    honoured = suppressions(objects, {r.id: r.name for r in result.rules})
    owners = _owners(result)
    by_key = {(owner, s.rule): s for s in honoured for owner in (s.object, *owners.get(s.object, ()))}
    shown_at: dict[str, list[Suppression]] = {}
    for s in honoured:
        shown_at.setdefault(s.rule, []).append(s)
    kept: list[Finding] = []
    hidden: list[tuple[Finding, Suppression]] = []
    left_out: set[Finding] = set()
    used: set[tuple[str, str]] = set()
    for f in result.findings:
        if not _keep(f, select, ignore):
            left_out.add(f)
            continue
        hit = by_key.get((f.object, f.rule)) or next(
            (s for s in shown_at.get(f.rule, ()) if s.shows(f)), None)
        if hit is not None:
            used.add((hit.object, hit.rule))
            hidden.append((f, hit))
            continue
        kept.append(f)
    applied = tuple(s for s in honoured if (s.object, s.rule) in used)
    waived = tuple(w for w in result.waived if _keep(w.finding, select, ignore))
    fields = {f.name: getattr(result, f.name) for f in dataclasses.fields(CheckResult)}
    fields.update(findings=tuple(sorted(set(kept))), suppressed=applied, waived=waived,
                  annotated=tuple(sorted(hidden, key=lambda h: h[0])))
    return SelectedResult(**fields, deselected=tuple(sorted(left_out)))


__all__ = ["ANNOTATION", "LISTS_THEM", "SelectedResult", "SelectionError", "apply",
           "deselected", "object_annotations", "parse_annotation", "resolve_rules", "suppressions"]
