"""Load an inventory: every problem at once, each with file:line:column, or a frozen model.

Order of work: read YAML with positions (syntax errors stop here: nothing after them can be
trusted), validate against the shipped JSON Schema (the same file editors use), then the checks
a schema cannot express: uniqueness, references, placement, base manifests and GPU capacity.
Semantic checks run on whatever parts are well-typed so one bad field does not hide others.
"""

from __future__ import annotations

import datetime as dt
import os
import re
from pathlib import Path
from typing import Any

from topogate.core import gctune, progress
from topogate.core.position import Position
from topogate.inventory.bases import BaseBuilder
from topogate.inventory.checker import Checker, ReadBases
from topogate.inventory.clusters import read_cluster
from topogate.inventory.doors import read_doors
from topogate.inventory.model import OUTPUTS, Cluster, GitOps, Inventory, Waiver, Workload
from topogate.inventory.printable import message, unprintable_paths
from topogate.inventory.problems import InventoryError, Problem
from topogate.inventory.schema import inventory_schema, schema_problems
from topogate.inventory.values import as_map, dicts, seq
from topogate.inventory.workloads import read_workload
from topogate.inventory.yamlpos import YamlReadError, YPath, read_yaml
from topogate.safeio.oserror import reason
from topogate.safeio.repopaths import read_input
from topogate.safeio.saferead import InputError

# Importers use these names from here: the checks now live in the modules above.
_Checker = Checker
__all__ = ["InventoryError", "Problem", "inventory_schema", "load_inventory"]

# Flux's GitRepository takes http, https and ssh URLs (its CRD pattern); Argo CD takes those too.
_GIT_URL = re.compile(r"^(https?|ssh)://[^\s/@]+(@[^\s/]+)?(/[^\s]*)?$")


def load_inventory(path: str | os.PathLike[str], read_bases: ReadBases = True,
                   build: BaseBuilder | None = None, *, tracked: bool = True) -> Inventory:
    """Read, validate and build the inventory; raise InventoryError with every problem found.

    `read_bases=False` skips the workloads' base manifests (and what depends on them: replica
    groups, GPU demand): for commands that need only clusters, such as the cost audit running
    where only the inventory file is mounted; a function (cluster, base as written) -> bool
    reads those it says (check --changed-since: what cannot have changed is not read again).
    `build` builds the bases that transform their
    resources (topogate.sources.inventory passes the kustomize builder); without it such a
    base is a problem. `tracked=False` reads the file even where git does not track it: only
    for a file topogate itself has just written (import's check that its output loads back)."""
    # The model is built in one go and frees almost nothing: a cyclic collection would only
    # rescan the growing heap, more often the larger the inventory (gctune.paused).
    with gctune.paused():
        return _load(str(path), read_bases, build, tracked)


def _load(file: str, read_bases: ReadBases, build: BaseBuilder | None = None,
          tracked: bool = True) -> Inventory:
    try:
        # The reading limits of every manifest (confined, regular, bounded, tracked).
        text = read_input(file, tracked=tracked)
    except InputError as e:
        msg = e.message.replace("cannot read:", "cannot read the inventory:", 1)
        raise InventoryError([Problem(e.pos, msg)]) from None
    except OSError as e:  # a path too long, a NUL byte: the name itself is unusable
        raise InventoryError([Problem(Position(file, 1, 1), f"cannot read the inventory: {reason(e)}")]) from None
    try:
        loc = read_yaml(text, file)
    except YamlReadError as e:
        raise InventoryError([Problem(p.pos, p.message) for p in e.problems]) from None
    problems = [Problem(p.pos, p.message) for p in loc.problems]
    if not isinstance(loc.data, dict):
        raise InventoryError(problems + [Problem(loc.at(()), (
            "the inventory must be a mapping with apiVersion: topogate.dev/v1alpha1 and "
            "kind: Inventory"))])
    data = loc.data
    inv_dir = Path(file).resolve().parent
    chk = Checker(loc, file, inv_dir, read_bases, build)
    problems += schema_problems(loc, chk.bad_paths)
    if "\\" in text:  # only an escape can put a control character in a string
        problems += [Problem(loc.key_at(p) if is_key else loc.at(p), message(c))
                     for p, is_key, c in unprintable_paths(data)]
    cluster_index = {str(c.get("name")): i for i, c in enumerate(seq(data.get("clusters")))
                     if isinstance(c, dict)}
    chk.cluster_index = cluster_index

    clusters: list[Cluster] = []
    cluster_items: list[tuple[YPath, str]] = []
    for i, c in enumerate(seq(data.get("clusters"))):
        if isinstance(c, dict):
            cluster_items.append((("clusters", i, "name"), str(c.get("name"))))
            clusters.append(read_cluster(chk, i, c))
    chk.unique(cluster_items, "cluster")
    by_name = {c.name: c for c in clusters}

    workloads: list[Workload] = []
    wl_items: list[tuple[YPath, str]] = []
    workload_data = seq(data.get("workloads"))
    for i, w in enumerate(workload_data):
        if read_bases and (i % 50 == 0 or i == len(workload_data) - 1):
            # the last one too: a note left at 1,450/1,500 reads as stuck while later work runs
            progress.note(f"reading workloads and their bases ({i + 1:,}/{len(workload_data):,})")
        if isinstance(w, dict):
            wl_items.append((("workloads", i, "name"),
                             f"{w.get('cluster')}/{w.get('namespace')}/{w.get('name')}"))
            wl = read_workload(chk, i, w, by_name)
            if wl is not None:
                workloads.append(wl)
    chk.unique(wl_items, "workload (cluster/namespace/name)")

    waivers = _waivers(chk, data)
    doors = read_doors(chk, data, by_name, workloads)
    gitops = _gitops(chk, data)
    problems += chk.problems
    if problems:
        raise InventoryError(problems)

    md = as_map(data.get("metadata"))
    return Inventory(
        str(md.get("name", "")), file,
        tuple(sorted(clusters, key=lambda c: c.name)),
        tuple(sorted(workloads, key=lambda w: (w.cluster, w.namespace, w.name))),
        tuple(waivers), gitops, str(inv_dir), loc.at(()), doors,
        runbook_url=str(data.get("runbookURL") or ""),
        outputs=frozenset(map(str, seq(data["outputs"]))) if "outputs" in data else OUTPUTS)


def _waivers(chk: Checker, data: dict[str, Any]) -> list[Waiver]:
    waivers: list[Waiver] = []
    for i, wv in enumerate(dicts(data.get("waivers"))):
        exp = wv.get("expires")
        expires = None
        if isinstance(exp, str):
            try:
                expires = dt.date.fromisoformat(exp)
            except ValueError:
                chk.err(("waivers", i, "expires"), f"expires '{exp}' is not a date (YYYY-MM-DD)")
        waivers.append(Waiver(str(wv.get("rule", "")), str(wv.get("object", "")),
                              str(wv.get("reason", "")), expires, chk.loc.at(("waivers", i))))
    return waivers


def _gitops(chk: Checker, data: dict[str, Any]) -> GitOps | None:
    gitops = None
    g = data.get("gitops")
    if isinstance(g, dict) and isinstance(g.get("repoURL"), str) and not _GIT_URL.match(g["repoURL"]):
        # Written into Argo CD Applications and a Flux GitRepository, whose CRD takes only these
        # schemes: anything else is refused here, not by the cluster after the merge.
        chk.err(("gitops", "repoURL"), (
            f"repoURL {g['repoURL']!r} is not a Git URL Argo CD and Flux both accept; use "
            "https://host/org/repo.git or ssh://git@host/org/repo.git (no spaces)"))
    if isinstance(g, dict) and isinstance(g.get("repoURL"), str):
        gitops = GitOps(
            g["repoURL"], str(g.get("targetRevision", "main")), str(g.get("path", ".")),
            str(g.get("argocdNamespace", "argocd")), str(g.get("argocdProject", "default")),
            str(g.get("fluxNamespace", "flux-system")),
            str(g.get("destinationServer", "https://kubernetes.default.svc")),
            str(g["fluxSecretRef"]) if isinstance(g.get("fluxSecretRef"), str) else None,
            chk.loc.at(("gitops",)))
    return gitops
