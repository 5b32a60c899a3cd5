"""Fuzz `check` and `trace` with mutated manifests and kustomizations, `generate` with mutated
inventories and base files, `drift --from-file` with mutated snapshots, `audit egress` with
mutated Cost Explorer answers and `trace` with mutated endpoint and port specs (see
fuzz_support).

The normal suite runs a small, derandomised sample and replays fixtures/fuzz-corpus/; `make fuzz`
runs thousands of random examples (TOPOGATE_FUZZ_EXAMPLES) and keeps any failure in the corpus.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fuzz_support import (
    CORPUS,
    SNAPSHOT_SEEDS,
    InventorySandbox,
    Sandbox,
    ce_mutant,
    check_ce_property,
    check_inventory_property,
    check_property,
    check_snapshot_property,
    check_trace_property,
    corpus_inventory_case,
    inventory_mutant,
    mutant,
    read_case,
    snapshot_mutant,
    trace_mutant,
)
from hostile_support import make_repo
from hypothesis import HealthCheck, given, settings

pytest_plugins = ["audit_support"]

LONG = "TOPOGATE_FUZZ_EXAMPLES" in os.environ


def _examples(default: int) -> Any:
    """Settings for `default` examples in the normal suite (TOPOGATE_FUZZ_EXAMPLES for all in a
    long run): the fast targets (no kubectl) afford more within the suite's minute."""
    return settings(
        max_examples=int(os.environ.get("TOPOGATE_FUZZ_EXAMPLES", str(default))),
        derandomize=not LONG, deadline=None, database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                               HealthCheck.function_scoped_fixture],
    )


_SETTINGS = _examples(12)


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    yield Sandbox(make_repo(tmp_path_factory.mktemp("fuzz")))


@pytest.fixture(scope="module")
def inventory_sandbox(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InventorySandbox]:
    yield InventorySandbox(tmp_path_factory.mktemp("fuzz-inventory"))


@_SETTINGS
@given(text=mutant("manifest"))
def test_mutated_manifests(sandbox: Sandbox, text: str) -> None:
    check_property(sandbox, "manifest", text)


@_SETTINGS
@given(text=mutant("kustomization"))
def test_mutated_kustomizations(sandbox: Sandbox, text: str) -> None:
    check_property(sandbox, "kustomization", text)


@_SETTINGS
@given(case=inventory_mutant())
def test_mutated_inventories_and_bases(inventory_sandbox: InventorySandbox, case: tuple[str, str, str]) -> None:
    check_inventory_property(inventory_sandbox, *case)


@pytest.mark.parametrize("case", sorted(CORPUS.glob("*.yaml")), ids=lambda p: p.name)
def test_corpus(sandbox: Sandbox, inventory_sandbox: InventorySandbox, case: Path,
                tmp_path: Path, request: pytest.FixtureRequest) -> None:
    kind = case.name.split("-", 1)[0]
    assert kind in ("manifest", "kustomization", "inventory", "base", "snapshot", "costexplorer", "trace"), (
        f"{case.name}: name it manifest-*, kustomization-*, inventory-<seed>-*, base-<seed>-*, "
        "snapshot-<seed>-*, costexplorer-* or trace-*")
    if kind == "snapshot":
        seed = next(s for s in sorted(SNAPSHOT_SEEDS, key=len, reverse=True)
                    if case.name.startswith(f"snapshot-{s}-"))
        check_snapshot_property(tmp_path, seed, read_case(case))
    elif kind == "costexplorer":
        check_ce_property(request.getfixturevalue("moto_ce_env"), json.loads(read_case(case)))
    elif kind == "trace":
        check_trace_property(sandbox, *json.loads(read_case(case)))
    elif kind in ("inventory", "base"):
        check_inventory_property(inventory_sandbox, *corpus_inventory_case(case))
    else:
        check_property(sandbox, kind, read_case(case))


@_examples(40)
@given(case=snapshot_mutant())
def test_mutated_snapshots(tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]) -> None:
    check_snapshot_property(tmp_path_factory.mktemp("snap", numbered=True), *case)


@pytest.fixture
def moto_ce_env(moto_server: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto_server and the environment pointed at it; each example resets and seeds it."""
    from audit_support import Moto, aws_test_env

    aws_test_env(monkeypatch, moto_server)
    m = Moto(moto_server)
    yield m
    m.reset()


@_examples(15)
@given(pages=ce_mutant())
def test_mutated_cost_explorer_answers(moto_ce_env: Any, pages: list[Any]) -> None:
    check_ce_property(moto_ce_env, pages)


@_examples(60)
@given(case=trace_mutant())
def test_mutated_trace_specs(sandbox: Sandbox, case: tuple[str, str, str | None]) -> None:
    check_trace_property(sandbox, *case)
