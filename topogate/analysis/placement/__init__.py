"""Where can each pod of a training job land, and can the job end up split across zones?

Per job and per replica group this computes the zones (and pools) where the group's pods can
land in a *feasible placement* (one where every pod of the job gets a node), whether every such
placement keeps the whole job in one zone (``colocated``), and which pairs of zones two groups can
occupy at the same time (``zone_pairs``), which the reachability check walks.

How: first the node filters of ``scheduling`` give each group its node-feasible zones. Then the
relations between groups are solved at the level of groups (label classes), never pods, so the
cost is linear in jobs and independent of replica counts:

1. Zone sets.  A greatest fixpoint narrows each group's zones. The required podAffinity terms of
   a pod act together: the scheduler counts existing pods that match ALL of them and needs one in
   the node's domain of every term's key, and a node lacking a term's key is out (kube-scheduler
   InterPodAffinity plugin, satisfyPodAffinity). A term on the zone key or on
   ``kubernetes.io/hostname`` (same node, hence same zone) therefore allows only zones where some
   pod matching every term can be (groups of the job, or known peers); terms on other keys only
   need such pods to exist. When no pod matching every term exists yet and the pod matches all its
   own terms, the scheduler lets it through anywhere ("the first pod in a series that have
   affinity to themselves", same function), so a self-matching group is co-located but not pinned.
   A group whose zone is certain (one pod, or one zone) removes that zone from every group it
   repels with required podAntiAffinity on the zone key, checked both ways: the scheduler also
   honours the anti-affinity of pods already running
   (https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#inter-pod-affinity-and-anti-affinity).
   Groups whose affinity waits on each other with none matching itself never start (deadlock).
2. Co-location units.  Groups provably in one zone are merged (union-find): a single-pod group;
   a group with one possible zone; a group whose term matches only itself; a group whose term
   matches (besides itself, only if it is already in that unit) only groups of one unit; a set
   of groups each of which has a term that matches exactly that set (the first pod picks the zone,
   every later one finds a match only there); units pinned to the same single zone. Members of a
   unit then share the unit's zones (their intersection), and a GPU unit keeps only the zones
   where all its GPU pods fit together.
3. Splits.  Required podAntiAffinity of a group with itself on the zone key puts each pod in its
   own zone. A topologySpreadConstraint on the zone key with ``whenUnsatisfiable: DoNotSchedule``
   whose selector matches the group's own pods cannot keep more than ``maxSkew`` of them in one
   zone while another eligible zone is empty, so ``pods > maxSkew`` over two or more eligible
   zones splits the group; eligible zones are those of nodes passing the pod's nodeAffinity and
   nodeSelector (``nodeAffinityPolicy: Honor``, the default) or all zones (``Ignore``), and also
   only tolerated nodes when ``nodeTaintsPolicy: Honor`` (default ``Ignore``)
   (https://kubernetes.io/docs/concepts/scheduling-eviction/topology-spread-constraints/). An
   eligible zone the pods can never reach (a tainted zone under the default taint policy) keeps
   the global minimum at 0, so each reachable zone holds at most ``maxSkew`` of them; so does
   ``minDomains`` above the number of eligible zones. ``ScheduleAnyway`` constrains nothing.
   Anti-affinity and spread on other keys (hostname, region) do not change zones.
4. Capacity.  GPUs are whole devices on one node: a group needs ``pods`` slots of
   ``gpus_per_node // gpus_per_pod`` per node in the pools it fits; a co-location unit must fit in
   one zone; the job's GPUs must not exceed those of all pools where some group can land.

Not modelled (documented so nobody relies on it): CPU/memory, scoring and preferences, pods
already running in the cluster other than the known ``peers``, per-pod labels (index, hash),
namespace labels other than ``kubernetes.io/metadata.name`` unless given.
"""

from __future__ import annotations

from topogate.analysis.placement.model import Capacity, GroupPlacement, JobPlacement
from topogate.analysis.placement.peers import Peer, PeerIndex, peers_of
from topogate.analysis.placement.place import place_all, place_job
from topogate.analysis.scheduling import required_node_affinity

__all__ = [
    "Capacity", "GroupPlacement", "JobPlacement", "Peer", "PeerIndex", "peers_of", "place_job", "place_all",
    "required_node_affinity",
]
