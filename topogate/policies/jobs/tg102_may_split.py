"""TG102 may-split: the scheduler may place the job's pods in more than one zone.

The analysis computes, per replica group, every zone where its pods can land (nodeSelector,
required nodeAffinity, taints and tolerations, GPU fit) and which groups are tied together by a
required podAffinity on the zone key. A job is co-located only if every feasible placement puts
all its pods in one zone; otherwise this rule fires and says which groups can drift apart.

Why: a job split across zones runs, but pays inter-AZ latency on every all-reduce (30-60%
slower), pays inter-AZ transfer on the bill (about $0.01/GB each direction on AWS), and where the
zones sit behind different network policies it never starts at all.

Failing example: the master has no affinity, workers are pinned to `zone-a`:

```yaml
Master: {template: {spec: {containers: [...]}}}
Worker: {template: {spec: {affinity: {nodeAffinity: ...zone In [zone-a]...}}}}
```

Passing example: every replica type, master included, carries the same required nodeAffinity
on the zone label (`placement: pin`), or follows the coordinator with a required podAffinity on
`topology.kubernetes.io/zone` (`placement: follow`), or the job is in a Kueue queue and its pod
sets are one PodSet group with `kueue.x-k8s.io/podset-required-topology` on the zone label
(`scheduler: kueue`; docs/kueue.md, rules TG301-TG307), or every replica type's pods name one
PodGroup (Workload API, `spec.schedulingGroup.podGroupName`) whose
`spec.schedulingConstraints.topology` key is the zone label.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from topogate.analysis.result import GroupMap
from topogate.core.findings import Issue
from topogate.core.position import NOWHERE, Position, note_of
from topogate.policies.context import Context

NAME = "may-split"


SEVERITY = "error"


def check(ctx: Context) -> Iterator[Issue]:
    for job in ctx.jobs:
        if job.colocated or not job.schedulable:
            continue  # an unschedulable job is reported by TG103, not twice
        zones = ", ".join(f"{g.name} in {{{', '.join(g.zones)}}}" for g in job.groups)
        why = "; ".join(job.split_reasons) or zones
        where = _where(job.groups, job.pos)
        yield Issue(
            job.object,
            f"{job.object} can be split across zones ({why}). Split, it runs 30-60% slower on "
            "cross-zone all-reduce, pays inter-AZ egress on every step, and where zones are "
            "separated by policy it never starts. Fix: pin every replica type to one zone with "
            "required nodeAffinity on the zone label, or make them follow the coordinator with "
            "required podAffinity on topology.kubernetes.io/zone (inventory: placement: pin or "
            "follow)." + _other_renders(job.groups, where),
            where,
        )


def _where(groups: Sequence[GroupMap], job_pos: Position) -> Position:
    """Where a person fixes the split: the first group's pod template (the coordinator's, where
    the zone affinity goes), not the start of the file; but a group whose template a GitOps
    engine changed (an Application's or Flux Kustomization's patch) first, as that change is
    what the repository's own file does not show, and the position names it."""
    placed = [g.pos for g in groups if g.pos != NOWHERE]
    return next((p for p in placed if note_of(p)), placed[0] if placed else job_pos)


def _other_renders(groups: Sequence[GroupMap], where: Position) -> str:
    """What an engine changed in the other groups' templates: the finding's own position says
    its group's (policies.engine), and a split can come from any group's."""
    notes = dict.fromkeys(n for g in groups if g.pos != where and (n := note_of(g.pos)) and n != note_of(where))
    return "".join(f" {n}" for n in notes)
