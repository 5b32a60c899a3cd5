"""Where each test module lives: tests/ has one folder per layer of topogate/, plus a few for
what no one layer owns. Run from the repository root to move flat test modules into their folder:

    python3 tests/tools/layout.py

It moves with `git mv` each tests/test_*.py the table below places, makes the module's own
paths (relative to __file__) one folder deeper, and rewrites every `tests/test_X.py` the
repository's tracked text files name. Running it again moves nothing that is in place, so it can
be run after a merge brings new flat test modules; a flat module the table does not know is
named, and tests/repo/test_layout.py fails on it until it has a folder here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"

# Folder -> (what it holds, the test modules in it). The layer folders are topogate/'s own; a
# module goes where the code it holds to its word lives (a test through the CLI of one feature
# goes with that feature).
LAYOUT: dict[str, tuple[str, tuple[str, ...]]] = {
    "core": ("core/: gctune, reference cycles", (
        "test_no_cycles.py")),
    "safeio": ("safeio/: hostile reads, bounded children, saferead", (
        "test_hostile_inputs.py", "test_hostile_reads.py", "test_saferead_equivalence.py",
        "test_subproc.py")),
    "k8s": ("k8s/: quantities, kinds and jobs, field shapes, the pod identity, kustomization fields", (
        "test_jobs.py", "test_kustomize_field_names.py", "test_pod_identity.py", "test_policy_shapes.py",
        "test_quantity.py", "test_shapes_fast.py")),
    "inventory": ("inventory/: the model, its loader and schema, and what it accepts", (
        "test_basefiles_one_pass.py", "test_editor_lsp.py", "test_generated_crd_constraints.py",
        "test_inventory_bad.py", "test_inventory_load.py", "test_inventory_property.py",
        "test_inventory_reader.py", "test_kueue_inventory.py", "test_quickschema.py")),
    "sources": ("sources/: PATHs to objects, kustomize builds, split builds, positions", (
        "test_base_transforms.py", "test_collect_concurrent.py", "test_collect_paths.py",
        "test_collect_pipeline.py", "test_deferred.py", "test_overlay_blame.py", "test_source_positions.py",
        "test_split_build.py", "test_split_differential.py")),
    "gitops": ("gitops/: what Argo CD and Flux apply", (
        "test_gitops.py", "test_gitops_render.py")),
    "analysis": ("analysis/: scheduling, network policy, placement, proofs, the map", (
        "test_boundary.py", "test_doors.py", "test_dra.py",
        "test_finding_places.py", "test_kueue_check.py", "test_netpolicy.py", "test_netpolicy_memo.py",
        "test_netpolicy_ports.py", "test_netpolicy_selection.py", "test_nothing_dropped.py",
        "test_other_schedulers.py", "test_placement.py", "test_placement_fixtures.py",
        "test_placement_hostname.py", "test_placement_peers.py", "test_placement_podgroup.py",
        "test_placement_round_two.py", "test_placement_units.py", "test_positions.py",
        "test_proof_witnesses.py", "test_scheduling.py", "test_unprotected_job.py", "test_upstream.py",
        "test_upstream_semantics.py")),
    "generators": ("generators/: the generated files, built and validated", (
        "test_admission.py", "test_generate_build.py", "test_generate_golden.py",
        "test_generate_properties.py", "test_generate_units.py", "test_jsonpatch_cow.py", "test_kueue.py",
        "test_kueue_overlay.py", "test_monitoring.py", "test_yamlout.py")),
    "policies": ("policies/: the rules, the facts they own, their fixtures, waivers and coverage", (
        "test_coverage.py", "test_fact_owners.py", "test_hidden_findings.py", "test_rules_fixtures.py")),
    "tree": ("tree/: the writer, tree diffs", (
        "test_drift_diff.py", "test_tree_entries.py", "test_writer.py", "test_writer_hostile.py")),
    "report": ("report/: every format, mermaid, explain, messages", (
        "test_messages.py", "test_progress_verbosity.py", "test_render.py", "test_report_explain.py",
        "test_report_github.py", "test_report_json.py", "test_report_junit.py", "test_report_markdown.py",
        "test_report_mermaid.py", "test_report_pipeline.py", "test_report_registry.py", "test_report_sarif.py",
        "test_report_secrets.py", "test_report_text.py")),
    "check": ("check/: `check` end to end, --changed-since, settings, baseline", (
        "test_baseline.py", "test_changed_since.py", "test_check_cli.py", "test_check_lazy_analysis.py",
        "test_check_parallel.py", "test_check_pipeline.py", "test_config.py", "test_drift_beside.py", "test_hostile_narrow.py", "test_read_plan.py",
        "test_settings_gate.py")),
    "trace": ("trace/: `trace`, and its agreement with `check`", (
        "test_check_trace_agree.py", "test_trace.py", "test_trace_clusters.py", "test_trace_inputs.py")),
    "diff": ("diff/: `diff`", (
        "test_diff.py", "test_diff_trace.py")),
    "replay": ("replay/: `replay` and check --flows", (
        "test_replay.py",)),
    "audit": ("audit/: `audit egress` against moto_server, and docs/audit.md's sample", (
        "test_audit_docs.py", "test_audit_errors.py", "test_audit_flowlog_memory.py", "test_audit_flowlogs.py",
        "test_audit_malformed.py", "test_audit_moto.py", "test_audit_preflight.py", "test_audit_pure.py",
        "test_audit_scheduling.py")),
    "live": ("live/: import, drift, check --live on snapshots and a stand-in API; docs/live.md", (
        "test_hostile_api.py", "test_hostile_live.py", "test_live_check.py", "test_live_client.py",
        "test_live_docs.py", "test_live_drift.py", "test_live_import.py")),
    "cli": ("cli/: conventions, standard input and output, -o targets, the process, fuzzing", (
        "test_cli_conventions.py", "test_cli_io.py", "test_fuzz.py", "test_fuzz_corpus.py",
        "test_hostile_stdout.py", "test_log_escape.py", "test_one_shot.py", "test_output_targets.py",
        "test_schema_cli.py")),
    "oracles": ("a real engine built from Go modules: Cilium, kube-scheduler, kube-apiserver, Flux, Argo CD", (
        "test_argocd_oracle.py", "test_cilium_agent.py", "test_cilium_engine.py", "test_cilium_oracle.py",
        "test_cluster_admission.py", "test_cluster_live.py", "test_cluster_network_policy.py", "test_cluster_smoke.py",
        "test_cluster_validation.py", "test_flux_oracle.py", "test_scheduler_oracle.py")),
    "docs": ("pages of docs/: every console block and link, the adopting walkthrough, kueue's excerpts", (
        "test_adopting.py", "test_docs.py", "test_kueue_docs.py")),
    "repo": ("the repository itself: layers, exports, vocabulary, start-up imports, the test layout, "
             "examples, the action, the CRD lock", (
        "test_action.py", "test_crds_lock.py", "test_examples.py", "test_exports.py", "test_layers.py",
        "test_layout.py", "test_startup_imports.py", "test_vocabulary.py")),
}


def folder_of(name: str) -> str | None:
    """The folder the table gives a test module's file name, or None."""
    return next((folder for folder, (_, names) in LAYOUT.items() if name in names), None)


# Path(__file__)...parent(s) in a moved module: one level more.
_FILE_PATH = re.compile(r"(Path\(__file__\)(?:\.resolve\(\))?)(\.parents\[(\d+)\]|(?:\.parent(?!s))+)")
# tests/test_X.py (or a glob such as tests/oracles/test_cluster_*.py) named anywhere in the repository.
_NAMED = re.compile(r"(?<![\w.-])tests/(test_[\w*]+\.py)")


def deeper(text: str) -> str:
    """A moved module's own paths, each one folder further up."""
    def up(m: re.Match[str]) -> str:
        if m.group(3) is not None:
            return f"{m.group(1)}.parents[{int(m.group(3)) + 1}]"
        return m.group(1) + m.group(2) + ".parent"
    return _FILE_PATH.sub(up, text)


def renamed(text: str) -> str:
    """`tests/test_X.py` as its folder has it; a glob when every module it matches has one folder."""
    def where(m: re.Match[str]) -> str:
        name = m.group(1)
        if "*" in name:
            pattern = re.compile(re.escape(name).replace(r"\*", r"\w*") + "$")
            folders = {f for f, (_, names) in LAYOUT.items() for n in names if pattern.match(n)}
            return f"tests/{folders.pop()}/{name}" if len(folders) == 1 else m.group(0)
        folder = folder_of(name)
        return f"tests/{folder}/{name}" if folder else m.group(0)
    return _NAMED.sub(where, text)


def git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=REPO, check=True, capture_output=True, text=True).stdout


def main() -> int:
    flat = sorted(p.name for p in TESTS.glob("test_*.py"))
    unknown = [n for n in flat if folder_of(n) is None]
    for name in flat:
        folder = folder_of(name)
        if folder is None:
            continue
        (TESTS / folder).mkdir(exist_ok=True)
        git("mv", f"tests/{name}", f"tests/{folder}/{name}")
        moved = TESTS / folder / name
        moved.write_text(deeper(moved.read_text(encoding="utf-8")), encoding="utf-8")
    for rel in git("ls-files", "-z").split("\0"):
        path = REPO / rel
        if not rel or path.is_symlink() or not path.is_file() or rel.startswith("fixtures/golden"):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        new = renamed(text)
        if new != text:
            path.write_text(new, encoding="utf-8")
    moved_n = len(flat) - len(unknown)
    print(f"moved {moved_n} test module(s)")
    if unknown:
        print("no folder in tests/tools/layout.py for: " + ", ".join(unknown), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
