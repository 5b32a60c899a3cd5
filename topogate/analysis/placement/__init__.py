"""Where can each pod of a training job land, and can the job end up split across zones?

Per job and per replica group this computes the zones (and pools) where the group's pods can
land in a *feasible placement* (one where every pod of the job gets a node), whether every such
placement keeps the whole job in one zone (``colocated``), and which pairs of zones two groups can
occupy at the same time (``zone_pairs``), which the reachability check walks.

The relations between groups are solved at the level of groups (label classes), never pods, so
the cost is linear in jobs and independent of replica counts. ``place_job`` runs these steps in
this order; each returns its own frozen record (named after the step), which later steps read
and none changes, and ``result.assemble`` builds the ``JobPlacement`` from the records.

1. Node filters (``nodes``, record ``NodeFilters``).  The node filters of ``scheduling`` give
   each group the pools it passes, and so its node-feasible zones (the DRA devices it claims
   included, ``k8s.dra``); a pod set Kueue admits uses only the pools of its flavors. Required
   podAffinity also filters nodes: a node lacking a term's topologyKey is out (kube-scheduler
   InterPodAffinity plugin).
2. Pod affinity terms (``affinity``, record ``Affinity``).  The required podAffinity terms of a
   pod act together: the scheduler counts existing pods that match ALL of them and needs one in
   the node's domain of every term's key (satisfyPodAffinity), so they are one effective term,
   less the matches that repel the pod where it would find them, and with a peer that itself
   follows only this job's groups replaced by those groups. A term on the zone key or on
   ``kubernetes.io/hostname`` (same node, hence same zone) ties zones; terms on other keys only
   need such pods to exist. Required podAntiAffinity on the zone key among the job's groups
   repels both ways: the scheduler also honours the anti-affinity of pods already running
   (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity);
   on a key every node shares (``domains``) the two never run at once; with pods outside the job
   it is a race (``races``): whichever comes second waits, a pending risk on both jobs. When every
   match of a group's affinity repels it (``conflicts``), no existing pod can satisfy it.
3. Groups that never start (``feasible``, record ``Unstartable``): no pool; no pool with the
   podAffinity keys; no pod matching every term; affinity whose every match repels it; or affinity
   that waits on each other with none matching itself (deadlock). When no pod matching every term
   exists yet and the pod matches all its own terms, the scheduler lets it through anywhere ("the
   first pod in a series that have affinity to themselves", same function), so a self-matching
   group starts.
4. Zone sets and co-location units (``units``, ``fixpoint``, record ``Colocation``).  One greatest
   fixpoint, because each half feeds the other: a zone-tied term allows only zones where some pod
   matching it can be (groups of the job, or known peers; a self-matching group is co-located but
   not pinned), and a group whose zone is certain (one pod, or one zone) removes that zone from
   every group it repels; groups provably in one zone are merged (union-find): a single-pod
   group; a group with one possible zone; a group whose term matches only itself; a group whose
   term matches (besides itself, only if it is already in that unit) only groups of one unit; a
   set of groups that trail one first pod (each follows only members, the possible first pods
   follow each other), within the job or through other jobs' and workloads' pods (``trailing``,
   found once per cluster by ``place_all``); groups following one one-zone peer (a one-replica workload, a group of
   another job held in one zone); a unit placed whole (Kueue, a PodGroup, KAI or Volcano:
   ``schedulers``); units pinned to the same single zone in every run, not only when all of them
   start (no member's ``reach`` goes past it: a member may go first elsewhere, the rest of its
   unit Pending, its own pods bound). Members of a unit share the unit's zones
   (their intersection). Then a GPU unit keeps only the zones where all its GPU pods fit together
   (``capacity.fit_gpu_units``: GPUs are whole devices on one node; each member only those its
   own filters pass; a member whose pods repel each other on the hostname needs a node a pod; a
   zone it loses is where its first pod may still land, a pending risk), a
   hostname-key follower only the zones of nodes a followed pod can share with it, within as many
   nodes as run followed pods (``follow``), a unit whose members can each land but share no zone
   never runs whole, and the orders that strand pods are pending risks: a member with no
   podAffinity of its own in a zone the rest cannot follow, followed pods placed where the
   follower cannot go (or, for a group that follows its own pods too, all in one zone too small
   for it beside them), a group held in one zone whose GPUs the job's free groups may take first,
   a race. ``reach``: where a group's pods can be bound in some run, stranded or not, which other
   jobs' affinity may find.
5. Splits (``spread``, record ``Splits``).  Required podAntiAffinity of a group with itself on
   the zone key puts each pod in its own zone. A topologySpreadConstraint with
   ``whenUnsatisfiable: DoNotSchedule`` whose selector matches the group's own pods is judged as
   PodTopologySpread's Filter does: a pod may go to a domain (zone, node, or the whole cluster
   for a key every node shares) only if the matching pods there plus itself exceed the global
   minimum by at most ``maxSkew``. The minimum is taken over the eligible domains, those of nodes
   passing the pod's nodeAffinity and nodeSelector (``nodeAffinityPolicy: Honor``, the default)
   or all (``Ignore``), and only tolerated nodes when ``nodeTaintsPolicy: Honor`` (default
   ``Ignore``), and is 0 with fewer of them than ``minDomains``
   (https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/). A domain
   the counted pods can fill only so far (its GPUs; none for one they cannot reach; none outside
   the zone of a unit) caps the minimum, and so every other domain: more pods than that lets run
   leave the rest Pending; ``pods > maxSkew`` over two or more eligible zones splits the group.
   Counted pods of other groups take the domain they run in: a pod of the group it follows runs
   before its first and costs it that domain's room (Pending when the rest do not fit); those
   of other groups, or of other workloads of the namespace the selector matches, may come first
   in some order (a pending risk when they would leave too little room). A group held in one
   zone is judged in each of its zones: one zone that holds all its pods keeps it runnable, and a
   zone that holds fewer is a pending risk (its first pod may land there, and the rest must join
   it). ``ScheduleAnyway`` constrains nothing. Required podAntiAffinity of a group with itself on the
   hostname key puts one pod per node: more pods than nodes in the pools it fits (in one zone's,
   when it is held in one) leave the rest Pending. Splits come after the GPU units of step 4
   because they are judged over the zones a unit can really hold.
6. Capacity (``capacity``, record ``GpuFit``).  A group needs ``pods`` slots of
   ``gpus_per_node // gpus_per_pod`` per node in the pools it fits (claimed DRA devices of its
   classes for a pod that claims them); the job's GPUs must not exceed those of all pools where
   some group can land.

Not modelled (documented so nobody relies on it; docs/coverage.md has the whole list): CPU/memory,
scoring and preferences, contention between jobs for GPUs, pods already running in the cluster
other than the known ``peers``, per-pod labels (index, hash), namespace labels other than
``kubernetes.io/metadata.name`` unless given.
"""

from __future__ import annotations

from topogate.analysis.placement.model import Capacity, GroupPlacement, JobPlacement
from topogate.analysis.placement.peers import AffinityPeer, PeerIndex, peers_of
from topogate.analysis.placement.place import place_all, place_job
from topogate.analysis.scheduling import required_node_affinity

__all__ = [
    "Capacity", "GroupPlacement", "JobPlacement", "AffinityPeer", "PeerIndex", "peers_of", "place_job", "place_all",
    "required_node_affinity",
]
