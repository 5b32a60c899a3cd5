"""What Kueue's Topology Aware Scheduling does with a job: which of its pod sets it fits into one
zone, and together with which (docs/kueue.md records where in Kueue's source each point is).

- Kueue manages a job that is in a queue (``analysis.kueue``). Its topology annotations are read
  per pod set (one replica group = one PodSet). Without a queue Kueue ignores them.
- ``podset-required-topology: L`` fits the pod set into ONE domain of level L, or does not admit
  it; ``podset-preferred-topology`` tries one domain and spreads over several when it does not
  fit. Domains nest, so L keeps the pod set in one zone when L is the zone level or a lower level
  of the flavor's Topology (the hostname always: one node).
- Only TAS flavors (``topologyName``) whose Topology has level L are assigned to a pod set that
  requests L (``checkPodSetAndFlavorMatchForTAS``).
- ``podset-group-name`` makes pod sets one unit of flavor assignment and topology fitting: the
  group's leader and workers go into one domain together. Kueue's job webhooks accept a group of
  exactly two pod sets, one of them a single pod, with the same request and a name that is not a
  number (``ValidatePodSetGroupingTopology``); other groups are not counted here.

So the co-location units Kueue guarantees are: a valid group with a one-zone required level, and
each other pod set with a one-zone required level (in a zone of its own choosing). The placement
analysis merges these units like any other (step 4, ``units``), and a unit's pods use only
the pools of the flavors Kueue may give them (``flavor_fits``). Everything that keeps Kueue
from holding the job together is a ``Concern``; those marked ``needs_colocation`` matter only
when nothing else (pin, podAffinity) holds the job in one zone.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.kueue import Chain, Flavor, KueueConfig
from topogate.analysis.locate import position_of
from topogate.analysis.scheduling import HOSTNAME_LABEL, NodeClass, PoolFit, Removal, fit_pools
from topogate.core.position import Position
from topogate.k8s.jobs import JobGroup, TrainingJob
from topogate.k8s.kueue import (
    GROUP_NAME,
    PREFERRED_TOPOLOGY,
    QUEUE_LABEL,
    REQUIRED_TOPOLOGY,
    TOPOLOGY_ANNOTATIONS,
)

# Kinds whose Kueue webhook refuses a PodSet group it cannot fit (docs/kueue.md); for the others
# the webhook lets the job in and the scheduler's handling of such a group is not specified.
STRICT_GROUP_KINDS = ("MPIJob", "JobSet")
KUEUE_KINDS = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob")

# Concern kinds, one rule each (topogate/policies/tg30*).
NO_QUEUE = "no-queue"
FLAVOR_NO_TOPOLOGY = "flavor-no-topology"
UNKNOWN_LEVEL = "unknown-level"
LOOSE = "loose"  # preferred topology, or a required level above the zone
LEFT_OUT = "left-out"  # a pod set outside the group, or a job Kueue cannot group
BAD_GROUP = "bad-group"
UNVERIFIED = "unverified"

# (group, annotation or "" for the template) -> where it is written
Where = Callable[[JobGroup, str], Position]


@dataclass(frozen=True)
class Concern:
    kind: str
    object: str
    message: str
    pos: Position
    needs_colocation: bool = False  # a finding only if the job is not held in one zone otherwise


@dataclass(frozen=True)
class KueueJob:
    queue: str = ""  # "namespace/name" of the LocalQueue, "" when Kueue does not manage the job
    units: tuple[frozenset[str], ...] = ()  # groups Kueue fits into one zone, per unit
    summary: str = ""  # how Kueue places the job, for the map and explain
    split_note: str = ""  # why Kueue does not hold the whole job in one zone
    blocked: str = ""  # why Kueue never admits the job ("" when it can)
    # Per pod set of a unit: the flavors Kueue may give it (their node labels and tolerations
    # decide the pools its pods can use).
    flavors: tuple[tuple[str, tuple[Flavor, ...]], ...] = ()
    concerns: tuple[Concern, ...] = ()


@dataclass(frozen=True)
class _Request:
    level: str
    required: bool
    group: str


def _request(g: JobGroup) -> _Request | None:
    ann = dict(g.annotations)
    if ann.get(REQUIRED_TOPOLOGY):
        return _Request(ann[REQUIRED_TOPOLOGY], True, ann.get(GROUP_NAME, ""))
    if ann.get(PREFERRED_TOPOLOGY):
        return _Request(ann[PREFERRED_TOPOLOGY], False, ann.get(GROUP_NAME, ""))
    return None


def _has_topology_annotation(g: JobGroup) -> bool:
    return any(k in TOPOLOGY_ANNOTATIONS for k, _ in g.annotations)


def _ann_key(g: JobGroup) -> str:
    keys = [k for k, _ in g.annotations]
    return next((k for k in (REQUIRED_TOPOLOGY, PREFERRED_TOPOLOGY, GROUP_NAME) if k in keys), "")


def _one_zone(level: str, levels: Sequence[str], zone_key: str) -> bool:
    if level == HOSTNAME_LABEL:
        return True
    return zone_key in levels and level in levels and levels.index(level) >= levels.index(zone_key)


def _serving(chain: Chain, level: str) -> list[Flavor]:
    """The queue's TAS flavors whose Topology has the level: the only ones Kueue assigns."""
    return [f for f in chain.flavors if (t := chain.topology_of(f)) is not None and level in t.levels]


def _is_number(name: str) -> bool:
    try:
        float(name)
    except ValueError:
        return False
    return True


def analyse(job: TrainingJob, job_labels: Mapping[str, object], cfg: KueueConfig, zone_key: str,
            where: Where, job_pos: Position) -> KueueJob | None:
    """How Kueue places the job; None when Kueue has nothing to do with it."""
    live = [g for g in job.groups if g.pods > 0]
    annotated = [g for g in live if _has_topology_annotation(g)]
    queue = cfg.queue_of(job.namespace, dict(job_labels))
    if job.kind not in KUEUE_KINDS or (not queue and not annotated):
        return None
    if not queue:
        g = annotated[0]
        misplaced = [h.name for h in live if QUEUE_LABEL in h.label_map]
        where_not = (f" (it is on the pod template of {', '.join(misplaced)}, where Kueue does not read "
                     "it)" if misplaced else "")
        return KueueJob(concerns=(Concern(NO_QUEUE, job.object_id, (
            f"{job.object_id}: {g.name} asks Kueue for a topology ({_ann_key(g)}), but the job has no "
            f"{QUEUE_LABEL} label{where_not} and {job.namespace} has no LocalQueue named default "
            "among the manifests: Kueue does not manage the job and nobody reads these annotations; the "
            "default scheduler places each pod by its own constraints. Fix: add the label "
            f"{QUEUE_LABEL}: <LocalQueue> to the job's metadata (inventory: scheduler: kueue)."),
            where(g, _ann_key(g))),))
    at_queue = where(job.groups[0], QUEUE_LABEL) if job.groups and job_labels.get(QUEUE_LABEL) else job_pos
    chain = cfg.resolve(job.namespace, queue)
    ref = f"{job.namespace}/{queue}"
    if chain.missing:
        return KueueJob(ref, concerns=(Concern(UNVERIFIED, job.object_id, (
            f"{job.object_id} is in Kueue queue {ref}, but {chain.missing} is not among the "
            "manifests: topogate cannot verify that Kueue keeps the job in one zone and judges it "
            "by its pod constraints alone (it may report a split Kueue would prevent). Fix: give "
            "the cluster's Kueue objects (LocalQueue, ClusterQueue, ResourceFlavors, Topology) as "
            "PATHs too, e.g. the generated clusters/<cluster>/kueue."), at_queue),))
    return _placed(job, live, chain, ref, zone_key, where)


def _placed(job: TrainingJob, live: list[JobGroup], chain: Chain, ref: str, zone_key: str,
            where: Where) -> KueueJob:
    concerns: list[Concern] = []
    requests = {g.name: r for g in live if (r := _request(g)) is not None}
    if requests:
        concerns += _flavor_concerns(job, chain)
    one_zone: set[str] = set()
    reported: set[str] = set()  # pod sets with a concern of their own: not "left out" as well
    for g in live:
        r = requests.get(g.name)
        if r is None:
            continue
        serving = _serving(chain, r.level)
        if not serving:
            if any(f.topology for f in chain.flavors):
                concerns.append(_unknown_level(job, g, r, chain, where))
            reported.add(g.name)
            continue
        if all(_one_zone(r.level, t.levels, zone_key)
               for f in serving if (t := chain.topology_of(f)) is not None):
            if r.required:
                one_zone.add(g.name)
            else:
                reported.add(g.name)
                concerns.append(Concern(LOOSE, job.object_id, (
                    f"{job.object_id}: {g.name} only prefers one {r.level} domain "
                    f"({PREFERRED_TOPOLOGY}): when it does not fit in one, Kueue spreads it over "
                    f"several, and nothing else holds the job in one zone. Fix: "
                    f"{REQUIRED_TOPOLOGY}: {r.level} (Kueue then waits until one zone has room)."),
                    where(g, PREFERRED_TOPOLOGY), needs_colocation=True))
        else:
            reported.add(g.name)
            concerns.append(Concern(LOOSE, job.object_id, (
                f"{job.object_id}: {g.name} asks Kueue for one {r.level} domain, which the "
                f"queue's Topology does not nest inside one {zone_key} domain: Kueue may put its "
                f"pods in different zones. Fix: {REQUIRED_TOPOLOGY}: {zone_key} (a level of the "
                "Topology at or below the zone)."),
                where(g, REQUIRED_TOPOLOGY if r.required else PREFERRED_TOPOLOGY), needs_colocation=True))
    units, group_concerns, bad = _units(job, live, requests, one_zone, where)
    concerns += group_concerns
    covered = {n for u in units for n in u}
    whole = len(units) == 1 and covered == {g.name for g in live}
    unserved = sorted(n for n in requests if not _serving(chain, requests[n].level))
    if unserved:
        head = _head(chain, ref)
        why = (f"{head} assigns {', '.join(unserved)} no flavor (none with a Topology that has the "
               "requested level): the job waits in the queue and never starts")
        return KueueJob(ref, (), why, concerns=tuple(concerns), blocked=why)
    summary, note = _describe(chain, ref, units, whole, requests)
    if not whole and len(live) > 1:
        concerns += _left_out(job, live, requests, units, reported | bad, where)
    flavors = tuple((n, tuple(_serving(chain, requests[n].level))) for n in sorted(covered))
    return KueueJob(ref, tuple(units), summary, note, concerns=tuple(concerns), flavors=flavors)


def _flavor_concerns(job: TrainingJob, chain: Chain) -> list[Concern]:
    cq = chain.cluster_queue.name if chain.cluster_queue else "?"
    none_tas = not any(f.topology for f in chain.flavors)
    out = []
    for f in chain.flavors:
        if f.topology:
            continue
        effect = ("no flavor of the queue has one, so Kueue never admits a job that asks for a "
                  "topology" if none_tas else "Kueue never gives its nodes to a pod set that asks "
                  "for a topology, and the queue's capacity for such jobs is smaller than it looks")
        out.append(Concern(FLAVOR_NO_TOPOLOGY, f"ResourceFlavor/{f.name}", (
            f"ResourceFlavor {f.name} of ClusterQueue {cq} has no topologyName: {effect}. Fix: "
            f"spec.topologyName: <the Topology whose levels include the zone label>."), f.pos))
    return out


def _unknown_level(job: TrainingJob, g: JobGroup, r: _Request, chain: Chain, where: Where) -> Concern:
    tops = ", ".join(f"{t.name} ({', '.join(t.levels) or 'no levels'})" for t in
                     sorted(chain.topologies.values(), key=lambda t: t.name))
    key = REQUIRED_TOPOLOGY if r.required else PREFERRED_TOPOLOGY
    return Concern(UNKNOWN_LEVEL, job.object_id, (
        f"{job.object_id}: {g.name} asks for topology level {r.level}, which no Topology of "
        f"queue {chain.local_queue.ref if chain.local_queue else '?'} has (levels: {tops}): Kueue "
        f"assigns the pod set no flavor and the job waits in the queue forever. Fix: name a level "
        f"of the Topology (the zone label), or add {r.level} to the Topology's levels."),
        where(g, key))


def _group_problem(members: list[JobGroup], requests: Mapping[str, _Request], name: str) -> str:
    if len(members) != 2:
        return f"it has {len(members)} pod set{'s' if len(members) != 1 else ''}; a group is exactly two"
    if min(m.pods for m in members) != 1:
        return "neither pod set is a single pod; one of the two must be (the leader)"
    if any(m.name not in requests for m in members):
        return "a pod set of the group has no required or preferred topology"
    a, b = (requests[m.name] for m in members)
    if (a.level, a.required) != (b.level, b.required):
        return "its pod sets ask for different topologies; they must ask for the same"
    if _is_number(name):
        return "its name is a number"
    return ""


def _units(job: TrainingJob, live: list[JobGroup], requests: Mapping[str, _Request], one_zone: set[str],
           where: Where) -> tuple[list[frozenset[str]], list[Concern], set[str]]:
    groups: dict[str, list[JobGroup]] = {}
    for g in live:
        name = dict(g.annotations).get(GROUP_NAME)
        if name:
            groups.setdefault(name, []).append(g)
    units: list[frozenset[str]] = []
    concerns: list[Concern] = []
    grouped: set[str] = set()
    bad: set[str] = set()
    for name, members in sorted(groups.items()):
        problem = _group_problem(members, requests, name)
        if problem:
            bad |= {m.name for m in members}
            refused = ("Kueue's webhook refuses the job" if job.kind in STRICT_GROUP_KINDS else
                       "Kueue's webhook lets the job in, and what its scheduler makes of such a group is "
                       "not specified")
            concerns.append(Concern(BAD_GROUP, job.object_id, (
                f"{job.object_id}: PodSet group {name} ({', '.join(m.name for m in members)}) is not "
                f"one Kueue can fit: {problem}. {refused}; topogate does not count it as holding "
                "the pod sets together. Fix: group exactly a single-pod leader and its workers, "
                "with the same required topology."), where(members[0], GROUP_NAME)))
            continue
        if all(m.name in one_zone for m in members):
            units.append(frozenset(m.name for m in members))
            grouped |= {m.name for m in members}
    units += [frozenset({n}) for n in sorted(one_zone - grouped)]
    return units, concerns, bad


def _left_out(job: TrainingJob, live: list[JobGroup], requests: Mapping[str, _Request],
              units: list[frozenset[str]], reported: set[str], where: Where) -> list[Concern]:
    shape = ", ".join(f"{g.name} x{g.pods}" for g in live)
    if len(live) > 2 or min(g.pods for g in live) > 1:
        g = live[0]
        return [Concern(LEFT_OUT, job.object_id, (
            f"{job.object_id} has pod sets {shape}: Kueue groups only two pod sets, one of them a "
            "single pod, so it cannot hold this job in one zone; it fits each pod set with a "
            "required topology into a zone of its own choosing, independently. Fix: keep the "
            "required topology on each pod set and pin the whole job to one zone with required "
            "nodeAffinity on the zone label (inventory: placement: pin with zone:)."),
            where(g, _ann_key(g)), needs_colocation=True)]
    biggest = max(units, key=len, default=frozenset())
    out = []
    for g in live:
        if g.name in biggest or g.name in reported:
            continue
        what = ("has no required topology" if g.name not in requests or not requests[g.name].required
                else "is not in a PodSet group with the others")
        group = dict(g.annotations).get(GROUP_NAME) or next(
            (dict(h.annotations).get(GROUP_NAME, "") for h in live if dict(h.annotations).get(GROUP_NAME)), "")
        out.append(Concern(LEFT_OUT, job.object_id, (
            f"{job.object_id}: {g.name} {what}: Kueue fits it separately from "
            f"{', '.join(sorted({h.name for h in live} - {g.name}))}, possibly in another zone. Fix: "
            f"give every pod set of the job {REQUIRED_TOPOLOGY}: <zone label> and the same "
            f"{GROUP_NAME}: {group or job.name + '-pods'}."), where(g, _ann_key(g)), needs_colocation=True))
    return out


def _head(chain: Chain, ref: str) -> str:
    cq = chain.cluster_queue.name if chain.cluster_queue else "?"
    tops = ", ".join(sorted(chain.topologies)) or "none"
    return f"Kueue: LocalQueue {ref} -> ClusterQueue {cq} (Topology {tops})"


def _describe(chain: Chain, ref: str, units: list[frozenset[str]], whole: bool,
              requests: Mapping[str, _Request]) -> tuple[str, str]:
    head = _head(chain, ref)
    if whole:
        (unit,) = units
        names = sorted(unit)
        level = requests[names[0]].level
        how = (f"fits {names[0]} into one {level} domain" if len(names) == 1 else
               f"fits {' and '.join(names)} as PodSet group {requests[names[0]].group} into one "
               f"{level} domain")
        return f"{head} {how}: the whole job in one zone", ""
    held = [" and ".join(sorted(u)) for u in units]
    if not held:
        return f"{head} admits the job without holding any pod set in one zone", (
            "Kueue admits the job but holds none of its pod sets in one zone")
    return f"{head} holds {', '.join(held)} each in one zone, not together", (
        f"Kueue fits {', '.join(held)} each into a zone of its own choosing, not together")


def where_in(objects_by_ref: Mapping[tuple[str, str, str], object], job: TrainingJob) -> Where:
    """Positions of a job's Kueue annotations and queue label, for findings."""

    def locate(g: JobGroup, key: str) -> Position:
        if key == QUEUE_LABEL:
            o = objects_by_ref.get((job.kind, job.namespace, job.name))
            return _loc(o, ("metadata", "labels", key)) or position_of(job.source)
        parts = g.owner.split("/")
        oref = (parts[0], parts[1], parts[2]) if len(parts) == 3 else (parts[0], "default", parts[-1])
        o = objects_by_ref.get(oref)
        if g.template_path and key:
            found = _loc(o, (*g.template_path, "metadata", "annotations", key))
            if found is not None:
                return found
        return position_of(g.source)

    return locate


def _loc(o: object, path: tuple[object, ...]) -> Position | None:
    locate = getattr(o, "locate", None)
    if locate is None:
        return None
    pos = locate(path)
    return pos if isinstance(pos, Position) else None



def _amended_fits(spec: Mapping[str, Any], f: Flavor, classes: Sequence[NodeClass],
                  cache: dict[Any, tuple[PoolFit, ...]]) -> tuple[PoolFit, ...] | None:
    """The node filters for the pod spec as Kueue admits it on flavor ``f`` (its nodeLabels as
    nodeSelector, its tolerations added); None when the flavor contradicts the pod's own
    nodeSelector (Kueue checks the pod's selector against the flavor and never assigns it)."""
    own = spec.get("nodeSelector") if isinstance(spec.get("nodeSelector"), dict) else {}
    assert isinstance(own, dict)
    labels = dict(f.node_labels)
    if any(str(own[k]) != v for k, v in labels.items() if k in own):
        return None
    raw = spec.get("tolerations")
    tols: list[Any] = raw if isinstance(raw, list) else []
    amended = {**spec, "nodeSelector": {**own, **labels}, "tolerations": [*tols, *f.toleration_dicts()]}
    return fit_pools(amended, classes, cache)


def flavor_fits(spec: Mapping[str, Any], flavors: Sequence[Flavor], classes: Sequence[NodeClass],
                cache: dict[Any, tuple[PoolFit, ...]]) -> tuple[PoolFit, ...]:
    """The node filters for a pod set Kueue admits on one of ``flavors``: a pool fits if it fits
    the pod spec as amended by some flavor (``_amended_fits``)."""
    per_flavor = [(f, fits) for f in flavors if (fits := _amended_fits(spec, f, classes, cache)) is not None]
    ordered = sorted(classes, key=lambda n: (n.zone, n.pool))
    out: list[PoolFit] = []
    for i, node in enumerate(ordered):
        fitting = next((fits[i] for _, fits in per_flavor if fits[i].fits), None)
        selecting = next((fits[i] for f, fits in per_flavor
                          if all(node.label_map.get(k) == v for k, v in f.node_labels)), None)
        out.append(fitting or selecting or PoolFit(node, (Removal(
            "kueue", "flavor", "no flavor of the job's ClusterQueue selects this pool"),)))
    return tuple(out)


def shared_flavor_problem(job: TrainingJob, kueue: KueueJob, classes: Sequence[NodeClass],
                          cache: dict[Any, tuple[PoolFit, ...]]) -> list[str]:
    """A PodSet group gets ONE flavor for all its pod sets (``assignFlavors`` sums their requests
    and checks every pod set against the flavor): a group whose members can use no common flavor
    is never admitted, though each member alone would fit somewhere."""
    by_group = dict(kueue.flavors)
    out = []
    for unit in kueue.units:
        members = [g for n in sorted(unit) if (g := job.group(n)) is not None]
        if len(members) < 2:
            continue
        offered = [{f.name for f in by_group.get(m.name, ())} for m in members]
        common = [f for f in by_group.get(members[0].name, ()) if all(f.name in o for o in offered)]

        def usable(f: Flavor, spec: Mapping[str, Any]) -> bool:
            fits = _amended_fits(spec, f, classes, cache)
            return fits is not None and any(x.fits for x in fits)

        if not any(all(usable(f, m.spec) for m in members) for f in common):
            out.append(f"Kueue gives PodSet group {' and '.join(m.name for m in members)} one flavor, but no "
                       "flavor of the queue has nodes that every member can use: the job waits in the "
                       "queue and never starts")
    return out

__all__ = ["BAD_GROUP", "Concern", "FLAVOR_NO_TOPOLOGY", "KUEUE_KINDS", "KueueJob", "LEFT_OUT", "LOOSE",
           "NO_QUEUE", "UNKNOWN_LEVEL", "UNVERIFIED", "Where", "analyse", "flavor_fits",
           "shared_flavor_problem", "where_in"]
