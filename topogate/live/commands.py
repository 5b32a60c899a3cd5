"""The live commands as functions (the CLI only parses and prints): import, drift, check --live.

Each returns its output and exit code or raises LiveError (one line, an exit code from the
audit table); nothing here prints.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from topogate.live.client import Target
from topogate.live.nodes import dns_label
from topogate.live.snapshot import Snapshot, fetch, read_file


@dataclass(frozen=True)
class Source:
    """Where the cluster's objects come from: a file, or the API through a Target."""

    from_file: str | None
    target: Target

    def read(self, *, workloads: bool) -> Snapshot:
        if self.from_file is not None:
            return read_file(self.from_file)
        return fetch(self.target, workloads=workloads)

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
    from topogate.live.importer import build, schema_ref_for, write

    snapshot = source.read(workloads=False)
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
    lines.append("next: add network zones and workloads, then `topogate generate` and `topogate check`")
    return ImportOutcome(tuple(lines))
