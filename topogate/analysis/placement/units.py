"""Co-location units: union-find over the group names of a job.
"""

from __future__ import annotations

from collections.abc import Iterable

# ---------------------------------------------------------------------------------------------
# Union-find over group names


class _Units:
    def __init__(self, names: Iterable[str]) -> None:
        self.parent = {n: n for n in names}

    def find(self, n: str) -> str:
        while self.parent[n] != n:
            self.parent[n] = self.parent[self.parent[n]]
            n = self.parent[n]
        return n

    def union(self, a: str, b: str) -> bool:
        ra, rb = self.find(a), self.find(b)
        if ra == rb:
            return False
        lo, hi = sorted((ra, rb))
        self.parent[hi] = lo
        return True

    def members(self, n: str) -> list[str]:
        r = self.find(n)
        return sorted(m for m in self.parent if self.find(m) == r)
