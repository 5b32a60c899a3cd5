"""`topogate clusters`: the inventory's clusters and the paths each one's check reads, for a CI
matrix that runs one `check --cluster NAME` per cluster (examples/github-workflows/
fleet-matrix.yml, docs/scale.md)."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from topogate.cli.common import fail_inventory, inventory_arg
from topogate.core.escape import for_log
from topogate.inventory.loader import InventoryError


def _shown(path: str) -> str:
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


@click.command("clusters")
@click.argument("inventory", type=click.Path(dir_okay=False), callback=inventory_arg)
@click.option("--out", type=click.Path(file_okay=False), metavar="OUT",
              help="The generated tree (as `generate -o OUT`): each cluster reads OUT/clusters/<name>.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def clusters(inventory: str, out: str | None, fmt: str) -> None:
    """List the clusters of INVENTORY and the paths each reads: the inventory, its tree under
    OUT, and the bases of its workloads (a change under none of them cannot change its verdict).

    `--format json` is {"clusters": [{"name", "provider", "region", "workloads", "paths"}]}, for
    a CI matrix: `jq -c '[.clusters[].name]'`.

    Exit codes: 0 listed, 2 bad invocation or invalid inventory.
    """
    from topogate.sources.inventory import load_inventory  # lazy: start-up time

    try:
        inv = load_inventory(inventory, read_bases=False)  # names and paths only: no base is read
    except InventoryError as err:
        fail_inventory(err)
    rows: list[dict[str, Any]] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        workloads = inv.workloads_of(c.name)
        bases = sorted({_shown(os.path.normpath(os.path.join(inv.root, w.base))) for w in workloads if w.base})
        paths = [_shown(inventory), *([_shown(os.path.join(out, "clusters", c.name))] if out else []), *bases]
        rows.append({"name": c.name, "provider": c.provider, "region": c.region,
                     "workloads": len(workloads), "paths": paths})
    if fmt == "json":
        click.echo(for_log("json", json.dumps({"clusters": rows}, indent=2, sort_keys=True)))
        return
    for r in rows:
        n = r["workloads"]
        click.echo(for_log("text", f"{r['name']}  {r['provider']} {r['region']}  {n} workload{'s' if n != 1 else ''}"))
        for p in r["paths"]:
            click.echo(for_log("text", f"  {p}"))


__all__ = ["clusters"]
