"""One kustomization root built as parts side by side, where kustomize's own algorithm says the
parts' outputs merged are the root's output, byte for byte.

`kubectl kustomize` uses about one core, and its time grows faster than the objects it builds
(each object it accumulates is checked against every id before it). A root that only lists
directories, as the generated `clusters/<name>/` does, is by kustomize's algorithm
(api/internal/target/kusttarget.go: `makeCustomizedResMap`) what each listed directory
accumulates, appended, followed by steps run once at the top over all of it. Building the
directories in a few parts, each through a kustomization that lists its share, and merging, is
the same build wherever none of those top-level steps can reach from one part into another:

- `resmap.Append`'s id check: no object of one part has the id of an object of another
  (checked on the outputs, with kustomize's effective namespace; any doubt counts as equal);
- `addHashesToNames` (the HashTransformer) renames generated objects and those annotated to be
  hashed: no generator, and none of `FORBIDDEN_TEXT` in any file the tree reads (which also
  keeps out kustomize's internal annotations, a rename carried in from elsewhere);
- `FixBackReferences` (filters/nameref) points references at renamed objects: nothing in the
  tree may rename (only the kustomization fields of `SAFE_FIELDS`; a JSON patch must not touch
  metadata.name, metadata.namespace, kind or apiVersion; no patch option allowing a name or kind
  change). A reference by name is then left as it is, except one kustomize reaches as a mapping
  (a RoleBinding's `subjects`, a webhook's `clientConfig.service`, a Node's `configSource`),
  which takes the namespace of the object it names: no string of such a referrer may name an
  object of that kind in another part. A reference written as a mapping where Kubernetes takes
  a name (an object the API server would refuse) is not looked at;
- `ResolveVars`: no `vars` in the tree;
- `IgnoreLocal` drops local-config objects after the steps above saw them: none in the tree;
- the default legacy order (builtins/SortOrderTransformer.go, `legacyIDSorter`): applied
  again to the merged documents, and confirmed on the parsed objects (`confirm`).

What kustomize refuses at the root itself is kept too: a root (or the directory a wrapping root
lists) with two kustomization files, an entry that is no string to kustomize's YAML (`yes`,
`1`), a directory of the tree that holds the root (a cycle) are built whole, and refused there.

Whatever else happens (a part fails, an id is shared, a document looks other than kustomize
writes it), the root is built whole and that build is the answer: a split never says what the
whole build would not.
"""

from __future__ import annotations

import dataclasses
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import yaml

from topogate.k8s.kustomization import KUSTOMIZE_API, Kustomization, field
from topogate.safeio.saferead import InputError, documents
from topogate.sources.split_docs import Ids, merge, scan

# The root's kustomization may hold only these: then it appends its directories and nothing else.
ROOT_FIELDS = frozenset({"apiVersion", "kind", "resources"})
# Fields of the kustomizations below the root that rename nothing and are applied where they
# are written (not at the top of the build).
SAFE_FIELDS = frozenset({
    "apiVersion", "kind", "metadata", "resources", "bases", "namespace", "commonLabels", "labels",
    "commonAnnotations", "images", "replicas", "patches", "patchesStrategicMerge",
    "patchesJson6902", "sortOptions"})
# Text that, anywhere in a file the tree reads, sends it to a whole build: the annotations by
# which a build renames (kustomize.config.k8s.io/needs-hash, and kustomize's own
# internal.config.kubernetes.io/ ones: needsHashSuffix, previousNames, allowNameChange...) and
# local-config, whose objects take part in the top-level steps before IgnoreLocal drops them.
# Matched loosely: any doubt builds whole.
FORBIDDEN_TEXT = ("needs-hash", "internal.config.kubernetes.io", "local-config")


def forbidden(text: str, nodes: Iterable[Any] = ()) -> bool:
    """Whether a file's text holds what FORBIDDEN_TEXT names. A backslash may spell it with an
    escape (`kubernetes\\x2Eio`): then the values its documents (`nodes`, composed) decode to
    are looked at too, keys included."""
    if any(t in text for t in FORBIDDEN_TEXT):
        return True
    return "\\" in text and any(t in v for n in nodes for v in _node_strings(n) for t in FORBIDDEN_TEXT)


def _node_strings(node: Any) -> Iterable[str]:
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, yaml.ScalarNode):
            yield n.value
        elif isinstance(n, yaml.MappingNode):
            stack.extend(x for pair in n.value for x in pair)
        elif isinstance(n, yaml.SequenceNode):
            stack.extend(n.value)

# --- the decision: a pure function of what check_tree read -----------------------------------

@dataclass(frozen=True)
class Top:
    """What the decision reads of the root, and of the one directory a wrapping root lists."""

    real: str  # its real path
    kustomization: Kustomization
    kfiles: int  # kustomization files in the directory (kustomize refuses more than one)
    listed: tuple[str, ...]  # the directories it lists (resources/bases), as written, in order
    lists_file: bool  # resources/bases also name a file
    # its patch files that lie below it and are plain (`plain_patch`): path as written -> text
    patch_files: Mapping[str, str]


@dataclass(frozen=True)
class Facts:
    """What check_tree met that the decision reads (`decide`'s arguments), kept with the tree
    so the decision is taken where the builds are planned, not inside the safety walk."""

    tops: tuple[Top, ...]
    order: tuple[str, ...]
    keeps: bool
    # patches whose content check waits (sources.deferred): `keeps` holds only if they keep ids
    unsure: tuple[str, ...] = ()


@dataclass(frozen=True)
class Split:
    """How a root is built in parts: the directories, as the kustomization of `parts_from`
    (None: the root itself) lists them, and the wrapping root's patches each part applies."""

    parts: tuple[str, ...]
    parts_from: str | None = None
    patches: tuple[Patch, ...] = ()


def decide(tops: Sequence[Top], order: Sequence[str], keeps: bool) -> Split | None:
    """Whether, and how, the root may be built in parts: `tops` are the root's facts and, when
    it lists a directory first, that directory's; `order` the real path of every directory of
    the tree in walk order (the root first); `keeps` whether every kustomization below the
    root, and every file the tree reads, keeps ids (`dir_keeps`, `forbidden`,
    `patch_keeps_ids`). None: build it whole."""
    if not keeps or not tops:
        return None
    top = tops[0]
    composition = _composition(top)
    wrapper = _wrapper(top)
    if composition:
        split, used = Split(composition), tops[:1]
    elif wrapper is not None and len(tops) > 1 and _composition(tops[1]):
        split, used = Split(_composition(tops[1]), tops[1].real, wrapper), tops[:2]
    else:
        return None
    # kustomize refuses a directory with two kustomization files; the parts never read these
    if any(t.kfiles != 1 for t in used):
        return None
    # kustomize refuses a directory that holds one it came from ("cycle detected"): the parts,
    # which come from elsewhere, would not. Such a tree is built whole, which refuses it.
    if len(split.parts) < 2 or any(_holds(d, t.real) for d in order[1:] for t in used if d != t.real):
        return None
    return split


def _holds(d: str, t: str) -> bool:
    """Whether directory d (a real path) is t or above it."""
    return d == t or t.startswith(d.rstrip("/") + "/")


def _composition(t: Top) -> tuple[str, ...]:
    """The directories a kustomization lists when it lists only directories, each once, and
    does nothing else."""
    if not root_parts(t.kustomization) or t.lists_file or len(t.listed) != len(set(t.listed)):
        return ()
    return t.listed


def _wrapper(t: Top) -> tuple[Patch, ...] | None:
    """A wrapping root's patches with their files' text, or None."""
    patches = wrapper_patches(t.kustomization)
    if patches is None or len(t.listed) != 1 or t.lists_file:
        return None
    if not all(p.path is None or p.path in t.patch_files for p in patches):
        return None
    return tuple(p if p.path is None else dataclasses.replace(p, text=t.patch_files[p.path]) for p in patches)


def dir_keeps(k: Kustomization, text: str, root: bool) -> bool:
    """Whether a kustomization's own fields and text keep ids: below the root it may only use
    SAFE_FIELDS without renaming options; the root's fields decide through `decide`. Its files'
    texts are `forbidden`'s and `patch_keeps_ids`'s."""
    return ((root or keeps_ids(k)) and not forbidden(text, [k.node]) and inline_patches_keep_ids(k))


def root_parts(k: Kustomization) -> bool:
    """Whether a root kustomization only appends what it lists, each entry a string as
    kustomize's YAML reads it (`yes` or `1` are not: it refuses them)."""
    if not set(k.fields) <= ROOT_FIELDS:
        return False
    kind, api = _scalar(k.get("kind")), _scalar(k.get("apiVersion"))
    listed = k.get("resources")
    if not isinstance(listed, yaml.SequenceNode) or not all(_string(n) for n in listed.value):
        return False
    return kind in (None, "Kustomization") and api in (None, KUSTOMIZE_API)


def _string(node: Any) -> bool:
    """A string to every YAML reader (`_text`) that, unquoted, is shaped like a path (PyYAML
    and the go-yaml under kustomize disagree on some plain words: `y`, `1e3`, `0o17`)."""
    return _text(node) and (node.style in ("'", '"') or bool(_PATH_LIKE.match(node.value)))


def _text(node: Any) -> bool:
    """A scalar every YAML reader takes as a string, of any shape (a selector's value): quoted,
    or plain and neither a null, boolean or number word nor starting like a number."""
    if not isinstance(node, yaml.ScalarNode) or node.tag != "tag:yaml.org,2002:str":
        return False
    return node.style in ("'", '"') or (node.value.lower() not in _YAML_WORDS
                                        and not _NUMBER_LIKE.match(node.value))


_NUMBER_LIKE = re.compile(r"^[-+]?\.?[0-9]|^[-+]?\.(inf|nan)")
_PATH_LIKE = re.compile(r"^(?:\.\.?/)*[A-Za-z_][A-Za-z0-9._-]*(?:/[A-Za-z0-9._-]+)*/?$")
_YAML_WORDS = frozenset({"y", "yes", "n", "no", "true", "false", "on", "off", "null", "nan", "inf"})


_WRAPPER_FIELDS = frozenset({"apiVersion", "kind", "resources", "patches"})
_SELECTOR_KEYS = frozenset({"group", "version", "kind", "name", "namespace", "labelSelector",
                            "annotationSelector"})


@dataclass(frozen=True)
class Patch:
    """A `patches` entry of a wrapping root, to repeat in each part: the patch as written (file
    or inline) and its target selector."""

    path: str | None  # the file as written, or None when inline
    text: str  # the patch: inline, or the file's content (filled in by the caller that read it)
    target: tuple[tuple[str, str], ...]


def wrapper_patches(k: Kustomization) -> tuple[Patch, ...] | None:
    """A root that lists one directory and patches what it selects by target, as the generated
    `argocd/clusters/<name>/` does (sync waves): its patches, or None for any other root.

    A targeted patch applies to each object it selects, on its own (builtins/PatchTransformer.go:
    `Select`, then one patch per object), so each part may apply it to its share; an entry
    without a target names one object, which all parts but one lack, and options may rename."""
    if not set(k.fields) <= _WRAPPER_FIELDS:
        return None
    listed, items = k.get("resources"), k.get("patches")
    if not isinstance(listed, yaml.SequenceNode) or len(listed.value) != 1 or not _string(listed.value[0]):
        return None
    kind, api = _scalar(k.get("kind")), _scalar(k.get("apiVersion"))
    if kind not in (None, "Kustomization") or api not in (None, KUSTOMIZE_API):
        return None
    if not isinstance(items, yaml.SequenceNode):
        return None
    out = []
    for item in items.value:
        if not isinstance(item, yaml.MappingNode):
            return None
        keys = {_scalar(key) for key, _ in item.value}
        target = field(item, "target")
        if not keys <= {"path", "patch", "target"} or not isinstance(target, yaml.MappingNode):
            return None
        if not all(_text(key) and _text(v) for key, v in target.value):
            return None
        selector = [(_scalar(key), _scalar(v)) for key, v in target.value]
        if any(key not in _SELECTOR_KEYS for key, _ in selector):
            return None
        path_node, text_node = field(item, "path"), field(item, "patch")
        if (path_node is None) == (text_node is None) or not _string(path_node or text_node):
            return None
        path, text = _scalar(path_node), _scalar(text_node)
        if text is not None and not plain_patch(text):
            return None
        out.append(Patch(path, text or "", tuple((str(key), str(v)) for key, v in selector)))
    return tuple(out)


def plain_patch(text: str) -> bool:
    """A wrapping root's patch, to repeat in each part: it may not delete or replace whole
    objects (`$patch`: the root's id check saw them before it ran, the parts' merge would not),
    nor hold a backslash (an escape PyYAML and kustomize's reader might decode apart)."""
    return "$patch" not in text and "\\" not in text


def keeps_ids(k: Kustomization) -> bool:
    """Whether a kustomization below the root renames nothing by its own fields (its patches'
    contents are `patch_keeps_ids`'s)."""
    if not set(k.fields) <= SAFE_FIELDS:
        return False
    if _scalar(k.get("kind")) not in (None, "Kustomization"):
        return False
    for item in k.items("patches"):
        options = field(item, "options")
        for key in ("allowNameChange", "allowKindChange"):
            if _scalar(field(options, key)) not in (None, "false"):
                return False
    return True


def inline_patches_keep_ids(k: Kustomization) -> bool:
    """Whether the `patch:` texts written inline in a kustomization's `patches` and
    `patchesJson6902` keep ids (an inline `patchesStrategicMerge` entry is a strategic merge
    patch: it does). One that is not YAML is kustomize's to report (positions would be the
    patch text's, not the kustomization's): the tree is built whole."""
    for key in ("patches", "patchesJson6902"):
        for item in k.items(key):
            text = _scalar(field(item, "patch"))
            if text is None:
                continue
            try:
                if not patch_keeps_ids([n for _, n, _ in documents(text, k.shown, construct=False)]):
                    return False
            except InputError:
                return False
    return True


def patch_keeps_ids(nodes: Iterable[Any]) -> bool:
    """Whether a patch (its documents, composed) leaves every object's id as it was: a strategic
    merge patch does unless an option allows it (`keeps_ids`); a JSON 6902 patch (a sequence of
    operations) unless an operation's path or from reaches the name, namespace, kind or
    apiVersion."""
    for node in nodes:
        if isinstance(node, yaml.MappingNode):
            continue
        if not isinstance(node, yaml.SequenceNode):
            return False
        for op in node.value:
            # json-patch decodes an operation into a Go map (exact keys), after sigs.k8s.io/yaml
            # expanded any merge key: a `from` behind `<<` is read, so such an operation is doubt
            if not isinstance(op, yaml.MappingNode) or any(_scalar(key) == "<<" for key, _ in op.value):
                return False
            path = _scalar(field(op, "path"))
            if path is None or _touches_id(path):
                return False
            source = field(op, "from")
            if source is not None and (_scalar(source) is None or _touches_id(_scalar(source) or "")):
                return False
    return True


def _touches_id(pointer: str) -> bool:
    if not pointer.startswith("/"):
        return True  # the whole document, or no JSON pointer kustomize would take
    tokens = [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]
    if tokens[0] in ("kind", "apiVersion", ""):
        return True
    if tokens[0] == "metadata":
        return len(tokens) == 1 or tokens[1] in ("name", "namespace", "")
    return False


def _scalar(node: Any) -> str | None:
    return node.value if isinstance(node, yaml.ScalarNode) else None


# --- the build -------------------------------------------------------------------------------

def shares(entries: Sequence[str], n: int) -> list[list[str]]:
    """`entries` in n runs of consecutive entries, as even as can be."""
    n = max(1, min(n, len(entries)))
    size, extra = divmod(len(entries), n)
    out, start = [], 0
    for i in range(n):
        end = start + size + (i < extra)
        out.append(list(entries[start:end]))
        start = end
    return out


def build_in_parts(base: str, entries: Sequence[str], n: int, run: Callable[[str], tuple[bool, str]],
                   patches: Sequence[Patch] = ()) -> tuple[str, Ids] | None:
    """The output of the root whose directories are `entries` (as written in the kustomization
    of `base`, a real path), built in n parts at once, each also applying a wrapping root's
    `patches` (a patch file copied beside the part, so kustomize loads the same bytes the same
    way); `run(dir)` is one `kubectl kustomize dir` (ok, stdout). None when any part fails or
    the merge cannot stand: build the root whole."""
    with tempfile.TemporaryDirectory(prefix="topogate-parts-") as scratch:
        scratch = os.path.realpath(scratch)  # kustomize joins the entries to its root's real path
        dirs = []
        for i, share in enumerate(shares(entries, n)):
            d = os.path.join(scratch, f"part-{i}")
            os.mkdir(d)
            # kustomize joins a listed directory to the listing kustomization's directory and
            # cleans the result lexically (filepath.Join): the same directory, from here, is
            # the cleaned join made relative. It refuses absolute paths.
            listed = [os.path.relpath(os.path.normpath(os.path.join(base, e)), d) for e in share]
            body: dict[str, Any] = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization",
                                    "resources": listed}
            if patches:
                body["patches"] = [_patch_entry(d, j, p) for j, p in enumerate(patches)]
            with open(os.path.join(d, "kustomization.yaml"), "w", encoding="utf-8") as f:
                yaml.safe_dump(body, f, sort_keys=False)
            dirs.append(d)
        with ThreadPoolExecutor(max_workers=len(dirs), thread_name_prefix="kustomize-part") as pool:
            results = list(pool.map(run, dirs))
    if not all(ok for ok, _ in results):
        return None
    parts = []
    for i, (_, text) in enumerate(results):
        docs = scan(text, i)
        if docs is None:
            return None
        parts.append(docs)
    return merge(parts)


def _patch_entry(d: str, j: int, p: Patch) -> dict[str, Any]:
    """A wrapping root's patch as a file beside the part: kustomize reads an inline patch as its
    text trimmed (builtins/PatchTransformer.go) and a file's as it is, so each is written as what
    kustomize would read, never dumped again as YAML."""
    name = f"patch-{j}.yaml"
    with open(os.path.join(d, name), "w", encoding="utf-8") as f:
        f.write(p.text if p.path is not None else p.text.strip())
    return {"path": name, "target": dict(p.target)}


__all__ = ["FORBIDDEN_TEXT", "Facts", "Patch", "Split", "Top", "build_in_parts", "decide",
           "dir_keeps", "forbidden", "patch_keeps_ids", "plain_patch", "shares"]
