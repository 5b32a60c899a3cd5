"""Run check and trace over the upstream examples in /work/upstream (when that checkout exists):
Kubeflow trainer and mpi-operator examples, JobSet examples, and the YAML blocks of the
NetworkPolicy recipes (markdown). Nothing is copied into the repo: the files are read where
they are, the recipes' blocks are written to a temporary directory for the run only."""

from __future__ import annotations

import re
import traceback
from dataclasses import dataclass, field
from pathlib import Path

import yaml

UPSTREAM = Path("/work/upstream")
JOB_KINDS = ("PyTorchJob", "MPIJob", "JobSet", "TrainJob", "TFJob", "XGBoostJob", "PaddleJob", "JAXJob",
             "ClusterTrainingRuntime", "TrainingRuntime")
_EXAMPLE_DIRS = ("kubeflow+trainer/examples", "kubeflow+mpi-operator/examples",
                 "kubernetes-sigs+jobset/site/static/examples", "kubernetes-sigs+jobset/config/samples",
                 "kubernetes-sigs+jobset/examples")
_KIND = re.compile(r"^kind:\s*(\w+)\s*$", re.M)
_YAML_BLOCK = re.compile(r"```ya?ml\n(.*?)```", re.S)


def job_files() -> list[Path]:
    out: list[Path] = []
    for d in _EXAMPLE_DIRS:
        root = UPSTREAM / d
        if not root.is_dir():
            continue
        for f in sorted(root.rglob("*.y*ml")):
            try:
                text = f.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if any(k in JOB_KINDS for k in _KIND.findall(text)):
                out.append(f)
    return out


def recipe_blocks(tmp: Path) -> list[Path]:
    """Each YAML block of each recipe, as its own file under tmp."""
    out: list[Path] = []
    root = UPSTREAM / "ahmetb+kubernetes-network-policy-recipes"
    for md in sorted(root.glob("*.md")) if root.is_dir() else []:
        for i, block in enumerate(_YAML_BLOCK.findall(md.read_text(encoding="utf-8"))):
            if "kind:" not in block:
                continue
            f = tmp / f"{md.stem}-{i}.yaml"
            f.write_text(block)
            out.append(f)
    return out


def workloads(f: Path) -> list[str]:
    """ns/Kind/name specs of the pod-running objects in a file, for trace."""
    specs: list[str] = []
    try:
        docs = list(yaml.safe_load_all(f.read_text(encoding="utf-8")))
    except yaml.YAMLError:
        return specs
    for d in docs:
        if isinstance(d, dict) and d.get("kind") in (*JOB_KINDS[:8], "Deployment", "Pod", "Job"):
            md = d.get("metadata") or {}
            if isinstance(md, dict) and md.get("name"):
                specs.append(f"{md.get('namespace') or 'default'}/{d['kind']}/{md['name']}")
    return specs


@dataclass
class Tally:
    runs: int = 0
    crashes: list[str] = field(default_factory=list)

    def run(self, what: str, fn: object, *args: object) -> object:
        self.runs += 1
        try:
            return fn(*args)  # type: ignore[operator]
        except SystemExit:
            return None
        except Exception as err:  # noqa: BLE001 - counting tracebacks is the point
            name = type(err).__name__
            if name in ("CheckInputError", "TraceError"):
                return err
            self.crashes.append(f"{what}: {name}: {err}\n{traceback.format_exc(limit=3)}")
            return None
