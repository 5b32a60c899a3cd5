"""The fact the Kueue rules read (TG301-TG307): the concerns the Kueue analysis found
(analysis/placement/kueue.py), each once; one that needs the job in one zone is dropped when
the job is in one zone anyway."""

from __future__ import annotations

from typing import Any

from topogate.analysis.map.facts import Fact, per_cluster
from topogate.analysis.placement.kueue import Concern

KUEUE_CONCERNS: Fact[Concern, tuple[Concern, ...]] = per_cluster("kueue-concerns", lambda one: [
    c for j in one.jobs for c in one.map.kueue_concerns(j.map)], distinct=True)

FACTS: tuple[Fact[Any, Any], ...] = (KUEUE_CONCERNS,)

__all__ = ["FACTS", "KUEUE_CONCERNS"]
