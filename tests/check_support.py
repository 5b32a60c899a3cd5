"""Shared helpers for check tests: run a rule-fixture case as `topogate check` would."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import yaml
from conftest import GIT_ENV

from topogate.check.run import CheckOutcome, run_check

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT / "fixtures" / "rules"


def run_case(case_dir: Path, tmp: Path) -> CheckOutcome:
    spec: dict[str, Any] = yaml.safe_load((case_dir / "case.yaml").read_text())
    inventory = (case_dir / spec["inventory"]).resolve()
    paths = [str((case_dir / p).resolve()) for p in spec.get("paths", [])]
    rendered = None
    today = dt.date.fromisoformat(spec["today"]) if "today" in spec else None
    if "live" in spec:  # the TG2xx family compares with a recorded cluster (topogate/live/)
        from topogate.live import commands
        from topogate.live.client import Target

        source = commands.Source(str((case_dir / spec["live"]["from_file"]).resolve()), Target())
        command = commands.run_drift if spec["live"]["command"] == "drift" else commands.run_live_check
        return command(str(inventory), source, today=today).outcome
    if spec.get("render"):
        # The tree lives beside the inventory (bases are relative to it); removed afterwards.
        from topogate.generators import render_tree
        from topogate.sources.inventory import load_inventory
        from topogate.tree import writer

        inv = load_inventory(inventory)
        out = inventory.parent / f".rendered-{tmp.name}"
        writer.write_tree(str(out), render_tree(inv, str(out)))
        mutate = spec.get("mutate")
        if mutate:
            f = out / mutate["file"]
            f.write_text(f.read_text() + mutate["append"])
        rendered = str(out)
        try:
            # `extra`: manifests checked beside the rendered tree (a runtime the platform installs)
            extra = [str((case_dir / p).resolve()) for p in spec.get("extra", [])]
            # `inside`: parts of the rendered tree checked instead of the whole of it
            inside = [str(out / p) for p in spec.get("inside", [])]
            return run_check(str(inventory), paths or inside or [rendered, *extra], rendered, today=today)
        finally:
            shutil.rmtree(out)
    live = ()
    weakened = _weakened(case_dir, spec["settings"], tmp) if "settings" in spec else ()
    if "flows" in spec:  # TG210: recorded Hubble flows replayed against the tree (topogate.replay)
        from topogate.replay import carried_denied, run_replay

        flows = str((case_dir / spec["flows"]).resolve())
        live = carried_denied(run_replay(flows, str(inventory), paths, spec.get("cluster")), flows)
    return run_check(str(inventory), paths, rendered, spec.get("cluster"), today=today, live=live,
                     weakened=weakened)




def _weakened(case_dir: Path, files: dict[str, str], tmp: Path) -> tuple[Any, ...]:
    """TG011's facts for a pull request that changes the settings file: `base` committed on
    main in a scratch repository, `head` in its working tree, compared as `check
    --changed-since main` compares them (real git)."""
    from topogate.check.config import load
    from topogate.check.settings_guard import guard
    from topogate.cli.common import formats
    from topogate.policies.engine import all_rules

    repo = tmp / "settings-repo"
    repo.mkdir()
    settings = repo / ".topogate.yaml"

    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                       env={**os.environ, **GIT_ENV})

    settings.write_text((case_dir / files["base"]).read_text())
    git("init", "-q", "-b", "main")
    git("add", "-A")
    git("commit", "-qm", "main")
    settings.write_text((case_dir / files["head"]).read_text())
    rules = all_rules()
    names = [r.id for r in rules] + [r.name for r in rules]
    head = load(str(settings), formats(), names)
    return guard("main", head, repo_dir=str(repo), start=str(repo), config_file=None, formats=formats(),
                 rule_names=names, rules=rules).weakened
