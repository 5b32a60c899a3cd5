"""`check` runs with the cyclic collector paused (core.gctune.paused): what the analysis builds
is freed by reference counting alone. A reference cycle among its objects (a recursive closure,
an object that points back at its owner) is memory held to the end of the run: one such cycle in
the policy compiler kept every cluster's compiled policies alive, a fifth of check's peak at
10,000 jobs. These runs must leave no cyclic garbage of topogate's own making."""

from __future__ import annotations

import collections
import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from topogate.check.run import run_check

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "fixtures" / "lab" / "inventory.yaml"
MULTI = ROOT / "fixtures" / "multi" / "inventory.yaml"
BROKEN = ROOT / "fixtures" / "incident" / "broken"


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.disable()
    _our_garbage()  # what earlier tests left (a failed test's traceback is freed late)
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _our_garbage() -> collections.Counter[str]:
    """The objects of topogate's types that only a cyclic collection would free, by type."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage
                                if type(o).__module__.startswith("topogate"))
    # A closure of ours in a cycle shows as a function, whatever the objects its cells hold.
    found.update(f"function {o.__module__}.{o.__qualname__}" for o in gc.garbage
                 if type(o).__name__ == "function" and str(o.__module__).startswith("topogate"))
    gc.set_debug(0)
    gc.garbage.clear()
    # Saved, the cycles outlived the collection that found them: free them now, or with the
    # collector off they are found again by the next test (an earlier test's botocore session,
    # whose event handlers point back at it, was once counted against check).
    gc.collect()
    return found


@pytest.mark.parametrize(("inventory", "paths"), [
    (MULTI, []),  # the inventory alone: its rendered tree, several clusters, no findings
    (LAB, [BROKEN]),  # hand-written manifests with errors: findings, positions, trace texts
], ids=["multi-rendered", "lab-broken"])
def test_a_check_leaves_no_cyclic_garbage(collector_off: None, inventory: Path, paths: list[Path]) -> None:
    outcome = run_check(str(inventory), [str(p) for p in paths])
    # the findings' sentences and positions are worked out when read: read them all
    texts = [f"{f.message} {f.file}:{f.line}:{f.column}" for f in outcome.result.findings]
    for job in outcome.result.jobs:
        texts += [fl.reason for fl in job.flows]
    assert outcome.result.jobs, "the run found no job: nothing was analysed"
    assert any("allowed by" in t for t in texts), texts  # cited rules: positions were resolved
    del outcome, texts  # all of it must go by reference counting alone
    leaked = _our_garbage()
    assert not leaked, f"cyclic garbage left by the run (type: count): {dict(leaked)}"


def test_a_check_that_refuses_a_root_leaves_no_cyclic_garbage(collector_off: None, tmp_path: Path) -> None:
    """The error paths keep exceptions as values (a remote root refused, a build that failed):
    kept with their tracebacks, their frames held the collection that held them."""
    remote = tmp_path / "remote"
    remote.mkdir()
    (remote / "kustomization.yaml").write_text("resources: [https://example.com/x.yaml]\n")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    outcome = run_check(str(LAB), [str(BROKEN), str(remote)])
    rules = {f.rule for f in outcome.result.findings}
    assert "TG009" in rules and outcome.result.jobs, rules  # refused, and the rest analysed
    del outcome
    try:
        run_check(str(LAB), [str(BROKEN), str(broken)])
    except Exception as err:  # noqa: BLE001 - the refusal itself is not what is tested here
        assert "missing.yaml" in str(err)
        del err
    else:
        raise AssertionError("a root naming a missing file was checked")
    leaked = _our_garbage()
    assert not leaked, f"cyclic garbage left by the run (type: count): {dict(leaked)}"


def test_the_garbage_probe_sees_a_cycle(collector_off: None) -> None:
    """Negative control: a recursive closure of a topogate module is seen."""
    from topogate.core import words

    ns: dict[str, object] = {"__name__": words.__name__}
    exec("def make():\n    def walk(n):\n        return walk(n - 1) if n else 0\n    return walk\n", ns)
    f = ns["make"]()  # type: ignore[operator]
    del f
    assert _our_garbage()["function topogate.core.words.make.<locals>.walk"] == 1
