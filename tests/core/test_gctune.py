"""gctune.bulk raises the collector's thresholds for its block and puts them back, error or not."""

from __future__ import annotations

import gc

import pytest

from topogate.core.gctune import bulk


def test_bulk_raises_thresholds_and_restores_them() -> None:
    before = gc.get_threshold()
    with bulk():
        inside = gc.get_threshold()
        assert all(i >= b for i, b in zip(inside, before, strict=True))
        assert inside[2] >= 1_000  # no full collection while the model is built
    assert gc.get_threshold() == before
    with pytest.raises(RuntimeError), bulk():
        raise RuntimeError("boom")
    assert gc.get_threshold() == before
