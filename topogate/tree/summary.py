"""The short text `topogate generate` prints after writing: what was decided, where it went.

Per cluster: its network zones (the doors), and each workload with where it is pinned or which
zones it follows within; then the number of files written and, for a small tree, their list.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping

from topogate.core.escape import one_line
from topogate.generators.cilium import workload_dir
from topogate.inventory.model import Inventory, Workload

LIST_FILES_UP_TO = 40  # beyond this a file list is noise; print counts per top directory


def _placement(inv: Inventory, w: Workload) -> str:
    zones = inv.pin_zones(w)
    if w.placement == "pin":
        return f"pinned to {', '.join(zones) or '?'}"
    return f"follows its first pod within {', '.join(zones) or '?'}"


def _pods(w: Workload) -> str:
    pods = sum(g.replicas for g in w.groups)
    groups = ", ".join(f"{g.name} x{g.replicas}" for g in w.groups)
    gpus = f", {w.gpus} GPU{'s' if w.gpus != 1 else ''}" if w.gpus else ""
    return f"{pods} pod{'s' if pods != 1 else ''} ({groups}{gpus})" if groups else "no groups read"


def summarise(inv: Inventory, files: Mapping[str, bytes], out: str) -> str:
    lines: list[str] = []
    for c in sorted(inv.clusters, key=lambda c: c.name):
        lines.append(f"cluster {c.name} ({c.provider} {c.region}, zone label {c.zone_label})")
        for nz in sorted(c.network_zones, key=lambda n: n.name):
            lines.append(f"  network zone {nz.name}: {', '.join(nz.zones)}")
        wls = sorted(inv.workloads_of(c.name), key=lambda w: (w.namespace, w.name))
        if not wls:
            lines.append("  no workloads")
        for w in wls:
            lines.append(f"  {w.object_id} in {w.network_zone}: {_placement(inv, w)}; {_pods(w)}")
            if w.own:  # deployedBy: own: nothing topogate writes applies it
                lines.append(f"    applied by its own Application or Flux Kustomization: point it at "
                             f"{posixpath.join(out, workload_dir(w))}")
    n = len(files)
    lines.append(f"wrote {n} file{'s' if n != 1 else ''} to {out}")
    if n <= LIST_FILES_UP_TO:
        lines.extend(f"  {p}" for p in sorted(files))
    else:
        tops: dict[str, int] = {}
        for p in files:
            parts = p.split("/")
            top = "/".join(parts[:2]) if parts[0] == "clusters" and len(parts) > 2 else parts[0]
            tops[top] = tops.get(top, 0) + 1
        lines.extend(f"  {t}/: {k} files" for t, k in sorted(tops.items()))
    # Names, paths and zones come from the inventory of a pull request, and this text reaches
    # the CI log: each line is made plain text (no control character, no workflow command).
    return "\n".join(one_line(x) for x in lines)

__all__ = ["summarise"]
