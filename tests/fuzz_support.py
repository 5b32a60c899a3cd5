"""The fuzz harness: hypothesis strategies that mutate the bundled manifests and kustomizations,
and the property every mutant must satisfy when run through `check` and `trace` in-process.

Property: exit 0, 1 or 2; never a traceback; on 2, one line on stderr, which names the mutated
file with :line:column when it blames it; a few seconds at most. A failing input found by a
long run (`make fuzz`, which sets TOPOGATE_FUZZ_SAVE=1) is written to fixtures/fuzz-corpus/,
whose files tests/cli/test_fuzz.py replays on every run.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import re
import shutil
import time
import traceback
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
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


# ---------------------------------------------------------------- hostile inputs of the live commands
#
# Three more inputs a pull request or a misbehaving server controls, each with the property
# above (no traceback, a known exit code, one line on exit 2, a few seconds at most) and one of
# its own: never fail-open. A failing input is kept as snapshot-*, costexplorer-* or trace-*
# (the file's text: the snapshot, the JSON list of Cost Explorer pages, the JSON [from, to,
# port] of trace) and replayed by test_corpus.

SNAPSHOT_SEEDS = {"no-drift": ROOT / "fixtures" / "live" / "eks-nodes.json",
                  "drifted": ROOT / "fixtures" / "live" / "eks-nodes-drifted.json"}
SNAPSHOT_INVENTORY = ROOT / "fixtures" / "live" / "eks" / "inventory.yaml"
# Fields the node readers use, set on a random node: reach the typed checks a random path rarely does.
_NODE_FIELDS: list[tuple[str, ...]] = [
    ("metadata",), ("metadata", "name"), ("metadata", "labels"),
    ("metadata", "labels", "topology.kubernetes.io/zone"), ("metadata", "labels", "node-type"),
    ("metadata", "labels", "eks.amazonaws.com/nodegroup"), ("metadata", "labels", "karpenter.sh/nodepool"),
    ("spec",), ("spec", "taints"), ("spec", "taints", 0), ("spec", "taints", 0, "value"),
    ("spec", "taints", 0, "effect"), ("spec", "taints", 0, "key"), ("spec", "unschedulable"),
    ("status",), ("status", "allocatable"), ("status", "allocatable", "nvidia.com/gpu"),
    ("status", "allocatable", "amd.com/gpu"), ("kind",), ("apiVersion",)]
# Values a hand-made or truncated export, or a proxy, puts where a quantity or a label goes.
_HOSTILE_SCALARS = st.sampled_from([
    "8", "0", "-8", "8.5", "8e0", "1k", "8000m", "x", "", "NaN", "Infinity", "1" * 400, 8, 0, -1, 2**64,
    1e308, float("nan"), True, False, None, [], {}, ["a"], {"a": 1}, "us-east-1a", "gpu", "present",
    "NoSchedule", "NoExecute", "\u202e", "a\nb"])


def _put_path(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    """`doc` with `path` set to `value`, creating mappings on the way (a list index that is
    out of range is a no-op: the mutation is skipped)."""
    cur = doc
    for step in path[:-1]:
        if isinstance(cur, dict):
            nxt = cur.get(step)
            if not isinstance(nxt, (dict, list)):
                nxt = cur[step] = {}
            cur = nxt
        elif isinstance(cur, list) and isinstance(step, int) and step < len(cur):
            cur = cur[step]
        else:
            return
    if isinstance(cur, dict):
        cur[path[-1]] = value
    elif isinstance(cur, list) and isinstance(path[-1], int) and path[-1] < len(cur):
        cur[path[-1]] = value


@st.composite
def _json_mutation(draw: st.DrawFn, doc: Any, hot: list[tuple[Any, ...]], scalars: Any) -> Any:
    """One change to parsed JSON: a hot field (a field the readers use) set to a hostile value,
    a random node deleted, duplicated, swapped for another type, nested deep or shared."""
    how = draw(st.sampled_from(["hot", "hot", "hot", "swap", "delete", "dup", "deep", "empty"]))
    if how == "hot" and hot:
        _put_path(doc, draw(st.sampled_from(hot)), draw(st.one_of(scalars, _ODD_SCALARS, _VALUES)))
        return doc
    paths = [p for p in _paths(doc) if len(p) < 12]
    path = draw(st.sampled_from(paths))
    if how == "delete" and path:
        parent = _get(doc, path[:-1])
        del parent[path[-1]]
    elif how == "dup" and path and isinstance(_get(doc, path[:-1]), list):
        parent = _get(doc, path[:-1])
        parent.insert(int(path[-1]), copy.deepcopy(parent[path[-1]]))
    elif how == "deep":
        nested: Any = "leaf"
        for _ in range(draw(st.sampled_from([60, 200, 600]))):
            nested = [nested]
        doc = _set(doc, path, nested)
    elif how == "empty":
        doc = _set(doc, path, draw(st.sampled_from([[], {}, "", None])))
    else:
        doc = _set(doc, path, draw(_VALUES))
    return doc


def _dump_json(doc: Any, indent: int | None) -> str:
    try:
        return json.dumps(doc, indent=indent, allow_nan=True)
    except (RecursionError, ValueError):
        return "{}"


@st.composite
def snapshot_mutant(draw: st.DrawFn) -> tuple[str, str]:
    """(seed name, the mutated snapshot's text): JSON mostly, sometimes YAML, sometimes cut."""
    seed = draw(st.sampled_from(sorted(SNAPSHOT_SEEDS)))
    doc = json.loads(SNAPSHOT_SEEDS[seed].read_text())
    first = doc["items"][:1]  # a well-formed node ahead of the deep nesting (the mutations may remove `items`)
    nodes = [i for i, o in enumerate(doc["items"]) if o.get("kind") == "Node"]
    hot = [("items", i, *f) for i in nodes for f in _NODE_FIELDS] + [("items",), ("kind",)]
    for _ in range(draw(st.integers(1, 3))):
        doc = draw(_json_mutation(doc, hot, _HOSTILE_SCALARS))
    form = draw(st.sampled_from(["json", "json", "json1", "yaml", "text", "deep"]))
    if form == "deep":  # JSON nested past any recursion limit, which no encoder here can write
        n = draw(st.sampled_from([2000, 10**4, 10**5]))
        return seed, '{"kind": "List", "items": [' + _dump_json(first, None)[1:-1] + ", " + \
            "[" * n + "]" * n + "]}"
    if form == "yaml":
        try:
            text = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        except (yaml.YAMLError, RecursionError):
            text = _dump_json(doc, None)
    else:
        text = _dump_json(doc, 1 if form == "json1" else None)
        if form == "text":
            text = draw(_text_mutation(text))
    return seed, text


def _node_view(doc: Any) -> list[tuple[Any, ...]] | None:
    """What drift can judge of a snapshot, read independently of topogate's readers: per node
    its zone, the inventory pool it belongs to (by its pool label, else by the pool's labels),
    the values of that pool's labels, its taints and GPUs; None when a field of that is not
    what the API server serves (the snapshot is malformed)."""
    from topogate.live.nodes import GPU_RESOURCES, POOL_LABELS, dns_label, is_state_taint

    inv = yaml.safe_load(SNAPSHOT_INVENTORY.read_text())
    cluster = inv["clusters"][0]
    pools = {z["name"]: [(p["name"], p.get("labels", {})) for p in z.get("pools", [])] for z in cluster["zones"]}
    if not isinstance(doc, dict):
        return None
    items = doc.get("items") if "items" in doc else [doc]
    if not isinstance(items, list):
        return None
    view = []
    for item in items:
        if not isinstance(item, dict) or item.get("kind") != "Node":
            continue
        # null is absent in the API's JSON (a node without status has no allocatable GPUs)
        md = item.get("metadata")
        spec = {} if item.get("spec") is None else item["spec"]
        status = {} if item.get("status") is None else item["status"]
        if not isinstance(md, dict) or not isinstance(spec, dict) or not isinstance(status, dict):
            return None
        labels = md.get("labels") or {}
        taints = spec.get("taints") or []
        alloc = status.get("allocatable") or {}
        if not (isinstance(labels, dict) and isinstance(taints, list) and isinstance(alloc, dict)):
            return None
        if not all(isinstance(v, str) for v in labels.values()):
            return None
        zone = labels.get(cluster["zoneLabel"], "")
        mine = pools.get(zone, [])
        named = next((labels[k] for k in POOL_LABELS if labels.get(k)), None)
        pool = next((p for p in mine if named is not None and p[0] == dns_label(named)), None)
        if pool is None:
            fits = [p for p in mine if p[1] and all(labels.get(k) == v for k, v in p[1].items())]
            pool = max(fits, key=lambda p: (len(p[1]), p[0]), default=None)
        ts = []
        for t in taints:
            if not isinstance(t, dict) or not all(isinstance(t.get(f, ""), str) for f in ("key", "value", "effect")):
                return None
            if not is_state_taint(t.get("key", "")):
                ts.append((t.get("key", ""), t.get("value", ""), t.get("effect", "")))
        gpus = 0
        for r in GPU_RESOURCES:
            q = alloc.get(r, "0")
            if isinstance(q, int) and not isinstance(q, bool) and q >= 0:
                q = str(q)  # the same count, unquoted
            if not (isinstance(q, str) and q.isascii() and q.isdigit()):
                return None  # extended resources are whole numbers, served as strings
            gpus += int(q)
        chosen = (pool[0], tuple(labels.get(k, "") for k in sorted(pool[1]))) if pool else None
        view.append((zone, chosen, tuple(sorted(ts)), gpus))
    return sorted(view, key=repr)


def _parse_snapshot(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        docs = list(yaml.safe_load_all(text))
    except (yaml.YAMLError, RecursionError, ValueError):
        return None
    return docs[0] if len(docs) == 1 else None


def check_snapshot_property(tmp: Path, seed: str, text: str) -> None:
    """`drift --from-file` on the mutant: exit 0, 1 or 2; 2 is one line naming the file with
    :line:column; and "no drift" (0) only when the mutant is well-formed and says of the nodes
    what the no-drift seed says."""
    f = tmp / "snapshot.json"
    f.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        code, out, err = _timed("drift", str(SNAPSHOT_INVENTORY), "--from-file", str(f))
        assert code in (0, 1, 2), (code, err)
        if code == 2:
            lines = err.rstrip("\n").split("\n")
            assert len(lines) == 1 and lines[0].strip(), err
            if f.name in lines[0]:
                assert _POSITIONED.match(lines[0].split(f.name, 1)[1]), f"no :line:column: {lines[0]}"
        if code == 0:
            seed_view = _node_view(json.loads(SNAPSHOT_SEEDS["no-drift"].read_text()))
            view = _node_view(_parse_snapshot(text))
            assert view is not None, f"a malformed snapshot read as no drift: {out}"
            assert view == seed_view, f"nodes unlike the inventory's read as no drift: {out}"
    except Exception as e:
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            _keep(f"snapshot-{seed}", text, e)
        raise


# ---------------------------------------------------------------- Cost Explorer answers
#
# The GetCostAndUsage pages of one query chain (the audit fixture's two AWS clusters share one
# tag key), served by moto_server on 127.0.0.1 in order, one per request. Property: exit 0, 1,
# 75 or 78; no traceback; and an answer that is not a well-formed chain (judged below, on its
# own reading of the page format) is exit 75, never "within budget" nor a verdict at all.

CE_INVENTORY = ROOT / "fixtures" / "audit" / "inventory.yaml"
CE_EMPTY = ROOT / "fixtures" / "audit" / "empty"
CE_WINDOW = ("2026-11-24", "2026-11-27")
CE_TAG = "topogate.dev/cluster"
_CE_UT = "DataTransfer-Regional-Bytes"
_CE_BUDGETS = {"gpu-east": Decimal(5), "gpu-west": Decimal(10)}
_CE_SCALARS = st.sampled_from([
    "0", "1.00", "4.99", "5.01", "-0", "-1", "NaN", "nan", "-Infinity", "Infinity", "1e9", "1e10",
    "1e9000", "1" * 70, "0.0000001", "1E+2", " 1", "1,5", "", "0x10", 5, 5.5, float("nan"), None,
    True, [], {}, "USD", "EUR", "GB", "2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27",
    "2026-02-30", "2026-11-24T00:00:00Z", f"{CE_TAG}$gpu-east", f"{CE_TAG}$gpu-west", f"{CE_TAG}$",
    _CE_UT, "t1", "t2", "x" * 9000, "a\nb"])


def _ce_result(day: str, groups: list[tuple[str, str]]) -> dict[str, Any]:
    import datetime as dt

    end = (dt.date.fromisoformat(day) + dt.timedelta(days=1)).isoformat()
    return {"TimePeriod": {"Start": day, "End": end}, "Total": {}, "Estimated": False,
            "Groups": [{"Keys": [f"{CE_TAG}${tag}", _CE_UT],
                        "Metrics": {"UnblendedCost": {"Amount": usd, "Unit": "USD"},
                                    "UsageQuantity": {"Amount": "100", "Unit": "GB"}}}
                       for tag, usd in groups]}


@st.composite
def ce_mutant(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A chain of pages answering the window's three days, split and then mutated."""
    amounts = st.sampled_from(["0", "1.00", "2.50", "4.99", "5.01", "9.99", "12.00"])
    results = [_ce_result(day, [(t, draw(amounts)) for t in draw(st.lists(
        st.sampled_from(["gpu-east", "gpu-west"]), max_size=2, unique=True))])
        for day in ("2026-11-24", "2026-11-25", "2026-11-26")]
    cuts = sorted(draw(st.lists(st.integers(1, 2), max_size=2, unique=True)))
    bounds = [0, *cuts, 3]
    pages: list[dict[str, Any]] = [{"ResultsByTime": results[a:b], "DimensionValueAttributes": [],
                                    "GroupDefinitions": [{"Type": "TAG", "Key": CE_TAG},
                                                         {"Type": "DIMENSION", "Key": "USAGE_TYPE"}]}
                                   for a, b in zip(bounds, bounds[1:], strict=False)]
    for i, p in enumerate(pages[:-1]):
        p["NextPageToken"] = f"t{i + 1}"
    hot: list[tuple[Any, ...]] = [(i, "NextPageToken") for i in range(len(pages))]
    for i, p in enumerate(pages):
        hot.append((i, "ResultsByTime"))
        for j, r in enumerate(p["ResultsByTime"]):
            hot += [(i, "ResultsByTime", j, *f) for f in [
                ("TimePeriod", "Start"), ("TimePeriod", "End"), ("Estimated",), ("Groups",), ("TimePeriod",)]]
            for k, _ in enumerate(r["Groups"]):
                g = (i, "ResultsByTime", j, "Groups", k)
                hot += [(*g, *f) for f in [("Keys",), ("Keys", 0), ("Keys", 1), ("Metrics",),
                                           ("Metrics", "UnblendedCost", "Amount"),
                                           ("Metrics", "UnblendedCost", "Unit"),
                                           ("Metrics", "UnblendedCost"),
                                           ("Metrics", "UsageQuantity", "Amount")]]
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["json"] * 4 + ["drop-page", "extra-page", "empty", "dup-page"]))
        if how == "drop-page" and len(pages) > 1:
            del pages[draw(st.integers(0, len(pages) - 1))]
        elif how == "extra-page":
            pages[-1]["NextPageToken"] = f"extra{len(pages)}"
            pages.append({"ResultsByTime": draw(st.sampled_from([[], results[:1]]))})
        elif how == "empty":
            pages[draw(st.integers(0, len(pages) - 1))]["ResultsByTime"] = []
        elif how == "dup-page":
            pages.append(copy.deepcopy(pages[-1]))
        else:
            pages = draw(_json_mutation(pages, hot, _CE_SCALARS))
        if not isinstance(pages, list) or not pages:
            pages = [{"ResultsByTime": []}]
    return pages


# Page fields the audit does not read, as the seed pages carry them.
_CE_PAGE_EXTRAS = {"DimensionValueAttributes": [], "GroupDefinitions": [
    {"Type": "TAG", "Key": CE_TAG}, {"Type": "DIMENSION", "Key": "USAGE_TYPE"}]}


def _ce_amount(raw: Any, bound: Decimal) -> Decimal | str:
    """A metric's amount, "malformed", or "unknown" (past a plausibility bound topogate may
    or may not draw, or a text too long to be one)."""
    if not isinstance(raw, str):
        return "malformed"
    if len(raw) > 64:
        return "unknown"
    try:
        v = Decimal(raw)
    except InvalidOperation:
        return "malformed"
    if not v.is_finite() or v < 0:
        return "malformed"
    return "unknown" if v > bound else v


def ce_verdict(pages: list[Any]) -> str:
    """"malformed", "unknown" (topogate may judge or refuse), "within" or "over": the chain as
    the audit reads it, following NextPageToken from the first page."""
    import datetime as dt

    window = [dt.date(2026, 11, 24) + dt.timedelta(days=i) for i in range(3)]
    spend: dict[tuple[str, dt.date], Decimal] = {}
    answered: list[dt.date] = []
    tokens: list[str] = []
    i, unknown = 0, False
    while True:
        if i >= len(pages):
            return "unknown"  # a token past the queued pages: moto answers on its own
        page = pages[i]
        if not isinstance(page, dict) or not isinstance(page.get("ResultsByTime"), list):
            return "malformed"
        # Fields the audit does not read but botocore's model types: a wrong one may fail
        # botocore's parser first (exit 75 too, or read fine): either is right.
        unknown = unknown or any(page.get(k, v) != v for k, v in _CE_PAGE_EXTRAS.items())
        for r in page["ResultsByTime"]:
            if not isinstance(r, dict) or not isinstance(r.get("TimePeriod"), dict):
                return "malformed"
            unknown = unknown or r.get("Total", {}) != {}
            start, end = r["TimePeriod"].get("Start"), r["TimePeriod"].get("End")
            try:
                day, stop = dt.date.fromisoformat(start), dt.date.fromisoformat(end)
            except (TypeError, ValueError):
                return "malformed"
            if len(start) != 10 or len(end) != 10 or stop != day + dt.timedelta(days=1) or day not in window:
                return "malformed"
            # botocore drops a member whose value is null: `Estimated: null` reads as absent.
            est = r.get("Estimated")
            if not (est is None or isinstance(est, bool)) or not isinstance(r.get("Groups"), list):
                return "malformed"
            answered.append(day)
            for g in r["Groups"]:
                if not isinstance(g, dict) or not isinstance(g.get("Keys"), list) \
                        or not all(isinstance(k, str) for k in g["Keys"]):
                    return "malformed"
                keys = g["Keys"]
                tags = [k for k in keys if k.startswith(CE_TAG + "$")]
                if len(keys) != 2 or len(tags) != 1:
                    return "malformed"
                if any(len(k) > 1024 or any(ord(c) < 32 for c in k) for k in keys):
                    unknown = True
                m = g.get("Metrics")
                if not isinstance(m, dict) or not all(isinstance(m.get(n), dict) for n in ("UnblendedCost", "UsageQuantity")):
                    return "malformed"
                unknown = unknown or not all(isinstance(v, dict) for v in m.values())
                usd = _ce_amount(m["UnblendedCost"].get("Amount"), Decimal("1e9"))
                qty = _ce_amount(m["UsageQuantity"].get("Amount"), Decimal("1e12"))
                if "malformed" in (usd, qty) or m["UnblendedCost"].get("Unit") != "USD" \
                        or not isinstance(m["UsageQuantity"].get("Unit"), str):
                    return "malformed"
                if isinstance(usd, str) or isinstance(qty, str):
                    unknown = True
                    continue
                ut = keys[1] if keys[0] == tags[0] else keys[0]
                cluster = tags[0][len(CE_TAG) + 1:]
                if cluster not in _CE_BUDGETS or ut != _CE_UT:
                    unknown = True  # a row of no cluster, or of a usage type the audit may not count
                spend[(cluster, day)] = spend.get((cluster, day), Decimal(0)) + usd
        token = page.get("NextPageToken")
        if token is None:
            break
        if not isinstance(token, str):
            return "malformed"
        if token in tokens or len(token) > 8192 or not token:
            return "unknown"
        tokens.append(token)
        i += 1
    if i + 1 < len(pages):
        unknown = True  # pages queued and never asked for stay in moto's queue: harmless here
    if len(answered) != len(set(answered)):
        return "unknown"  # a day answered twice: Cost Explorer never does
    if set(answered) != set(window):
        return "malformed"
    if unknown:
        return "unknown"
    over = any(v > _CE_BUDGETS[c] for (c, _), v in spend.items())
    return "over" if over else "within"


def check_ce_property(moto: Any, pages: list[Any]) -> None:
    """`audit egress` against the chain: malformed is exit 75 (one line), within is 0, over 1."""
    text = json.dumps(pages, allow_nan=True)
    try:
        moto.reset()
        moto.seed(*pages)
        code, out, err = _timed("audit", "egress", str(CE_INVENTORY), str(CE_EMPTY), "--start", CE_WINDOW[0],
                                "--end", CE_WINDOW[1], "--max-attempts", "1")
        assert code in (0, 1, 75, 78), (code, err)
        if code in (75, 78):
            assert out == "" and len(err.strip().splitlines()) == 1, err
        verdict = ce_verdict(pages)
        want = {"malformed": (75,), "within": (0,), "over": (1,), "unknown": (0, 1, 75, 78)}[verdict]
        assert code in want, f"a {verdict} answer gave exit {code}: {(out + err)[-400:]}"
    except Exception as e:
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            _keep("costexplorer", text, e)
        raise


# ---------------------------------------------------------------- trace specs
#
# `trace`'s --from, --to and --port are typed by a person or pasted from a log: mutated valid
# specs, long ones, unicode and control characters. Property: exit 0, 1 or 2, one line on 2,
# no traceback, a few seconds at most.

_ENDPOINTS = ["ml-demo/PyTorchJob/train/Worker", "ml-demo/PyTorchJob/train/Master", "ml-demo/PyTorchJob/train",
              "ml-demo/PyTorchJob/train/Worker/x", "ml-demo/Group/a/Deployment/b", "ml-demo:app=x",
              "ml-demo:a=b,c=d", "ml-demo:", ":a=b", "world", "kube-apiserver", "host", "cluster",
              "10.0.0.0/8", "0.0.0.0/0", "::/0", "fe80::1%eth0/64", "10.0.0.1", "fqdn:example.com",
              "fqdn:*.example.com", "fqdn:", "fqdn:" + "a." * 200, "a" * 300 + "/PyTorchJob/x",
              "/".join(["a"] * 5000), "ns/Kind/" + "n" * 100000]
_PORTS = ["8080", "8080/udp", "8080/TCP", "metrics", "0", "65535", "65536", "²", "80/tcp/udp", "", "/TCP",
          "1" * 5000, "-1", "+80", " 80 ", "0x50", "a" * 16, "http", "80/", "８０"]


@st.composite
def trace_mutant(draw: st.DrawFn) -> tuple[str, str, str | None]:
    def spec() -> str:
        text = draw(st.one_of(st.sampled_from(_ENDPOINTS), st.text(max_size=30)))
        for _ in range(draw(st.integers(0, 3))):
            text = draw(_text_mutation(text))
        return text

    src, dst = spec(), spec()
    port = draw(st.one_of(st.none(), st.sampled_from(_PORTS), st.text(max_size=12)))
    if port is not None and draw(st.booleans()):
        port = draw(_text_mutation(port))
    return src, dst, port


def check_trace_property(sandbox: Sandbox, src: str, dst: str, port: str | None) -> None:
    """trace over the lab's policies and base with the mutated endpoints and port."""
    case = json.dumps([src, dst, port], ensure_ascii=False)
    args = ["trace", str(ROOT / "fixtures" / "trace" / "lab"), str(sandbox.repo / "bases" / "train"),
            "--inventory", str(sandbox.repo / "inventory.yaml"), f"--from={src}", f"--to={dst}"]
    if port is not None:
        args.append(f"--port={port}")
    try:
        code, _, err = _timed(*args)
        assert code in (0, 1, 2), (code, err)
        if code == 2:
            lines = err.rstrip("\n").split("\n")
            assert len(lines) == 1 and lines[0].strip(), err
    except Exception as e:
        if os.environ.get("TOPOGATE_FUZZ_SAVE") == "1":
            _keep("trace", case, e)
        raise
