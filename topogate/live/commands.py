"""The live commands as functions (the CLI only parses and prints): import, drift, check --live.

Each returns its output and exit code or raises LiveError (one line, an exit code from the
audit table); nothing here prints.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from topogate.analysis.map.build import build_map
from topogate.analysis.netpolicy import PolicyError
from topogate.analysis.result import CheckResult, JobMap
from topogate.check.run import CheckOutcome
from topogate.core.exitcodes import ExitCode, exit_for
from topogate.inventory.model import Cluster, Inventory
from topogate.k8s.objects import K8sObject
from topogate.live.client import Target
from topogate.live.drift import compare
from topogate.live.errors import LiveError
from topogate.live.importer import build, refuse_unwritable, schema_ref_for, write
from topogate.live.nodes import dns_label, parse_nodes
from topogate.live.running import generated_policies, job_facts, live_jobs, policy_facts, where
from topogate.live.snapshot import POLICY_KINDS, Snapshot, fetch, read_file
from topogate.policies import FACTS
from topogate.policies.context import Context, Given
from topogate.policies.context import analysed as analysed_context
from topogate.policies.engine import all_rules, evaluate
from topogate.sources.inventory import load_inventory
from topogate.sources.located import IN_FILE


@dataclass(frozen=True)
class Source:
    """Where the cluster's objects come from: a file, or the API through a Target."""

    from_file: str | None
    target: Target

    def read(self, *, workloads: bool, agent: bool = False) -> Snapshot:
        if self.from_file is not None:
            return read_file(self.from_file)
        return fetch(self.target, workloads=workloads, agent=agent)

    def default_name(self) -> str:
        if self.from_file is not None:
            stem = os.path.basename(self.from_file).split(".", 1)[0]
            return dns_label(stem.removesuffix("-nodes"), "imported")
        return dns_label(self.target.context or "", "imported")


@dataclass(frozen=True)
class ImportOutcome:
    lines: tuple[str, ...]  # the summary for stdout
    exit_code: int = 0


def run_import(source: Source, out: str, *, cluster: str | None, pool_label: str | None,
               zone_label: str, force: bool) -> ImportOutcome:
    refuse_unwritable(out, force)  # before the cluster is read
    snapshot = source.read(workloads=False, agent=True)
    name = dns_label(cluster, "imported") if cluster else source.default_name()
    imported = build(snapshot, name, zone_label, pool_label, schema_ref_for(out))
    write(imported, out, force)
    n_nodes = sum(len(g.nodes) for g in imported.pools)
    lines = [f"wrote {out}: cluster {name}, {len(imported.zones)} zones, "
             f"{len({g.name for g in imported.pools})} pools, {n_nodes} nodes"]
    for z in imported.zones:
        pools = ", ".join(f"{g.name} x{len(g.nodes)}" + (f" ({g.gpu_counts[0]} GPU)" if
                                                          g.gpu_counts == (g.gpu_counts[0],) and
                                                          g.gpu_counts[0] else "")
                          for g in imported.pools if g.zone == z)
        lines.append(f"  {z}: {pools}")
    lines += [f"note: {n}" for n in imported.notes]
    if imported.cilium is not None:
        lines.append("cilium: " + (", ".join(f"{k} {v}" for k, v in imported.cilium.items()) or
                                   "the agent's defaults") + " (from kube-system/cilium-config and the cilium DaemonSet)")
    lines.append("next: add network zones and workloads, then `topogate generate` and `topogate check`")
    return ImportOutcome(tuple(lines))


DRIFT_RULES = ("TG201", "TG202", "TG203", "TG204", "TG205")


def pick_cluster(inv: Inventory, name: str | None) -> Cluster:
    """The inventory cluster a kubeconfig context or a snapshot is about."""
    if name is not None:
        c = inv.cluster(name)
        if c is None:
            raise LiveError(f"{inv.path}: --cluster {name}: no such cluster in the inventory "
                            f"(known: {', '.join(x.name for x in inv.clusters)})",
                            ExitCode.BAD_INVOCATION)
        return c
    if len(inv.clusters) == 1:
        return inv.clusters[0]
    raise LiveError(f"{inv.path}: the inventory has several clusters "
                    f"({', '.join(x.name for x in inv.clusters)}); pass --cluster NAME for the one "
                    "this context or file shows", ExitCode.BAD_INVOCATION)


@dataclass(frozen=True)
class LiveOutcome:
    outcome: CheckOutcome
    header: str  # what was compared, for people: an "ok" says what it is about


def _result(inv: Inventory, inventory_path: str, ctx: Context, only: Sequence[str] | None,
            strict: bool, jobs: tuple[JobMap, ...] = ()) -> CheckOutcome:
    ran = evaluate(ctx, only=only)
    result = CheckResult(ran.findings, jobs, all_rules(), inventory_path, waived=ran.waived)
    return CheckOutcome(result, exit_for(result.errors, result.warnings, strict), inv)


def run_drift(inventory_path: str, source: Source, *, cluster: str | None = None,
              pool_label: str | None = None, strict: bool = False,
              today: dt.date | None = None) -> LiveOutcome:
    """Raises InventoryError (the CLI prints the problems, exit 2) or LiveError."""

    inv = load_inventory(inventory_path, read_bases=False)
    c = pick_cluster(inv, cluster)
    snapshot = source.read(workloads=False)
    nodes = parse_nodes(snapshot.nodes, c.zone_label, pool_label)
    facts = compare(c, nodes)
    ctx = Context(inv, inventory_path, today=today or dt.date.today(), given=Given(live=facts))
    pools = sum(len(z.pools) for z in c.zones)
    header = (f"drift of cluster {c.name} against {snapshot.source}: {len(nodes)} nodes in "
              f"{len({n.zone for n in nodes})} zones compared with {pools} pools in "
              f"{len(c.zones)} zones")
    return LiveOutcome(_result(inv, inventory_path, ctx, DRIFT_RULES, strict), header)


def run_live_check(inventory_path: str, source: Source, *, cluster: str | None = None,
                   strict: bool = False, today: dt.date | None = None) -> LiveOutcome:
    """Raises InventoryError (the CLI prints the problems, exit 2) or LiveError.

    Two views of the cluster: the live facts (TG206-TG209: where pods run now, what is pending,
    which policies differ from the generated tree), and the repository's own analysis (every
    other rule) run on the job and policy objects as the API server holds them.
    """

    inv = load_inventory(inventory_path)  # with bases: the generated policies are compared
    c = pick_cluster(inv, cluster)
    snapshot = source.read(workloads=True)
    nodes = parse_nodes(snapshot.nodes, c.zone_label)
    jobs = live_jobs(snapshot, inv, {n.name: n.zone for n in nodes})
    facts = job_facts(jobs, inv, snapshot.locate, c.zone_label)
    namespaces = {w.namespace for w in inv.workloads_of(c.name)} | {j.namespace for j in jobs}
    generated = generated_policies(inv, c, POLICY_KINDS)
    in_scope = tuple(p for p in snapshot.policies
                     if not (p.get("metadata") or {}).get("namespace")
                     or (p.get("metadata") or {}).get("namespace") in namespaces)
    facts += policy_facts(generated, in_scope, snapshot.locate, c.pos)
    objects = tuple(_snapshot_object(K8sObject, snapshot, o) for o in (*snapshot.jobs, *in_scope))
    try:
        analysed, mf = build_map(inv, objects, c.name, facts=FACTS)
    except PolicyError as err:
        raise LiveError(f"{snapshot.source}: a policy in the cluster cannot be analysed: {err}",
                        ExitCode.BAD_INVOCATION) from None
    ctx = analysed_context(inv, inventory_path, objects, tuple(analysed), mf,
                           today=today or dt.date.today(), live=tuple(sorted(facts)))
    pods = sum(len(j.pods) for j in jobs)
    header = (f"live check of cluster {c.name} against {snapshot.source}: {len(jobs)} training "
              f"job(s) with {pods} pod(s) on {len(nodes)} nodes; {len(in_scope)} network "
              f"policies in scope compared with {len(generated)} generated")
    if snapshot.not_installed:
        header += f"; not served by the cluster: {', '.join(snapshot.not_installed)}"
    maps = tuple(j.as_map(c.name, where(j, inv, snapshot.locate)) for j in jobs)
    return LiveOutcome(_result(inv, inventory_path, ctx, None, strict, maps), header)


def _snapshot_object(make: type[K8sObject], snapshot: Snapshot, obj: dict[str, Any]) -> K8sObject:
    """A snapshot object for the analysis: at its own line of a snapshot file, with its path in
    the file so a finding on one of its rules can be placed on that rule's line."""
    inside = snapshot.path_in_file(obj)
    if inside is None:
        return make(obj, snapshot.position(obj))
    return make(obj, snapshot.position(obj), "", snapshot.source, 0, inside, IN_FILE)

__all__ = ["LiveOutcome", "Source", "pick_cluster", "run_drift", "run_import", "run_live_check"]
