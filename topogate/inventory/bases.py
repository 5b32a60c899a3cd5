"""Reading a workload's base: its kustomization, read directly or built with kubectl kustomize,
the one training job in it, and that job's replica groups. Problems are reported at the
workload's `base:` field, or at the line of the base file that is wrong."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from topogate.core.position import Position
from topogate.inventory.basefiles import line_of, parse_base_text
from topogate.inventory.basefiles import shown as _shown
from topogate.inventory.model import ReplicaGroup
from topogate.inventory.problems import Problem
from topogate.inventory.values import as_map, seq
from topogate.k8s import kinds, shapes
from topogate.k8s import kustomization as kmodel
from topogate.safeio.oserror import reason
from topogate.safeio.repopaths import Roots
from topogate.safeio.saferead import InputError, InputErrors, read_text

if TYPE_CHECKING:
    from topogate.inventory.checker import Checker
    from topogate.inventory.yamlpos import YPath

_PLAIN_KUSTOMIZATION_KEYS = {"apiVersion", "kind", "resources", "metadata"}
_CLUSTER_SCOPED_IN_BASES = ("ClusterTrainingRuntime", "Namespace", "ClusterRole",
                            "ClusterRoleBinding", "CiliumClusterwideNetworkPolicy")


def read_base(chk: Checker, path: YPath, rel: str) -> tuple[str, tuple[Any, ...]]:
    try:
        return _read_base(chk, path, rel)
    except (OSError, RuntimeError, ValueError) as e:
        # a name too long, a NUL byte, a symlink loop: the path itself is unusable
        shown = rel if len(rel) <= 60 else rel[:57] + "..."
        why = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        chk.err(path, f"base '{shown}' cannot be read ({why}); fix the path")
        return "", ()


def _read_base(chk: Checker, path: YPath, rel: str) -> tuple[str, tuple[Any, ...]]:
    if os.path.isabs(rel):
        chk.err(path, f"base '{rel}' must be a path relative to the inventory file")
        return "", ()
    target = chk.resolve_under(chk.inv_dir, rel)
    try:
        target.relative_to(chk.repo)
    except ValueError:
        chk.err(path, (f"base '{rel}' resolves outside the inventory's repository; keep bases "
                        "inside the repository so Argo CD and Flux can read them"))
        return "", ()
    if not target.is_dir():
        chk.err(path, f"base '{rel}' does not exist or is not a directory (relative to the inventory file)")
        return "", ()
    kfile = next((target / n for n in ("kustomization.yaml", "kustomization.yml", "Kustomization")
                  if (target / n).is_file()), None)
    if kfile is None:
        chk.err(path, (f"base '{rel}' has no kustomization.yaml; add one that lists the job's "
                        "manifests under `resources:` so the overlay can build on it"))
        return "", ()
    before = len(chk.problems)
    ktext = read_base_text(chk, kfile) or ""
    kdocs = _parse(chk, ktext, kfile) if ktext else []
    kdoc = _as_kustomize_reads(chk, ktext, kfile) if kdocs and isinstance(kdocs[0], dict) else {}
    if len(chk.problems) > before:
        return "", ()
    if not _kustomization_header_ok(chk, kdoc, ktext, kfile, rel):
        return "", ()
    resources = kdoc.get("resources", [])
    if not isinstance(resources, list):
        chk.problems.append(Problem(line_of(ktext, kfile, "resources"), (
            f"`resources` of base '{rel}' must be a list of paths")))
        return "", ()
    # Read the base the way kustomize does. A base that is only a list of its own files is
    # read directly; one that transforms them (patches, labels, components, sub-directories)
    # is built with kubectl kustomize, so patches are computed against what it really yields.
    simple = set(kdoc) <= _PLAIN_KUSTOMIZATION_KEYS
    docs: list[Any] = []
    for res in resources:
        res = str(res)
        if "://" in res or res.startswith(("github.com/", "git@", "ssh:")):
            chk.problems.append(Problem(line_of(ktext, kfile, res), (
                f"resource '{res}' of base '{rel}' is remote: generate would depend on the "
                "network and on what that URL serves today; vendor it into the repository")))
            continue
        f = chk.resolve_under(target, res)
        if f.is_file():
            try:
                f.relative_to(target)
            except ValueError:
                chk.problems.append(Problem(line_of(ktext, kfile, res), (
                    f"resource '{res}' of base '{rel}' is a file outside the base directory; "
                    "kustomize refuses that (load restrictor): move it into the base or make "
                    "its directory a kustomization of its own")))
                continue
            roots = _roots(chk)  # its realpath resolves each directory once for every base
            why = roots.untracked(roots.realpath(f))
            if why is not None:
                chk.problems.append(Problem(line_of(ktext, kfile, res), (
                    f"resource '{res}' of base '{rel}' {why}")))
                continue
            docs.extend(d for d in load_base_file(chk, f) if d is not None)
        elif f.is_dir():
            simple = False
        elif os.path.lexists(f):
            chk.problems.append(Problem(line_of(ktext, kfile, res), (
                f"resource '{res}' of base '{rel}' is {_kind(f)}; kustomize and topogate read "
                "only regular files: replace it with the manifest")))
        else:
            chk.problems.append(Problem(line_of(ktext, kfile, res), (
                f"resource '{res}' of base '{rel}' does not exist; kustomize cannot build the "
                "base (and so no overlay on it): fix the path or remove the entry")))
    if len(chk.problems) > before:
        return "", ()  # the job cannot be read reliably: say nothing more about it
    if not simple:
        built = build_base(chk, path, target, rel)
        if built is None:
            return "", ()
        docs = built
    if not one_job_per_base(chk, path, docs, rel):
        return "", ()
    return str(target), tuple(docs)


def _kind(f: Path) -> str:
    try:
        mode = f.stat().st_mode
    except OSError:
        return "unreadable (a dangling symlink?)"
    return "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "not a regular file"


def _roots(chk: Checker) -> Roots:
    """Where a base may read: the inventory's repository (its tracked files)."""
    if chk.base_roots is None:
        chk.base_roots = Roots((Path(os.path.realpath(chk.repo)),))
    return chk.base_roots


class BaseBuildError(Exception):
    """Why a base could not be built: `kind` is "kubectl" (no kubectl to build with), "refused"
    (a file the build would read is refused: remote, outside the repository, untracked) or
    "failed" (kubectl kustomize failed); str() is the detail."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind = kind


class BaseBuilder(Protocol):
    """Builds a base's kustomization directory (`kubectl kustomize`, under the same checks and
    limits as check's own builds): the output YAML, or BaseBuildError. The inventory does not
    run kubectl itself; the loader's caller hands it the builder (topogate.sources.inventory)."""

    def __call__(self, target: Path, roots: Roots) -> str: ...


def build_base(chk: Checker, path: YPath, target: Path, rel: str) -> list[Any] | None:
    if chk.build is None:
        chk.err(path, f"base '{rel}' transforms its resources, so reading it needs kubectl "
                      "kustomize, which this command does not run")
        return None
    try:
        out = chk.build(target, _roots(chk))
    except BaseBuildError as e:
        chk.err(path, {
            "kubectl": f"base '{rel}' transforms its resources, so reading it needs kubectl: {e}",
            "refused": f"base '{rel}' cannot be built: {e}",
        }.get(e.kind, f"kubectl kustomize cannot build base '{rel}': {e}"))
        return None
    return [d for d in _parse(chk, out, target / "kustomization.yaml") if d is not None]




def _as_kustomize_reads(chk: Checker, text: str, kfile: Path) -> dict[str, Any]:
    """The kustomization's fields as kustomize reads them (topogate.k8s.kustomization): each
    under its canonical name; a key kustomize reads under another spelling, or a merge key, is
    a problem at its line."""
    try:
        k = kmodel.read(text, _shown(kfile))
    except InputErrors as e:
        chk.problems += [Problem(pos, msg) for pos, msg in e.problems]
        return {}
    except InputError as e:
        chk.problems.append(Problem(e.pos, e.message))
        return {}
    return {name: k.value(name) for name in k.fields}


def _kustomization_header_ok(chk: Checker, kdoc: dict[str, Any], ktext: str, kfile: Path, rel: str) -> bool:
    """What kustomize checks before anything else: a base is a Kustomization of its one API
    version (both may be left out) with mapping metadata; anything else fails every build."""
    for key, want in (("kind", "Kustomization"), ("apiVersion", kmodel.KUSTOMIZE_API)):
        if key in kdoc and kdoc[key] != want:
            chk.problems.append(Problem(line_of(ktext, kfile, f"{key}:"), (
                f"`{key}` of base '{rel}' must be {want}; kustomize cannot build it otherwise")))
            return False
    if not isinstance(kdoc.get("metadata", {}), dict):
        chk.problems.append(Problem(line_of(ktext, kfile, "metadata:"), (
            f"`metadata` of base '{rel}' must be a mapping; kustomize cannot build it otherwise")))
        return False
    return True


def one_job_per_base(chk: Checker, path: YPath, docs: list[Any], rel: str) -> bool:
    """The overlay carries everything in its base: a second job would ride along unpatched."""
    jobs = [d for d in docs
            if isinstance(d, dict) and isinstance(d.get("kind"), str) and d["kind"] in kinds.TRAINING_KINDS]
    ids = [f"{d.get('kind')}/{as_map(d.get('metadata')).get('name')}" for d in jobs]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        chk.err(path, f"base '{rel}' declares {', '.join(dupes)} more than once; kustomize "
                       "cannot build it")
        return False
    if len(jobs) > 1:
        chk.err(path, (f"base '{rel}' holds {len(jobs)} training jobs ({', '.join(sorted(ids))}); "
                        "each workload needs a base of its own, or the other jobs ride along "
                        "in its overlay without placement"))
        return False
    return True


def _parse(chk: Checker, text: str, f: Path) -> list[Any]:
    """Documents of a base manifest; its problem, if any, is reported at its own line."""
    docs, problems = parse_base_text(text, f)
    chk.problems += [Problem(pos, msg) for pos, msg in problems]
    return docs


def read_base_text(chk: Checker, f: Path) -> str | None:
    """A base file's text under the reading limits of every manifest: inside the repository,
    tracked, a regular file (a FIFO would hang generate), no larger than the file limit."""
    shown = _shown(f)
    where = Position(shown, 1, 1)
    try:
        roots = _roots(chk)
        real = roots.check(f, where, shown)
        roots.check_tracked(str(real), where, shown)
        return read_text(real, shown)
    except InputError as e:
        chk.problems.append(Problem(e.pos, f"cannot read a base manifest: {e.message}"))
    except OSError as e:
        chk.problems.append(Problem(where, f"cannot read a base manifest: {reason(e)}"))
    return None


def load_base_file(chk: Checker, f: Path) -> list[Any]:
    """Documents of one base file; a problem is reported at its own line, in its file."""
    text = read_base_text(chk, f)
    return [] if text is None else _parse(chk, text, f)


def groups_of(chk: Checker, path: YPath, docs: tuple[Any, ...], kind: str, name: str,
              rel: str) -> tuple[ReplicaGroup, ...]:
    job = kinds.find_job(list(docs), kind, name)
    if job is None:
        chk.err(path, (f"base '{rel}' has no {kind} named '{name}' among its resources; the "
                        "workload's name must be the job's metadata.name"))
        return ()
    want_group = kinds.TRAINING_KINDS[kind].api_version.rpartition("/")[0]
    api = str(job.get("apiVersion", ""))
    if api.rpartition("/")[0] != want_group:
        chk.err(path, (f"the {kind} '{name}' in base '{rel}' has apiVersion '{api}'; topogate "
                        f"patches {kind} of API group {want_group}: fix the apiVersion"))
        return ()
    if kind == "TrainJob" and not as_map(as_map(job.get("spec")).get("runtimeRef")).get("name"):
        chk.err(path, (f"the TrainJob '{name}' in base '{rel}' has no spec.runtimeRef.name; the "
                        "Trainer needs a runtime to create its pods"))
        return ()
    cluster_scoped = [f"{d.get('kind')}/{as_map(d.get('metadata')).get('name')}" for d in docs
                      if isinstance(d, dict) and d.get("kind") in _CLUSTER_SCOPED_IN_BASES]
    if cluster_scoped:
        chk.err(path, (f"base '{rel}' holds cluster-scoped {', '.join(cluster_scoped)}; the "
                        "overlay sets the workload's namespace on everything in its base: apply "
                        "cluster-scoped objects separately (a TrainingRuntime in the namespace "
                        "works in a base)"))
        return ()

    bad = shapes.first_problem(job)
    if bad is not None:
        # generate patches these fields: a wrong type would crash the patch, not explain itself
        chk.err(path, (f"the {kind} '{name}' in base '{rel}': {shapes.field_name(bad[0])} must be "
                        f"{bad[1]}, not {shapes.describe_at(job, bad[0])}; the API server would "
                        "refuse it: fix the field"))
        return ()
    groups = list(kinds.replica_groups(job, _runtime_groups(job, docs)))
    if not groups:
        chk.err(path, f"the {kind} '{name}' in base '{rel}' has no replica groups (pods) to place")
        return ()
    return tuple(ReplicaGroup(g.name, g.pods, g.gpus_per_pod) for g in groups)


def _runtime_groups(job: dict[str, Any], docs: tuple[Any, ...]) -> tuple[str, ...]:
    """The replicated jobs of a TrainJob's runtime, when the runtime is among the base's docs."""
    if job.get("kind") != "TrainJob":
        return ()
    ref = as_map(as_map(job.get("spec")).get("runtimeRef"))
    for d in docs:
        if (isinstance(d, dict) and d.get("kind") in ("ClusterTrainingRuntime", "TrainingRuntime")
                and as_map(d.get("metadata")).get("name") == ref.get("name")):
            rjs = as_map(as_map(as_map(d.get("spec")).get("template")).get("spec")).get("replicatedJobs")
            return tuple(str(r.get("name")) for r in seq(rjs) if isinstance(r, dict))
    return ()

__all__ = ["BaseBuildError", "BaseBuilder", "build_base", "groups_of", "read_base"]
