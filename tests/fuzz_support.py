"""The fuzz harness: hypothesis strategies that mutate the bundled manifests and kustomizations,
and the property every mutant must satisfy when run through `check` and `trace` in-process.

Property: exit 0, 1 or 2; never a traceback; on 2, one line on stderr, which names the mutated
file with :line:column when it blames it; a few seconds at most. A failing input found by a
long run (`make fuzz`, which sets TOPOGATE_FUZZ_SAVE=1) is written to fixtures/fuzz-corpus/,
whose files tests/test_fuzz.py replays on every run.
"""

from __future__ import annotations

import copy
import hashlib
import os
import re
import shutil
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from hostile_support import invoke
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "fixtures" / "fuzz-corpus"
SECONDS = 10.0  # per invocation: kubectl's start-up included, on a loaded 2-core machine


def read_case(case: Path) -> str:
    """A corpus file's text exactly as it was kept: read as bytes, so a mutant's lone carriage
    return is not turned into a newline (`read_text` would) and the replay runs the same input."""
    return case.read_bytes().decode("utf-8", "surrogatepass")


MANIFEST_SEEDS = sorted([
    *(ROOT / "fixtures" / "incident" / "broken").glob("*.yaml"),
    *(ROOT / "fixtures" / "trace" / "lab").glob("*.yaml"),
    *(ROOT / "fixtures" / "trace" / "cilium").glob("*.yaml"),
    ROOT / "fixtures" / "lab" / "bases" / "train" / "pytorchjob.yaml",
])
# A kustomization that uses the fields topogate checks before kubectl runs; the files it names
# are written beside it by `Sandbox.write`.
KUSTOMIZATION_SEED = """\
apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
- pytorchjob.yaml
patches:
- path: patch.yaml
- patch: |-
    - op: add
      path: /metadata/labels
      value: {team: ml}
  target: {kind: PyTorchJob}
configMapGenerator:
- name: cfg
  files: [cfg.txt]
  literals: [a=b]
namePrefix: x-
"""
_PATCH = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: train}\nspec: {runPolicy: {}}\n"

# Characters that break parsers: controls, YAML indicators, a superscript digit, BOM, NEL.
_NASTY = st.sampled_from(list("\x00\x07\x1b\t\r\n:{}[],&*!|>'\"%@`#-? ²\ufeff\x85\u2028") +
                         ["&a ", "*a", "<<: *a", "!!binary ", "!!python/object ", "- ", "0x", "1e400"])


@st.composite
def _text_mutation(draw: st.DrawFn, text: str) -> str:
    if not text:
        return draw(_NASTY)
    i = draw(st.integers(0, len(text)))
    op = draw(st.sampled_from(["insert", "delete", "dup-line", "truncate", "indent"]))
    if op == "insert":
        return text[:i] + draw(_NASTY) + text[i:]
    if op == "delete":
        return text[:i] + text[i + draw(st.integers(1, 40)):]
    lines = text.split("\n")
    k = draw(st.integers(0, len(lines) - 1))
    if op == "dup-line":
        lines.insert(k, lines[k])
    elif op == "indent":
        lines[k] = " " * draw(st.integers(0, 6)) + lines[k].lstrip()
    else:
        return text[:i]
    return "\n".join(lines)


_SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(allow_nan=True),
    st.sampled_from(["²", "", "0", "-1", "65536", "TCP", "zone-a", "a" * 300, "../../..", "/etc/passwd",
                     "https://example.com/x.git", "github.com/x/y", "kustomization.yaml"]),
    st.text(max_size=20),
)
_VALUES = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=8), inner, max_size=3)), max_leaves=8)


def _paths(node: Any, prefix: tuple[Any, ...] = (), seen: set[int] | None = None) -> list[tuple[Any, ...]]:
    """Paths to every node; a subtree shared through an alias is walked once (an alias bomb
    loads as a few shared lists, which a plain walk would expand)."""
    seen = set() if seen is None else seen
    out = [prefix]
    if isinstance(node, (dict, list)):
        if id(node) in seen or len(prefix) > 60:
            return out
        seen.add(id(node))
    if isinstance(node, dict):
        for k, v in node.items():
            out.extend(_paths(v, (*prefix, k), seen))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out.extend(_paths(v, (*prefix, i), seen))
    return out


_FIELDS = ["affinity", "nodeAffinity", "podAffinity", "podAntiAffinity", "nodeSelector",
           "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms", "matchExpressions",
           "matchLabels", "labelSelector", "topologyKey", "tolerations", "topologySpreadConstraints",
           "maxSkew", "whenUnsatisfiable", "replicas", "parallelism", "numNodes", "replicatedJobs",
           "containers", "ports", "containerPort", "resources", "limits", "nvidia.com/gpu", "labels",
           "namespace", "name", "endpointSelector", "ingress", "egress", "ingressDeny", "toPorts",
           "fromEndpoints", "toEndpoints", "fromEntities", "toCIDR", "toCIDRSet", "port", "endPort",
           "protocol", "podSelector", "namespaceSelector", "policyTypes", "from", "to", "specs"]


def _get(doc: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    cur = doc
    for step in path[:-1]:
        cur = cur[step]
    cur[path[-1]] = value
    return doc


@st.composite
def _tree_mutation(draw: st.DrawFn, text: str) -> str:
    try:
        docs = [d for d in yaml.safe_load_all(text) if d is not None]
    except yaml.YAMLError:
        return text
    if not docs:
        return text
    i = draw(st.integers(0, len(docs) - 1))
    path = draw(st.sampled_from(_paths(docs[i])))
    how = draw(st.sampled_from(["value", "deep", "remove", "inject"]))
    if how == "inject":
        # A field the analysis reads, set at a random mapping: reaches code a random path rarely does.
        maps = [p for p in _paths(docs[i]) if isinstance(_get(docs[i], p), dict)]
        if not maps:
            return text
        target = _get(docs[i], draw(st.sampled_from(maps)))
        target[draw(st.sampled_from(_FIELDS))] = draw(_VALUES)
    elif how == "remove" and path:
        parent = docs[i]
        for step in path[:-1]:
            parent = parent[step]
        del parent[path[-1]]
    elif how == "deep":
        depth = draw(st.integers(50, 700))
        nested: Any = "leaf"
        for _ in range(depth):
            nested = [nested]
        docs[i] = _set(docs[i], path, nested)
    else:
        docs[i] = _set(docs[i], path, draw(_VALUES))
    try:
        return yaml.safe_dump_all(docs, sort_keys=False)
    except (yaml.YAMLError, RecursionError):
        return text


@st.composite
def mutant(draw: st.DrawFn, kind: str) -> str:
    """A seed of `kind` ("manifest" or "kustomization") with one to four mutations applied."""
    text = (KUSTOMIZATION_SEED if kind == "kustomization"
            else draw(st.sampled_from(MANIFEST_SEEDS)).read_text())
    for _ in range(draw(st.integers(1, 4))):
        text = draw(st.one_of(_text_mutation(text), _tree_mutation(text)))
    return text


@dataclass(frozen=True)
class Sandbox:
    """A scratch repository (the lab, with .git) where one mutant at a time is written."""

    repo: Path

    def write(self, kind: str, text: str) -> tuple[Path, Path]:
        """(the PATH to check, the mutated file)."""
        d = self.repo / ("overlay" if kind == "kustomization" else "manifests")
        d.mkdir(exist_ok=True)
        for old in d.iterdir():
            old.unlink()
        if kind == "kustomization":
            (d / "pytorchjob.yaml").write_text((ROOT / "fixtures/lab/bases/train/pytorchjob.yaml").read_text())
            (d / "patch.yaml").write_text(_PATCH)
            (d / "cfg.txt").write_text("x=1\n")
            target = d / "kustomization.yaml"
        else:
            target = d / "mutant.yaml"
        target.write_text(text, encoding="utf-8", errors="surrogatepass")
        return d, target


_POSITIONED = re.compile(r":\d+:\d+: ")


def _one(args: list[str], mutated: Path) -> None:
    start = time.monotonic()
    code, _, err = invoke(*args)
    took = time.monotonic() - start
    assert code in (0, 1, 2), (code, err)
    assert "Traceback" not in err
    assert took < SECONDS, f"{took:.1f} s for {args[0]}"
    if code == 2:
        lines = err.rstrip("\n").split("\n")
        assert len(lines) == 1 and lines[0].strip(), err
        if mutated.name in lines[0] and str(mutated.parent.name) in lines[0]:
            after = lines[0].split(mutated.name, 1)[1]
            assert _POSITIONED.match(after), f"no :line:column after the file: {lines[0]}"


def check_property(sandbox: Sandbox, kind: str, text: str) -> None:
    """Run the mutant through check and trace; on failure keep it in the corpus if asked to."""
    path, mutated = sandbox.write(kind, text)
    inventory = str(sandbox.repo / "inventory.yaml")
    try:
        _one(["check", inventory, str(path), "--format", "json"], mutated)
        # --inventory places the base's job (no namespace of its own) in ml-demo, as the
        # inventory does: without it trace stops at "no PyTorchJob ml-demo/train" and never
        # evaluates the mutant's policies.
        _one(["trace", str(path), str(sandbox.repo / "bases" / "train"), "--inventory", inventory,
              "--from", "ml-demo/PyTorchJob/train/Worker", "--to", "ml-demo/PyTorchJob/train/Master"],
             mutated)
    except Exception as e:  # not KeyboardInterrupt: the input of an interrupted run did not fail
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            _keep(kind, text, e)
        raise


# signature -> the corpus file this run keeps that failure in
_KEPT: dict[str, Path] = {}


def _keep(kind: str, text: str, e: BaseException) -> None:
    """Keep the smallest failing input per kind of failure (where it failed and how): shrinking
    tries many, and only the last, smallest one of each is worth replaying. A file an earlier
    run kept is never replaced (it may be another bug that fails at the same line, such as a
    different hang): this run's failure gets a file of its own beside it."""
    last = traceback.extract_tb(e.__traceback__)[-1]
    signature = f"{kind}:{type(e).__name__}:{Path(last.filename).name}:{last.lineno}"
    data = text.encode("utf-8", "surrogatepass")
    path = _KEPT.get(signature)
    if path is None:
        stem = f"{kind}-{hashlib.sha256(signature.encode()).hexdigest()[:12]}"
        path, n = CORPUS / f"{stem}.yaml", 1
        while path.exists():
            path, n = CORPUS / f"{stem}-{n}.yaml", n + 1
        _KEPT[signature] = path
    elif len(path.read_bytes()) <= len(data):
        return
    CORPUS.mkdir(exist_ok=True)
    path.write_bytes(data)


# ---------------------------------------------------------------- inventories and their bases
#
# The bundled inventories (seeds) and the base files they name are mutated too, and run through
# `generate` (then `generate --check` on what it wrote: same inventory, same tree). A mutant of a
# seed's inventory.yaml is kept as fixtures/fuzz-corpus/inventory-<seed>-*.yaml; a mutant of one
# of its base files as base-<seed>-*.yaml, whose first line names the file it replaces.

INVENTORY_SEEDS = {"lab": ROOT / "fixtures" / "lab", "multi": ROOT / "fixtures" / "multi",
                   "audit": ROOT / "fixtures" / "audit", "eks": ROOT / "fixtures" / "live" / "eks",
                   "trace": ROOT / "fixtures" / "trace" / "two-clusters"}
TARGET_LINE = "# fuzz-target: "


def base_files(seed: str) -> list[str]:
    """The seed's base files (relative to its directory) that its inventory names."""
    root = INVENTORY_SEEDS[seed]
    inv = yaml.safe_load((root / "inventory.yaml").read_text())
    out = []
    for w in inv.get("workloads") or []:
        out += [str(f.relative_to(root)) for f in sorted((root / w["base"]).iterdir()) if f.is_file()]
    return sorted(set(out))


# Scalars that have broken readers of typed fields: a superscript digit (`isdigit` true, `int`
# fails), huge and float-y numbers, text where a number goes, names that are paths.
_ODD_SCALARS = st.sampled_from(["²", "٣", "1e400", "0x1F", "0o17", "+1", "1_000", ".inf", "-0", "NaN",
                                2**64, -(2**63), 2**200, 1.5, -1, 0, True, "",
                                "\x07", "a\nb", "::error::x", "../..", "/", "\u202e", "kustomization"])


def _deep_alias(levels: int) -> Any:
    """A value that dumps as a few lines of anchors but expands 9**levels times."""
    v: Any = ["lol"] * 9
    for _ in range(levels):
        v = [v] * 9
    return v


@st.composite
def _structure_mutation(draw: st.DrawFn, text: str) -> str:
    """Type swaps, deletions, duplications, shared subtrees (aliases), renames to a name used
    elsewhere: the mutations that reach the checks behind the schema."""
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if not isinstance(doc, (dict, list)):
        return text
    paths = _paths(doc)
    path = draw(st.sampled_from(paths))
    how = draw(st.sampled_from(["swap", "odd", "delete", "dup", "alias", "bomb", "rename"]))
    if how in ("delete", "dup") and path:
        parent = _get(doc, path[:-1])
        if how == "delete":
            del parent[path[-1]]
        elif isinstance(parent, list):
            parent.insert(int(path[-1]), copy.deepcopy(parent[path[-1]]))
        else:
            return _dup_key(yaml.safe_dump(doc, sort_keys=False, allow_unicode=True), str(path[-1]))
    elif how == "alias":
        other = draw(st.sampled_from(paths))
        doc = _set(doc, path, _get(doc, other)) if other[:len(path)] != path else doc
    elif how == "bomb":
        doc = _set(doc, path, _deep_alias(draw(st.integers(2, 8))))
    elif how == "rename":
        names = sorted({v for p in paths for v in [_get(doc, p)] if isinstance(v, str)})
        doc = _set(doc, path, draw(st.sampled_from(names))) if names else doc
    elif how == "odd":
        doc = _set(doc, path, draw(_ODD_SCALARS))
    else:
        doc = _set(doc, path, draw(_VALUES))
    try:
        return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
    except (yaml.YAMLError, RecursionError):
        return text


def _dup_key(text: str, key: str) -> str:
    """The text with the first line that sets `key` written twice: a duplicate key, which a
    dict cannot hold but a file can."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.lstrip(" -").startswith(f"{key}:"):
            indent = len(line) - len(line.lstrip(" -"))
            lines.insert(i + 1, " " * indent + line[indent:])
            break
    return "\n".join(lines)


@st.composite
def inventory_mutant(draw: st.DrawFn) -> tuple[str, str, str]:
    """(seed, file relative to the seed, mutated text): the seed's inventory or a base file."""
    seed = draw(st.sampled_from(sorted(INVENTORY_SEEDS)))
    target = draw(st.sampled_from(["inventory.yaml"] * 3 + base_files(seed)))
    text = (INVENTORY_SEEDS[seed] / target).read_text()
    for _ in range(draw(st.integers(1, 4))):
        text = draw(st.one_of(_text_mutation(text), _tree_mutation(text), _structure_mutation(text),
                              _structure_mutation(text)))
    return seed, target, text


class InventorySandbox:
    """One scratch repository per seed (with .git); a mutant replaces one file for one run."""

    def __init__(self, root: Path):
        self.root = root

    def repo(self, seed: str) -> Path:
        repo = self.root / seed
        if not repo.exists():
            shutil.copytree(INVENTORY_SEEDS[seed], repo, symlinks=True)
            (repo / ".git").mkdir()
        return repo


_SUMMARY = re.compile(r"^topogate: (\d+) problems? in the inventory; nothing was written\.$")
_PROBLEM = re.compile(r"^(.+?):(\d+):(\d+): \S")


def _check_generate_errors(err: str, cwd: Path) -> None:
    """On exit 2: one line per problem, each naming an existing file with :line:column, then the
    summary that counts them; or one line for a problem that is not the inventory's."""
    lines = err.rstrip("\n").split("\n")
    m = _SUMMARY.match(lines[-1])
    if m is None:
        assert len(lines) == 1 and lines[0].strip(), err
        return
    assert int(m.group(1)) == len(lines) - 1 >= 1, err
    for line in lines[:-1]:
        p = _PROBLEM.match(line)
        assert p, f"no file:line:column: {line}"
        assert (cwd / p.group(1)).is_file(), f"names no file: {line}"
        assert int(p.group(2)) >= 1 and int(p.group(3)) >= 1, line


def _timed(*args: str) -> tuple[int, str, str]:
    start = time.monotonic()
    code, out, err = invoke(*args)
    took = time.monotonic() - start
    assert "Traceback" not in err
    assert took < SECONDS, f"{took:.1f} s for {args[0]}"
    return code, out, err


def check_inventory_property(sandbox: InventorySandbox, seed: str, target: str, text: str) -> None:
    """Write the mutant over `target` in the seed's scratch repository and run `generate`; when
    it wrote a tree, `generate --check` must find it up to date and `check` must build and
    analyse it (exit 0 or 1). The seed's file is restored afterwards."""
    repo = sandbox.repo(seed)
    victim = repo / target
    original = (INVENTORY_SEEDS[seed] / target).read_bytes()
    out = repo.parent / f"{seed}-out"
    inventory = str(repo / "inventory.yaml")
    shutil.rmtree(out, ignore_errors=True)
    victim.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        code, _, err = _timed("generate", inventory, "-o", str(out))
        assert code in (0, 2), (code, err)
        if code == 2:
            _check_generate_errors(err, Path.cwd())
            assert not out.exists(), "a refused inventory must write nothing"
            return
        code, stdout, _ = _timed("generate", inventory, "-o", str(out), "--check")
        assert code == 0, f"generate wrote a tree that --check does not find up to date: {stdout}"
        # What generate wrote must build and be analysed: findings are fine, bad input is not.
        code, _, err = _timed("check", inventory, "--rendered", str(out), "--format", "json")
        assert code in (0, 1), (code, err)
    except Exception as e:  # not KeyboardInterrupt: the input of an interrupted run did not fail
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            kind = "inventory" if target == "inventory.yaml" else "base"
            head = "" if kind == "inventory" else f"{TARGET_LINE}{target}\n"
            _keep(f"{kind}-{seed}", head + text, e)
        raise
    finally:
        victim.write_bytes(original)


def corpus_inventory_case(case: Path) -> tuple[str, str, str]:
    """(seed, target, text) of a corpus file named inventory-<seed>-* or base-<seed>-*."""
    kind, seed = case.name.split("-")[:2]
    assert seed in INVENTORY_SEEDS, f"{case.name}: the seed after '{kind}-' must be one of {sorted(INVENTORY_SEEDS)}"
    text = read_case(case)
    if kind == "inventory":
        return seed, "inventory.yaml", text
    first, _, rest = text.partition("\n")
    assert first.startswith(TARGET_LINE), f"{case.name}: the first line must be '{TARGET_LINE}<file>'"
    return seed, first[len(TARGET_LINE):], rest
