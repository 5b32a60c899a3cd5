"""Placement as kube-scheduler decides it where the answer depends on other pods: anti-affinity
across jobs (order-dependent, said on both), affinity and anti-affinity on the same pods, spread
judged with counts and capacity, following a one-replica workload, the hostname key, other keys
across jobs, the first pod's zone, and groups that trail one first pod.

Each case is a shape the scheduler oracle (tests/oracles/test_scheduler_oracle.py) generates and holds to
the real kube-scheduler; here each is pinned to the answer that oracle showed.
"""

from __future__ import annotations

from typing import Any

from test_placement import GPU_TAINT, TOLERATE_GPU, ZK, gpu, tpl, zone_anti

from topogate.analysis.map.cluster import _strand_risks
from topogate.analysis.placement import JobPlacement, place_all
from topogate.inventory.model import Cluster, Pool, Zone
from topogate.k8s.jobs import find_jobs

REGION = "topology.kubernetes.io/region"
HOST = "kubernetes.io/hostname"


def _cluster() -> Cluster:
    """zone a: 2 GPU nodes x 8; zone b: 1 GPU node x 8; zone c: 3 CPU nodes."""
    return Cluster("r2", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 2, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
        Zone("zone-b", (Pool("gpu", 1, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
        Zone("zone-c", (Pool("cpu", 3, 0, (("node-type", "cpu"),)),)),
    ))


def jobset(name: str, *groups: tuple[str, int, dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicatedJobs": [
                {"name": g, "replicas": 1, "template": {"spec": {"parallelism": n, "completions": n, "template": t}}}
                for g, n, t in groups]}}


def deployment(name: str, replicas: int, template: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "ml"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": template["metadata"]["labels"]},
                     "template": template}}


def place(*objects: dict[str, Any], c: Cluster | None = None) -> dict[str, JobPlacement]:
    jobs = find_jobs((o, None) for o in objects)
    return place_all(jobs, lambda _j: c or _cluster(), {}, others=list(objects))


def gpu_pod(labels: dict[str, str], n: int = 1, **spec: Any) -> dict[str, Any]:
    return tpl(labels, containers=[gpu(n)], tolerations=TOLERATE_GPU, **spec)


def anti(labels: dict[str, str], key: str = ZK) -> dict[str, Any]:
    return zone_anti(labels, key)["podAntiAffinity"]


def aff(labels: dict[str, str], key: str = ZK) -> dict[str, Any]:
    return {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": labels}, "topologyKey": key}]}


# --- anti-affinity against pods outside the job: order-dependent, said on both jobs ----------------


def test_anti_affinity_to_another_job_takes_no_zone_and_names_the_race_on_both_jobs() -> None:
    # a's pods repel b's on the zone key; b is pinned to zone-b. Whichever starts second waits: a
    # may start first in zone-b (so zone-b stays in its zones), and b then stays Pending.
    a = jobset("a", ("w", 1, gpu_pod({"app": "a"}, affinity={"podAntiAffinity": anti({"app": "b"})})))
    b = jobset("b", ("w", 1, gpu_pod({"app": "b"}, nodeSelector={ZK: "zone-b"})))
    out = place(a, b)
    pa, pb = out["JobSet/ml/a"], out["JobSet/ml/b"]
    assert pa.schedulable and pa.group("w").zones == ("zone-a", "zone-b")  # type: ignore[union-attr]
    assert pb.schedulable
    assert any("repel each other" in r and "b stays Pending" in r.replace("w of JobSet/ml/b stays", "b stays")
               for r in pa.pending_risks), pa.pending_risks
    assert any("repel each other" in r for r in pb.pending_risks), pb.pending_risks


# --- podAffinity and podAntiAffinity selecting the same pods ------------------------------------


def test_affinity_and_anti_affinity_on_the_same_pods_never_run_a_second_pod() -> None:
    same = {"podAffinity": aff({"app": "x"}), "podAntiAffinity": anti({"app": "x"})}
    p = place(jobset("x", ("w", 2, gpu_pod({"app": "x"}, affinity=same))))["JobSet/ml/x"]
    assert not p.schedulable
    assert any("only its first pod starts" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


def test_following_pods_that_repel_it_on_a_wider_key_never_starts() -> None:
    # Affinity on the zone to the store's pods, and the store repels it on the region every node
    # shares: no store pod can ever be in its zone with it.
    store = deployment("store", 1, tpl({"app": "store"}, affinity={"podAntiAffinity": anti({"app": "x"}, REGION)}))
    job = jobset("x", ("w", 1, gpu_pod({"app": "x"}, affinity={"podAffinity": aff({"app": "store"})})))
    p = place(job, store)["JobSet/ml/x"]
    assert not p.schedulable
    assert any("never starts" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


# --- topology spread judged with counts and capacity --------------------------------------------


def test_a_zone_with_room_for_one_pod_caps_every_other_zone() -> None:
    # 8-GPU pods: zone-b holds one, zone-a two. maxSkew 1 over both zones: once zone-b is full at
    # one, zone-a may hold at most two; three pods fit (1 + 2) but four never do.
    spread = [{"maxSkew": 1, "topologyKey": ZK, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]
    gpu_nodes = {"node-type": "gpu"}  # eligible domains: the GPU zones (a CPU zone would stay at 0)
    fits = place(jobset("s", ("w", 3, gpu_pod({"app": "s"}, 8, nodeSelector=gpu_nodes,
                                             topologySpreadConstraints=spread))))["JobSet/ml/s"]
    assert fits.schedulable and not fits.colocated
    c = Cluster("r2", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 3, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
        Zone("zone-b", (Pool("gpu", 1, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
    ))
    never = place(jobset("s", ("w", 4, gpu_pod({"app": "s"}, 8, nodeSelector=gpu_nodes,
                                              topologySpreadConstraints=spread))), c=c)["JobSet/ml/s"]
    assert not never.schedulable
    assert any("lets at most 3 of the 4 pods" in r for r in never.unschedulable_reasons), never.unschedulable_reasons


def test_hostname_spread_of_a_group_held_in_one_zone_counts_the_empty_nodes_elsewhere() -> None:
    # Six CPU pods that follow each other (one zone) with maxSkew 1 per node: the nodes of the
    # other zones stay at 0, so each node of the chosen zone holds one pod: three at most.
    spread = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "h"}}}]
    p = place(jobset("h", ("w", 6, tpl({"app": "h"}, tolerations=TOLERATE_GPU, affinity={"podAffinity": aff({"app": "h"})},
                                         topologySpreadConstraints=spread))))["JobSet/ml/h"]
    assert not p.schedulable
    assert any("lets at most 3 of the 6 pods" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


def _following_itself_spread_per_node(skew: int) -> JobPlacement:
    """Two 1-GPU pods that follow each other (one zone), spread per node with `skew`: zone-a has
    two GPU nodes, zone-b one."""
    spread = [{"maxSkew": skew, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "s"}}}]
    return place(jobset("s", ("w", 2, gpu_pod({"app": "s"}, affinity={"podAffinity": aff({"app": "s"})},
                                              topologySpreadConstraints=spread))))["JobSet/ml/s"]


def test_a_zone_its_first_pod_may_pick_that_holds_too_few_of_a_spread_group_is_a_pending_risk() -> None:
    # Found by the scheduler oracle (generated case 153 of seed 7878, where it left a pod Pending
    # in every run): the first pod may land on zone-b's one node, and the second must join that
    # zone, where the other nodes, at 0, let that node hold a single pod (maxSkew 1). Zone-a
    # holds both, so the job can run: a pending risk, not a verdict.
    p = _following_itself_spread_per_node(1)
    assert p.schedulable and p.colocated, (p.unschedulable_reasons, p.may_split_reasons)
    assert p.pending_risks == (
        "w: spread constraint DoNotSchedule on kubernetes.io/hostname (maxSkew 1, 6 eligible nodes) lets too few "
        "of its 2 pods run in a zone its first pod may be scheduled in (zone-b at most 1), and the rest must join "
        "that zone: they stay Pending",)


def test_a_spread_group_every_zone_of_which_holds_it_whole_names_no_risk() -> None:
    # Passing counterpart: maxSkew 2 lets zone-b's one node hold both pods.
    p = _following_itself_spread_per_node(2)
    assert p.schedulable and p.colocated and p.pending_risks == (), p.pending_risks


# --- podAffinity to a plain workload's pods -----------------------------------------------------


def test_following_a_one_replica_deployment_keeps_the_job_in_its_zone() -> None:
    store = deployment("store", 1, tpl({"app": "store"}, tolerations=TOLERATE_GPU))
    job = jobset("f", ("a", 2, gpu_pod({"app": "f"}, affinity={"podAffinity": aff({"app": "store"})})),
                 ("b", 2, gpu_pod({"app": "f"}, affinity={"podAffinity": aff({"app": "store"})})))
    p = place(job, store)["JobSet/ml/f"]
    assert p.schedulable and p.colocated, p.may_split_reasons
    # The store may land in zone-c, where the GPU pods cannot follow it: a pending risk.
    assert any("Deployment/ml/store" in r and "zone-c" in r for r in p.pending_risks), p.pending_risks


def _following_another_job(workers: int, gpus: int) -> JobPlacement:
    """g0 runs only in zone-b and follows another job's workers (`workers` pods of `gpus` GPUs)."""
    other = jobset("o", ("w", workers, gpu_pod({"app": "o"}, gpus)))
    job = jobset("f", ("g0", 1, gpu_pod({"app": "f"}, nodeSelector={ZK: "zone-b"},
                                        affinity={"podAffinity": aff({"app": "o"})})))
    pl = place(job, other)["JobSet/ml/f"]
    assert pl.schedulable and pl.group("g0").zones == ("zone-b",)  # type: ignore[union-attr]
    return pl


def test_following_another_jobs_group_that_may_land_elsewhere_is_a_pending_risk() -> None:
    # The workers fit in zone-a as well: the scheduler places them with no regard for g0 and may
    # put both there. (Generated case 168 at seed 4343: the real scheduler left g0 Pending in
    # every run; topogate named no risk.)
    pl = _following_another_job(2, 4)
    assert ("g0 follows w of JobSet/ml/o (podAffinity on the zone key), whose pods may all be scheduled in "
            "zone-a, where g0 cannot run: it would stay Pending") in pl.pending_risks, pl.pending_risks


def test_following_another_jobs_group_that_cannot_all_land_elsewhere_is_no_risk() -> None:
    # Three 8-GPU workers: zone-a holds two, so one at least is in zone-b.
    pl = _following_another_job(3, 8)
    assert not [r for r in pl.pending_risks if "follows" in r], pl.pending_risks


# --- hostname-key podAffinity to another group --------------------------------------------------


def test_following_a_group_on_the_hostname_needs_a_node_both_can_use() -> None:
    # The GPU workers follow the master on the hostname; the master runs only on CPU nodes. Both
    # can use zone-a, so following its zone would do; its node never has a GPU.
    c = Cluster("r2", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("cpu", 1, 0, (("node-type", "cpu"),)), Pool("gpu", 2, 8, (("node-type", "gpu"),)))),))
    job = jobset("h", ("master", 1, tpl({"app": "h", "role": "m"}, nodeSelector={"node-type": "cpu"})),
                 ("worker", 2, gpu_pod({"app": "h", "role": "w"}, affinity={"podAffinity": aff({"role": "m"}, HOST)})))
    p = place(job, c=c)["JobSet/ml/h"]
    assert not p.schedulable
    assert any("kubernetes.io/hostname (the same node)" in r for r in p.unschedulable_reasons), p.unschedulable_reasons


# --- podAffinity on another key, to another job --------------------------------------------------


def test_region_affinity_to_another_job_is_resolved_with_that_job_as_peer() -> None:
    # One region: following another job's pods on the region key needs only that they exist.
    a = jobset("a", ("w", 1, gpu_pod({"app": "a"}, affinity={"podAffinity": aff({"app": "b"}, REGION)})))
    b = jobset("b", ("w", 1, gpu_pod({"app": "b"})))
    pa = place(a, b)["JobSet/ml/a"]
    assert pa.schedulable, pa.unschedulable_reasons


# --- the first pod picks the zone ----------------------------------------------------------------


def test_a_unit_whose_first_pod_may_take_a_zone_too_small_is_a_pending_risk() -> None:
    # Three 8-GPU pods that follow each other fit only zone-a's three nodes; zone-b's one node may
    # take the first, and the other two find no room beside it.
    c = Cluster("r2", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 3, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
        Zone("zone-b", (Pool("gpu", 1, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
    ))
    p = place(jobset("u", ("w", 3, gpu_pod({"app": "u"}, 8, affinity={"podAffinity": aff({"app": "u"})}))), c=c)
    pl = p["JobSet/ml/u"]
    assert pl.schedulable and pl.colocated and pl.group("w").zones == ("zone-a",)  # type: ignore[union-attr]
    assert any("first pod" in r and "zone-b" in r for r in pl.pending_risks), pl.pending_risks


def test_a_group_following_the_job_waits_when_another_group_starts_first_where_it_cannot_run() -> None:
    # g1 follows every pod of the job on the zone key and runs only in zone-a; g0 (no terms) also
    # fits zone-b. g1 may go anywhere while no pod of the job runs; once g0 is bound first in
    # zone-b, g1 needs a pod of the job in its own zone and waits. (Generated case 241 at seed
    # 2026: the real scheduler left g1 Pending in one run and bound it whole in another.)
    job = jobset("f", ("g0", 2, gpu_pod({"app": "f", "role": "g0"})),
                 ("g1", 1, gpu_pod({"app": "f", "role": "g1"}, nodeSelector={ZK: "zone-a"},
                                   affinity={"podAffinity": aff({"app": "f"})})))
    pl = place(job)["JobSet/ml/f"]
    assert pl.group("g1").zones == ("zone-a",)  # type: ignore[union-attr]
    assert ("g1 follows its own pods and those of g0 (podAffinity on the zone key): if a pod of g0 starts first, g1 "
            "can join only the zones they run in, and they may all be scheduled in zone-b, where g1 cannot run: it "
            "would stay Pending") in pl.pending_risks, pl.pending_risks


def test_a_group_following_the_job_on_the_hostname_waits_when_another_group_starts_on_a_node_it_cannot_use() -> None:
    # The workers follow every pod of the job on the hostname; the launcher needs no GPU and may be
    # bound first on a CPU node, where no worker runs. (Generated case 249 at seed 2026.)
    job = jobset("h", ("launcher", 1, tpl({"app": "h", "role": "launcher"})),
                 ("worker", 2, gpu_pod({"app": "h", "role": "worker"}, 4,
                                       affinity={"podAffinity": aff({"app": "h"}, HOST)})))
    pl = place(job)["JobSet/ml/h"]
    risks = _strand_risks(find_jobs([(job, None)])[0], pl, ZK)
    assert ("launcher may be scheduled first on a node of pool cpu in zone-c, where worker cannot run; "
            "everything that follows it waits Pending") in risks, risks


# --- groups trailing one first pod ---------------------------------------------------------------


def test_groups_that_follow_the_job_and_each_other_trail_the_first_pod() -> None:
    # g0 follows every pod of the job, g1 follows g0: g1 cannot go first, and every later pod
    # finds a pod it follows only in the first one's zone.
    job = jobset("t", ("g0", 2, gpu_pod({"app": "t", "role": "g0"}, affinity={"podAffinity": aff({"app": "t"})})),
                 ("g1", 2, tpl({"app": "t", "role": "g1"}, tolerations=TOLERATE_GPU,
                               affinity={"podAffinity": aff({"role": "g0"})})))
    p = place(job)["JobSet/ml/t"]
    assert p.schedulable and p.colocated, p.may_split_reasons



# --- a chain through other workloads' pods back into the job ---------------------------------------


def _chain(*, head: dict[str, Any] | None = None, pool_follows: dict[str, str] | None = None,
           extra: tuple[dict[str, Any], ...] = (), master: dict[str, Any] | None = None,
           worker: dict[str, Any] | None = None) -> JobPlacement:
    """The master starts alone; the loader's head follows any pod of the job, the workers follow
    the loader, the loader's pool follows the workers (fixtures/placement/follows-through-workloads)."""
    job = jobset("x", ("master", 1, gpu_pod({"app": "x", "role": "m"}, **(master or {}))),
                 ("worker", 2, gpu_pod({"app": "x", "role": "w"},
                                       **(worker or {"affinity": {"podAffinity": aff({"app": "loader"})}}))))
    head_spec: dict[str, Any] = {"tolerations": TOLERATE_GPU, "affinity": {"podAffinity": aff({"app": "x"})},
                                 **(head or {})}
    loader_head = deployment("head", 1, tpl({"app": "loader", "tier": "head"}, **head_spec))
    pool = deployment("pool", 2, tpl({"app": "loader", "tier": "pool"}, tolerations=TOLERATE_GPU,
                                     affinity={"podAffinity": aff(pool_follows or {"app": "x", "role": "w"})}))
    return place(job, loader_head, pool, *extra)["JobSet/ml/x"]


def test_groups_held_in_one_zone_through_other_workloads_trail_the_one_pod_that_starts_first() -> None:
    p = _chain()
    assert p.colocated and p.schedulable, p.may_split_reasons


def test_a_chain_member_that_matches_its_own_term_may_start_first_and_ties_nothing() -> None:
    # The pool follows any loader pod, its own included: with no loader pod anywhere it may start
    # first in zone-b, the workers follow it there, while the master started in zone-a.
    assert not _chain(pool_follows={"app": "loader"}).colocated


def test_a_chain_member_another_scheduler_places_ties_nothing() -> None:
    assert not _chain(head={"schedulerName": "kai-scheduler"}).colocated


def test_a_chain_member_following_pods_outside_the_chain_ties_nothing() -> None:
    # The pool follows a store pinned to zone-b: the workers may follow the pool there while the
    # master started in zone-a.
    store = deployment("store", 1, tpl({"app": "store"}, nodeSelector={ZK: "zone-b"}, tolerations=TOLERATE_GPU))
    assert not _chain(pool_follows={"app": "store"}, extra=(store,)).colocated


def test_a_second_member_free_to_start_first_ties_nothing() -> None:
    # The head follows nothing: it may start first in zone-b, the workers follow it there, while
    # the master, free as well, starts in zone-a.
    assert not _chain(head={"affinity": {}}).colocated


def test_a_unit_whose_first_pod_may_take_a_zone_with_too_few_nodes_for_one_pod_each_is_a_pending_risk() -> None:
    # The launcher picks the zone (zone-a: two nodes, zone-b: one); the workers follow it and
    # repel each other on the hostname: in zone-b the second worker finds no node of its own,
    # though the node's 8 GPUs would hold both.
    one_each = {"podAffinity": aff({"role": "launcher"}),
                "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": {"matchLabels": {"role": "worker"}}, "topologyKey": HOST}]}}
    job = jobset("x", ("launcher", 1, tpl({"role": "launcher"}, tolerations=TOLERATE_GPU, nodeSelector={"node-type": "gpu"})),
                 ("worker", 2, gpu_pod({"role": "worker"}, 4, affinity=one_each)))
    p = place(job)["JobSet/ml/x"]
    assert p.colocated and p.schedulable
    assert p.group("worker").zones == ("zone-a",)  # type: ignore[union-attr]
    assert any("may be scheduled in zone-b, which has fewer nodes than the 2 pods of worker" in r
               for r in p.pending_risks), p.pending_risks


def test_a_chain_whose_only_first_is_another_workloads_pod_ties_nothing() -> None:
    # The head follows nothing (one pod: it chooses once), the master follows the head: the head's
    # Deployment may run its old and new pod in two zones during a rollout, and whoever follows
    # then may follow either. Only the judged job's own groups may be a chain's first.
    assert not _chain(head={"affinity": {}}, master={"affinity": {"podAffinity": aff({"tier": "head"})}}).colocated


def test_a_term_narrowed_by_a_label_only_the_pod_has_ties_nothing() -> None:
    # matchLabelKeys naming a label the controller adds to each pod (not in the template): at run
    # time the term selects per pod, which the template cannot show.
    per_pod = {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "loader"}}, "topologyKey": ZK,
         "matchLabelKeys": ["apps.kubernetes.io/pod-index"]}]}
    assert not _chain(worker={"affinity": {"podAffinity": per_pod}}).colocated


def test_following_onto_the_node_of_a_workload_that_follows_the_job_by_zone_is_a_pending_risk() -> None:
    # Generated case 95 at seed 5353: the master follows a store onto its node; the store
    # follows the workers by zone only, and runs on any node there, CPU nodes included. Following
    # the store is following the workers' zone, not their nodes: the real scheduler put the store
    # on a CPU node and left the master Pending in every run; topogate had read it as following
    # the workers onto their nodes, and named no risk.
    c = Cluster("r2", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 2, 8, (("node-type", "gpu"),), (GPU_TAINT,)), Pool("cpu", 1, 0, (("node-type", "cpu"),)))),
        Zone("zone-b", (Pool("gpu", 1, 8, (("node-type", "gpu"),), (GPU_TAINT,)), Pool("cpu", 1, 0, (("node-type", "cpu"),)))),
    ))
    store = deployment("store", 1, tpl({"app": "store"}, tolerations=TOLERATE_GPU,
                                       affinity={"podAffinity": aff({"app": "f", "role": "w"})}))
    job = jobset("f", ("m", 1, gpu_pod({"app": "f", "role": "m"}, nodeSelector={"node-type": "gpu"},
                                       affinity={"podAffinity": aff({"app": "store"}, HOST)})),
                 ("w", 2, gpu_pod({"app": "f", "role": "w"})))
    p = place(job, store, c=c)["JobSet/ml/f"]
    assert p.schedulable, p.unschedulable_reasons
    assert ("m requires podAffinity on kubernetes.io/hostname with Deployment/ml/store, which may all run on "
            "nodes of zone-a/cpu, zone-b/cpu, where m cannot: it would stay Pending") in p.pending_risks, p.pending_risks


def _launcher_and_spread_workers(skew: int, *, follow: bool = True) -> JobPlacement:
    """A launcher on zone-a's GPU nodes (no GPU of its own) and two workers, one per node, with a
    hostname spread whose selector counts the launcher too, over every node of the cluster."""
    spread = [{"maxSkew": skew, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "m"}}, "nodeAffinityPolicy": "Ignore"}]
    workers = {"podAntiAffinity": anti({"app": "m", "role": "w"}, HOST)}
    if follow:
        workers["podAffinity"] = aff({"app": "m", "role": "l"})
    job = jobset("m", ("l", 1, tpl({"app": "m", "role": "l"}, tolerations=TOLERATE_GPU, nodeSelector={ZK: "zone-a"})),
                 ("w", 2, gpu_pod({"app": "m", "role": "w"}, nodeSelector={ZK: "zone-a"} if not follow else {},
                                  affinity=workers, topologySpreadConstraints=spread)))
    return place(job)["JobSet/ml/m"]


def test_a_spread_that_counts_the_pod_a_group_follows_loses_that_pods_node() -> None:
    # Generated case 144 at seed 5353: the workers follow the launcher into zone-a (two GPU
    # nodes), one per node, maxSkew 1 per node counting the launcher; the nodes elsewhere stay at
    # 0. The launcher's node is at 1 before any worker: a worker there would make it 2. One worker
    # runs; the real scheduler left the other Pending in every run, and topogate said co-located.
    p = _launcher_and_spread_workers(1)
    assert not p.schedulable
    assert ("spread constraint DoNotSchedule on kubernetes.io/hostname (maxSkew 1, 6 eligible nodes) lets at most "
            "1 of the 2 pods of w run in its one zone (with a pod of l, which it follows, counted): the rest stay "
            "Pending") in p.unschedulable_reasons, p.unschedulable_reasons
    # maxSkew 2 leaves room for a worker beside the launcher.
    roomy = _launcher_and_spread_workers(2)
    assert roomy.schedulable and roomy.colocated and not roomy.pending_risks, (roomy.unschedulable_reasons,
                                                                                roomy.pending_risks)


def test_a_spread_that_counts_pods_that_may_come_first_is_a_pending_risk() -> None:
    # The same workers held in zone-a by their nodeSelector, not following the launcher (the
    # spread still counts every node: nodeAffinityPolicy Ignore): whether the launcher runs first,
    # on a node the workers need, is the order's.
    p = _launcher_and_spread_workers(1, follow=False)
    assert p.schedulable, p.unschedulable_reasons
    assert ("w: spread constraint DoNotSchedule on kubernetes.io/hostname (maxSkew 1, 6 eligible nodes) counts the pods "
            "of l too: in an order where they run first on the nodes w can use, at most 1 of its 2 pods fit: the rest "
            "stay Pending") in p.pending_risks, p.pending_risks


def test_a_spread_that_counts_another_workloads_pods_is_a_pending_risk() -> None:
    # The spread's selector also matches a one-replica Deployment of the namespace, which may
    # run on zone-a's GPU nodes: where it runs first, that node is at 1 before any worker.
    spread = [{"maxSkew": 1, "topologyKey": HOST, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "m"}}, "nodeAffinityPolicy": "Ignore"}]
    cache = deployment("cache", 1, tpl({"app": "m", "role": "cache"}, tolerations=TOLERATE_GPU,
                                       nodeSelector={ZK: "zone-a"}))
    job = jobset("m", ("w", 2, gpu_pod({"app": "m", "role": "w"}, nodeSelector={ZK: "zone-a"},
                                       affinity={"podAntiAffinity": anti({"app": "m", "role": "w"}, HOST)},
                                       topologySpreadConstraints=spread)))
    p = place(job, cache)["JobSet/ml/m"]
    assert p.schedulable, p.unschedulable_reasons
    assert ("w: spread constraint DoNotSchedule on kubernetes.io/hostname (maxSkew 1, 6 eligible nodes) counts the pods "
            "of Deployment/ml/cache too: in an order where they run first on the nodes w can use, at most 1 of its 2 "
            "pods fit: the rest stay Pending") in p.pending_risks, p.pending_risks
    # In another namespace its pods are not counted.
    elsewhere = dict(cache, metadata={"name": "cache", "namespace": "other"})
    assert not place(job, elsewhere)["JobSet/ml/m"].pending_risks


def _follows_a_job_whose_workers_repel_it(master_follows_workers: bool) -> JobPlacement:
    master = {"podAffinity": aff({"app": "x", "role": "w"})} if master_follows_workers else {}
    x = jobset("x", ("m", 1, tpl({"app": "x", "role": "m"}, tolerations=TOLERATE_GPU, affinity=master)),
               ("w", 1, gpu_pod({"app": "x", "role": "w"}, affinity={"podAntiAffinity": anti({"app": "y"})})))
    y = jobset("y", ("l", 1, tpl({"app": "y", "role": "l"}, tolerations=TOLERATE_GPU,
                                 affinity={"podAffinity": aff({"app": "x"})})))
    return place(x, y)["JobSet/ml/y"]


def test_following_pods_that_only_run_beside_pods_that_repel_it_never_starts() -> None:
    # Generated case 140 at seed 5959: the launcher follows any pod of another job by zone; that
    # job's workers repel it by zone, and its master follows the workers by zone. Wherever a pod
    # it follows runs, a worker runs: the real scheduler left the launcher Pending in every run,
    # and topogate had it joining the master.
    p = _follows_a_job_whose_workers_repel_it(True)
    assert not p.schedulable
    assert ("l requires podAffinity with m of JobSet/ml/x, w of JobSet/ml/x, which it repels on the same key "
            "(podAntiAffinity: its own, theirs, or that of the pods they follow there): no pod can satisfy it, it never "
            "starts") in p.unschedulable_reasons, p.unschedulable_reasons
    # A master that goes anywhere may run in a zone without a worker: the launcher joins it there.
    assert _follows_a_job_whose_workers_repel_it(False).schedulable


def _workers_follow_the_whole_job(workers: int, master_zone: str = "zone-b") -> JobPlacement:
    """A one-GPU master held in one zone by its nodeSelector; workers of one GPU each that follow
    any pod of the job (their own too) by zone."""
    master = gpu_pod({"app": "m", "role": "l"}, nodeSelector={ZK: master_zone}) if master_zone != "zone-c" else \
        tpl({"app": "m", "role": "l"}, nodeSelector={ZK: master_zone})
    job = jobset("m", ("l", 1, master), ("w", workers, gpu_pod({"app": "m", "role": "w"},
                                                               affinity={"podAffinity": aff({"app": "m"})})))
    return place(job)["JobSet/ml/m"]


def test_following_the_own_pods_and_a_pod_that_may_come_first_is_a_pending_risk() -> None:
    # Generated case 124 at seed 6363: when the master starts first, the zone it runs in is the
    # only one with a pod the workers follow, so every worker must join it there; zone-b's node
    # holds 7 one-GPU workers beside the master. The real scheduler left the 8th Pending in every
    # run; topogate said may-split with no risk (a worker that starts first may pick zone-a).
    p = _workers_follow_the_whole_job(8)
    assert p.schedulable and not p.colocated, p.unschedulable_reasons
    assert ("w follows its own pods and those of l (podAffinity on the zone key): if a pod of l starts first, w can "
            "join only the zones they run in, and they may all be scheduled in zone-b, which holds 7 of its 8 pods "
            "beside them: the rest would stay Pending") in p.pending_risks, p.pending_risks
    # Seven workers fit beside the master: no risk.
    assert not _workers_follow_the_whole_job(7).pending_risks
    # A master on the CPU nodes of zone-c: workers that come after it have no zone they can join.
    far = _workers_follow_the_whole_job(2, "zone-c")
    assert ("w follows its own pods and those of l (podAffinity on the zone key): if a pod of l starts first, w can "
            "join only the zones they run in, and they may all be scheduled in zone-c, where w cannot run: it would "
            "stay Pending") in far.pending_risks, far.pending_risks


def test_the_room_beside_the_pods_followed_counts_them_on_separate_nodes() -> None:
    # Two one-GPU pods of l in zone-b (two nodes of 4 GPUs) may be bound one per node (the
    # scheduler's default scoring spreads them): each node then has 3 GPUs, one two-GPU worker.
    c = Cluster("r3", "aws", "us-east-1", zones=(
        Zone("zone-a", (Pool("gpu", 2, 8, (("node-type", "gpu"),), (GPU_TAINT,)),)),
        Zone("zone-b", (Pool("gpu", 2, 4, (("node-type", "gpu"),), (GPU_TAINT,)),)),
    ))

    def job(workers: int) -> JobPlacement:
        return place(jobset("m", ("l", 2, gpu_pod({"app": "m", "role": "l"}, nodeSelector={ZK: "zone-b"})),
                            ("w", workers, gpu_pod({"app": "m", "role": "w"}, 2,
                                                   affinity={"podAffinity": aff({"app": "m"})}))), c=c)["JobSet/ml/m"]

    assert ("w follows its own pods and those of l (podAffinity on the zone key): if a pod of l starts first, w can "
            "join only the zones they run in, and they may all be scheduled in zone-b, which holds 2 of its 3 pods "
            "beside them: the rest would stay Pending") in job(3).pending_risks, job(3).pending_risks
    assert not job(2).pending_risks


def _pinned_beside_free_workers(workers: int) -> JobPlacement:
    """A one-GPU coordinator pinned to zone-b (one node of 8 GPUs) and one-GPU workers free to use
    zone-a or zone-b, with no affinity between them."""
    return place(jobset("p", ("c", 1, gpu_pod({"app": "p", "role": "c"}, nodeSelector={ZK: "zone-b"})),
                        ("w", workers, gpu_pod({"app": "p", "role": "w"}))))["JobSet/ml/p"]


def test_a_group_held_in_one_zone_whose_gpus_the_free_groups_may_take_first_is_a_pending_risk() -> None:
    # Generated case 282 at seed 6565 had this shape (a group held in the zone of the one-pod
    # workload it follows, the others free): the free groups' pods took that zone's GPUs first
    # and the held group stayed Pending in every run, with no risk named.
    p = _pinned_beside_free_workers(8)
    assert p.schedulable
    assert ("c runs in one zone; in zone-b the job's w may take the GPUs first (the scheduler places each pod with no "
            "regard for those still to come), leaving no room for it: it would stay Pending") in p.pending_risks, \
        p.pending_risks
    # Seven workers leave zone-b a GPU however they land.
    assert not _pinned_beside_free_workers(7).pending_risks
