"""Fuzz `check` and `trace` with mutated manifests and kustomizations, and `generate` with mutated
inventories and base files (see fuzz_support).

The normal suite runs a small, derandomised sample and replays fixtures/fuzz-corpus/; `make fuzz`
runs thousands of random examples (TOPOGATE_FUZZ_EXAMPLES) and keeps any failure in the corpus.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from fuzz_support import (
    CORPUS,
    InventorySandbox,
    Sandbox,
    check_inventory_property,
    check_property,
    corpus_inventory_case,
    inventory_mutant,
    mutant,
    read_case,
)
from hostile_support import make_repo
from hypothesis import HealthCheck, given, settings

LONG = "TOPOGATE_FUZZ_EXAMPLES" in os.environ
_SETTINGS = settings(
    max_examples=int(os.environ.get("TOPOGATE_FUZZ_EXAMPLES", "12")),
    derandomize=not LONG, deadline=None, database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.function_scoped_fixture],
)


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
def test_corpus(sandbox: Sandbox, inventory_sandbox: InventorySandbox, case: Path) -> None:
    kind = case.name.split("-", 1)[0]
    assert kind in ("manifest", "kustomization", "inventory", "base"), (
        f"{case.name}: name it manifest-*, kustomization-*, inventory-<seed>-* or base-<seed>-*")
    if kind in ("inventory", "base"):
        check_inventory_property(inventory_sandbox, *corpus_inventory_case(case))
    else:
        check_property(sandbox, kind, read_case(case))
