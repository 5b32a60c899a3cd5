"""Every fact has an owner: a rule family declares the facts its rules read (policies/<family>/
facts.py, listed in its FACTS), the map computes each once per cluster while that cluster's
policies are compiled (analysis.map.facts), and the rule context keeps only what every rule
reads. Shared vocabulary sits in the lowest layer that needs it: `K8sObject` in k8s/, so neither
analysis/ nor policies/ reads sources/; a check result's fields are typed."""

from __future__ import annotations

import ast
import dataclasses
import typing
from collections import Counter
from pathlib import Path

import pytest

from topogate.analysis.map import build
from topogate.analysis.map.facts import Fact, Facts, OneCluster, WholeMap, finished, per_cluster
from topogate.analysis.result import CheckResult
from topogate.core import forked
from topogate.policies import FACTS, REGISTRY
from topogate.policies.context import Context
from topogate.policies.jobs.facts import SPREAD_SPLITS
from topogate.policies.kueue import template
from topogate.sources.inventory import load_inventory
from topogate.sources.manifests import collect

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "topogate"
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"  # jobs in three clusters
TREE = ROOT / "fixtures" / "golden" / "multi" / "clusters"


def _clusters() -> tuple[typing.Any, list[typing.Any]]:
    return load_inventory(str(MULTI)), collect([str(TREE)], also_inside=[str(MULTI)])


def test_a_fact_is_computed_once_per_cluster_in_inventory_order() -> None:
    """Two facts sharing one piece of work (as TG107, TG112 and TG113 share the boundary proof):
    the work runs once per cluster, each fact joins the clusters in inventory order."""
    calls: Counter[str] = Counter()

    def shared(one: OneCluster) -> list[str]:
        calls[one.cluster.name] += 1
        return [f"{one.cluster.name}:{len(one.jobs)}"]

    first = per_cluster("first", lambda one: one.once(shared))
    second = per_cluster("second", lambda one: [*one.once(shared), "again"])
    inv, objects = _clusters()
    jobs, facts = build.build_map(inv, objects, facts=(first, second))
    names = [c.name for c in inv.clusters]
    assert len(names) >= 2 and len(set(j.cluster for j in jobs)) >= 2
    per = Counter(j.cluster for j in jobs)
    assert facts.get(first) == tuple(f"{c}:{per[c]}" for c in names)
    assert facts.get(second) == tuple(x for c in names for x in (f"{c}:{per[c]}", "again"))
    assert calls == {c: 1 for c in names}


def test_the_forked_map_computes_the_same_facts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every family's facts, worked out half in a forked child, equal the serial ones."""
    inv, objects = _clusters()
    serial = build.build_map(inv, objects, facts=FACTS)
    answered: list[bool] = []
    real = forked.Child.result

    def result(self: forked.Child, timeout: float) -> typing.Any:
        got = real(self, timeout)
        answered.append(got is not None)
        return got

    monkeypatch.setattr(forked.Child, "result", result)
    monkeypatch.setattr(build, "PARALLEL", True)
    monkeypatch.setattr(build, "PARALLEL_FROM", 0)
    parallel = build.build_map(inv, objects, facts=FACTS)
    assert answered == [True]
    assert parallel[0] == serial[0]
    assert [parallel[1].get(f) for f in FACTS] == [serial[1].get(f) for f in FACTS]
    assert any(serial[1].get(f) for f in FACTS)  # something to compare


def test_a_fact_the_map_was_not_handed_is_an_error_not_silence() -> None:
    """A rule reading a fact its family does not list would otherwise see nothing and say ok."""
    inv, objects = _clusters()
    jobs, facts = build.build_map(inv, objects)  # no facts handed
    ctx = Context(inv, "inventory.yaml", tuple(objects), tuple(jobs), facts=facts)
    with pytest.raises(LookupError, match="spread-splits"):
        ctx.fact(SPREAD_SPLITS)
    # A run that built no map (the inventory unreadable, drift) reads every fact as empty.
    assert Context(None, "inventory.yaml").fact(SPREAD_SPLITS) == ()


def test_two_facts_of_one_name_are_refused() -> None:
    whole = WholeMap(typing.cast(typing.Any, None), (), (), (), (), False)
    with pytest.raises(ValueError, match="x"):
        finished((per_cluster("x", lambda one: ()), per_cluster("x", lambda one: ())), whole, [])
    assert len({f.name for f in FACTS}) == len(FACTS)


def test_every_fact_a_rule_reads_is_handed_to_the_map() -> None:
    """Each Fact a rule module (or the Kueue template) holds is among policies.FACTS."""
    listed = {id(f) for f in FACTS}
    read = {name: v for mod in (*REGISTRY.values(), template)
            for name, v in vars(mod).items() if isinstance(v, Fact) and v.whole is not None}
    assert read, "the rules read facts"
    assert [n for n, v in read.items() if id(v) not in listed] == []


def test_the_rule_context_keeps_what_every_rule_reads() -> None:
    """A fact one family reads is declared by that family, not a field of the context."""
    names = [f.name for f in dataclasses.fields(Context)]
    assert len(names) <= 12, names
    assert Facts().get(SPREAD_SPLITS) == ()


def _imports(folder: str) -> list[str]:
    out: list[str] = []
    for f in sorted((PACKAGE / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("topogate.sources"):
                out.append(f"{f.relative_to(PACKAGE)}:{node.lineno}: {node.module}")
    return out


@pytest.mark.parametrize("folder", ["analysis", "policies", "k8s"])
def test_the_object_type_is_not_read_from_sources(folder: str) -> None:
    assert _imports(folder) == []


def test_a_check_result_has_no_untyped_field() -> None:
    hints = typing.get_type_hints(CheckResult)
    assert [n for n, t in hints.items() if "Any" in repr(t)] == []
