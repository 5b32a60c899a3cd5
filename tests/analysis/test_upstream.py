"""Real upstream inputs (issue 9, item 7): every Kubeflow trainer / mpi-operator / JobSet job
example and every YAML block of the NetworkPolicy recipes goes through check and trace without
a traceback; so does every file of Cilium's examples/policies, each construct topogate does not
model coming back as a TG120 finding and a trace warning, and the flows whose answer Cilium's docs
state are traced and compared (docs/coverage.md, "Measured against upstream examples"). Runs only
where clones of the upstream repositories exist ($TOPOGATE_UPSTREAM) or Go can fetch their modules (see
tests/upstream_support.py); nothing upstream is copied into this repository
(see tests/upstream_support.py); tests/analysis/test_upstream_semantics.py holds our own cases of the
constructs these inputs exposed."""

from __future__ import annotations

from pathlib import Path

import pytest
from upstream_support import (
    EXPECTED,
    Expected,
    Tally,
    available,
    cilium_commit,
    cilium_constructs,
    cilium_dir,
    cilium_files,
    cilium_subjects,
    clones,
    job_files,
    recipe_blocks,
    require,
    workloads,
)

from topogate.check.errors import CheckInputError
from topogate.check.run import run_check
from topogate.sources.manifests import collect
from topogate.trace import TraceError, trace


@pytest.fixture(autouse=True)
def _upstream() -> None:
    require("upstream clones or modules", available())
LAB = str(Path(__file__).resolve().parents[2] / "fixtures" / "lab" / "inventory.yaml")


def test_upstream_examples_never_crash(tmp_path: Path) -> None:
    files = job_files() + recipe_blocks(tmp_path)
    # The clones hold every example; the modules' zips (what CI reads) the ones under Go packages.
    assert len(files) > (50 if clones() else 10), "the upstream inputs moved: update tests/upstream_support.py"
    tally = Tally()
    for f in files:
        tally.run(f"check {f}", run_check, LAB, [str(f)])
        try:
            objs = collect([str(f)])
        except Exception:  # noqa: BLE001 - check above already reported an unreadable file
            continue
        for spec in workloads(f)[:2]:
            for port in ("23456", "53/UDP", None):
                tally.run(f"trace {f} {spec} -> world", trace, objs, spec, "world", port)
                tally.run(f"trace {f} pod -> {spec}", trace, objs, "default:app=x", spec, port)
    print(f"upstream: {len(files)} files, {tally.runs} runs, {len(tally.crashes)} crashes")
    assert tally.crashes == []


@pytest.fixture
def cilium() -> Path:
    """Cilium's examples/policies (a clone, else the pinned module)."""
    d = cilium_dir()
    require("cilium/cilium examples/policies", d.is_dir())
    return d


def _tg120(outcome: object) -> list[str]:
    return [f.message for f in outcome.result.findings if f.rule == "TG120"]  # type: ignore[attr-defined]


def test_cilium_examples_check_and_trace_without_a_traceback(cilium: Path) -> None:
    files = cilium_files()
    # A clone of main holds more examples than v1.20.2's module (what CI reads).
    assert len(files) >= (80 if clones() else 50), "cilium examples/policies moved: update tests/upstream_support.py"
    tally, refused, silent = Tally(), [], []
    for f in files:
        got = tally.run(f"check {f}", run_check, LAB, [str(f)])
        if isinstance(got, CheckInputError):
            refused.append(f"{f.relative_to(cilium)}: {got}")
            continue
        if got is None:
            continue
        warned = _tg120(got)
        if any(x.rule == "TG125" for x in got.result.findings):  # type: ignore[attr-defined]
            continue  # the agent refuses the policy: TG125 says so, and nothing of it is enforced
        # Every construct not modelled is named by a TG120 finding that says which way it errs.
        for construct in sorted(cilium_constructs(f)):
            hits = [m for m in warned if construct in m]
            if not hits or not all("too permissive" in m or "too strict" in m for m in hits):
                silent.append(f"{f.relative_to(cilium)}: {construct}")
        objs = collect([str(f)])
        ends = [*cilium_subjects(f), *workloads(f)[:2]]
        for spec in ends[:3]:
            for other, port in (("world", None), ("world", "443"), ("default:app=peer", "80"),
                                ("kube-system:k8s-app=kube-dns", "53/UDP")):
                for a, b in ((spec, other), (other, spec)):
                    r = tally.run(f"trace {f} {a} -> {b} {port}", trace, objs, a, b, port)
                    if r is not None and not isinstance(r, TraceError):
                        # The trace notes each construct check warns about, bound included.
                        missing = [m for m in warned if not any(m.rstrip(".").endswith(w.split(": ", 1)[-1])
                                                                for w in r.warnings)]
                        if missing:
                            silent.append(f"trace {a} -> {b} of {f.relative_to(cilium)}: {missing}")
    print(f"cilium examples: {len(files)} files, {tally.runs} runs, {len(tally.crashes)} crashes, "
          f"{len(refused)} refused with a position: {refused}")
    assert tally.crashes == []
    assert silent == []
    # Refused only where kubectl refuses too: an operator `in` (for In), a missing apiVersion, a
    # label at the wrong indentation (an unknown selector field).
    assert all(":1:1: " in r and ("operator 'in'" in r or "no apiVersion" in r or "label selector field" in r)
               for r in refused), refused


def _ours(e: Expected) -> tuple[str, tuple[str, ...]]:
    r = trace(collect([str(cilium_dir() / f) for f in e.files]), e.src, e.dst, e.port)
    return ("allowed" if r.classes[0].verdict.allowed else "denied"), r.warnings


# Where topogate's answer differs from Cilium's on a flow its docs state, and the construct whose
# warning says so (deliberate: TLS SNI is decided by the proxy when the connection is made; a
# policy the API server refuses enforces nothing).
KNOWN_DISAGREEMENTS = {
    ("l4/l4_sni.yaml", "default:app=myService", "fqdn:cilium.io", "443"): "serverNames",
    # The example still writes fromRequires, which the CRDs of 1.19 and later allow no item of:
    # the API server refuses it, so (on the 1.20.2 agent topogate assumes) nothing narrows the
    # other policy's allow. Cilium's docs describe what 1.18 did.
    ("l3/requires/requires.yaml", "default:role=frontend", "default:env=prod", "80"): "fromRequires",
}


def _here(e: Expected) -> bool:
    """Are the example's files in what is read (v1.20.2's examples lack the DNS getting-started)?"""
    return all((cilium_dir() / f).is_file() for f in e.files)


def cilium_table() -> list[str]:
    """The rows of docs/coverage.md's table: source, flow, Cilium's answer (and where it is
    written), ours, and the commit of the example read."""
    rows = []
    for e in filter(_here, EXPECTED):
        ours, _ = _ours(e)
        mark = "" if ours == e.cilium else " (differs)"
        rows.append(f"| `{e.files[0]}` @ {cilium_commit(e.files[0])[:10]} | `{e.src}` → `{e.dst}` {e.port} "
                    f"| {e.cilium} ({e.doc}) | {ours}{mark} |")
    return rows


def test_cilium_documented_flows_agree_except_where_a_warning_says_so(cilium: Path) -> None:
    wrong: dict[tuple[str, str, str, str], str] = {}
    here = [e for e in EXPECTED if _here(e)]
    for e in here:
        ours, warnings = _ours(e)
        if ours != e.cilium:
            key = (e.files[0], e.src, e.dst, e.port)
            named = KNOWN_DISAGREEMENTS.get(key, "?")
            assert any(named in w and ("too permissive" in w or "refuses this policy" in w) for w in warnings), (
                key, warnings)
            wrong[key] = named
    print(f"cilium documented flows: {len(here)} traced ({len(EXPECTED) - len(here)} of files not in "
          f"{cilium_commit('l3')}), {len(wrong)} disagree: {sorted(wrong)}")
    assert len(here) >= 50
    assert wrong == {k: v for k, v in KNOWN_DISAGREEMENTS.items() if (cilium_dir() / k[0]).is_file()}


def test_coverage_doc_shows_the_measured_table(cilium: Path) -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "coverage.md").read_text(encoding="utf-8")
    missing = [row for row in cilium_table() if row not in doc]
    assert missing == [], "docs/coverage.md is stale; put these rows in its table:\n" + "\n".join(missing)
