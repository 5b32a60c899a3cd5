"""Where a cluster's files are in the generated tree: the layout `generate` writes and the
analysis reads a file's cluster from (`clusters/<name>/...`, and `overlays/<name>/...` for the
jobs a workload's own Application or Flux Kustomization deploys)."""

from __future__ import annotations

CLUSTERS = "clusters"  # clusters/<c>/: what the cluster's own Application applies
OWN_OVERLAYS = "overlays"  # overlays/<c>/<ns>/<job>/: a job its team's own Application applies
CLUSTER_DIRS = (CLUSTERS, OWN_OVERLAYS)

__all__ = ["CLUSTERS", "CLUSTER_DIRS", "OWN_OVERLAYS"]
