"""A kustomization as kustomize reads it, and nothing it does not.

kustomize (sigs.k8s.io/kustomize/api v0.21.1, in kubectl 1.37) reads a kustomization file in
`types.Kustomization.Unmarshal`: sigs.k8s.io/yaml turns the YAML into JSON (go-yaml v2: the
merge key `<<` copies the fields of the mapping it names), then Go's encoding/json decodes that
into the Go types with unknown fields refused. encoding/json matches a key to a field by its
exact name first and then without regard to case: ASCII letters fold, and beyond ASCII each
rune folds to the least rune of its unicode.SimpleFold orbit, so the Kelvin sign `K` is `k` and
the long s `ſ` is `s` (dotted `İ` and dotless `ı` fold to nothing else). `Files:` is `files`,
`PATH:` is `path`, and `<<: *x` brings in fields no line shows. Field names inside a Go map
(`commonLabels`, `openapi`) are keys, matched exactly. The builtin generator and transformer
configs (files under `generators:`/`transformers:`) are decoded the same way, without the
refusal of unknown fields (their Config methods, sigs.k8s.io/yaml.Unmarshal).

topogate reads each field in its one canonical spelling only. `read` refuses, at its line and
column and all at once, every key kustomize would take as a field under another spelling and
every merge key anywhere in the file; what it accepts, an exact-key lookup (`field`) reads as
kustomize does. The types below are kustomize's own (api/types, kyaml/resid, the builtin
plugins' config structs), field for field; a key that names no field is left to kustomize,
which refuses it in a kustomization and ignores it in a config.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, TypeAlias

import yaml

from topogate.core.position import Position
from topogate.safeio.saferead import InputError, InputErrors
from topogate.safeio.saferead import nodes as composed

# A field's type: a scalar, a Go map (keys matched exactly), anything (not looked into), a
# struct (its name in STRUCTS) or a list of one of those.
STRING, BOOL, INT, MAP, ANY = "string", "bool", "int", "map", "any"
Type: TypeAlias = "str | tuple[str, Type]"


def _list(t: Type) -> Type:
    return ("list", t)


_GVK: dict[str, Type] = {"group": STRING, "version": STRING, "kind": STRING}  # resid.Gvk
_RESID: dict[str, Type] = {**_GVK, "name": STRING, "namespace": STRING}  # resid.ResId
_FIELD_SPECS: Type = _list("FieldSpec")
# types.GeneratorArgs with its inline KvPairSources: what ConfigMapArgs and SecretArgs hold.
_GENERATOR_ARGS: dict[str, Type] = {
    "namespace": STRING, "name": STRING, "behavior": STRING, "literals": _list(STRING),
    "files": _list(STRING), "envs": _list(STRING), "env": STRING, "options": "GeneratorOptions"}
_HELM_GLOBALS: dict[str, Type] = {"chartHome": STRING, "configHome": STRING}
_HELM_CHART: dict[str, Type] = {
    "name": STRING, "version": STRING, "repo": STRING, "releaseName": STRING, "namespace": STRING,
    "additionalValuesFiles": _list(STRING), "valuesFile": STRING, "valuesInline": ANY,
    "valuesMerge": STRING, "includeCRDs": BOOL, "skipHooks": BOOL, "apiVersions": _list(STRING),
    "kubeVersion": STRING, "nameTemplate": STRING, "skipTests": BOOL, "debug": BOOL, "devel": BOOL}
_PATCH: dict[str, Type] = {"path": STRING, "patch": STRING, "target": "Selector", "options": "PatchArgs"}
_REPLACEMENT: dict[str, Type] = {"source": "SourceSelector", "targets": _list("TargetSelector"),
                                 "sourceValue": STRING}

STRUCTS: Mapping[str, Mapping[str, Type]] = MappingProxyType({
    "Kustomization": {
        "kind": STRING, "apiVersion": STRING, "metadata": "ObjectMeta", "openapi": MAP,
        "namePrefix": STRING, "nameSuffix": STRING, "namespace": STRING, "commonLabels": MAP,
        "labels": _list("Label"), "commonAnnotations": MAP,
        "patchesStrategicMerge": _list(STRING), "patchesJson6902": _list("Patch"),
        "patches": _list("Patch"), "images": _list("Image"), "imageTags": _list("Image"),
        "replacements": _list("ReplacementField"), "replicas": _list("Replica"),
        "vars": _list("Var"), "sortOptions": "SortOptions", "resources": _list(STRING),
        "components": _list(STRING), "crds": _list(STRING), "bases": _list(STRING),
        "configMapGenerator": _list("ConfigMapArgs"), "secretGenerator": _list("SecretArgs"),
        "helmGlobals": "HelmGlobals", "helmCharts": _list("HelmChart"),
        "helmChartInflationGenerator": _list("HelmChartArgs"),
        "generatorOptions": "GeneratorOptions", "configurations": _list(STRING),
        "generators": _list(STRING), "transformers": _list(STRING), "validators": _list(STRING),
        "buildMetadata": _list(STRING)},
    "ObjectMeta": {"name": STRING, "namespace": STRING, "labels": MAP, "annotations": MAP},
    "Label": {"pairs": MAP, "includeSelectors": BOOL, "includeTemplates": BOOL, "fields": _FIELD_SPECS},
    "FieldSpec": {**_GVK, "path": STRING, "create": BOOL},
    "Patch": _PATCH,
    "PatchArgs": {"allowNameChange": BOOL, "allowKindChange": BOOL},
    "Selector": {**_RESID, "annotationSelector": STRING, "labelSelector": STRING},
    "Image": {"name": STRING, "newName": STRING, "tagSuffix": STRING, "newTag": STRING, "digest": STRING},
    "ReplacementField": {**_REPLACEMENT, "path": STRING},
    "Replacement": _REPLACEMENT,
    "SourceSelector": {**_RESID, "fieldPath": STRING, "options": "FieldOptions"},
    "TargetSelector": {"select": "Selector", "reject": _list("Selector"), "fieldPaths": _list(STRING),
                       "options": "FieldOptions"},
    "FieldOptions": {"delimiter": STRING, "index": INT, "encoding": STRING, "create": BOOL},
    "Replica": {"name": STRING, "count": INT},
    "Var": {"name": STRING, "objref": "VarTarget", "fieldref": "FieldSelector"},
    "VarTarget": {"apiVersion": STRING, **_GVK, "name": STRING, "namespace": STRING},
    "FieldSelector": {"fieldPath": STRING},
    "SortOptions": {"order": STRING, "legacySortOptions": "LegacySortOptions"},
    "LegacySortOptions": {"orderFirst": _list(STRING), "orderLast": _list(STRING)},
    "ConfigMapArgs": _GENERATOR_ARGS,
    "SecretArgs": {**_GENERATOR_ARGS, "type": STRING},
    "GeneratorOptions": {"labels": MAP, "annotations": MAP, "disableNameSuffixHash": BOOL,
                         "immutable": BOOL},
    "HelmGlobals": _HELM_GLOBALS,
    "HelmChart": _HELM_CHART,
    "HelmChartArgs": {
        "chartName": STRING, "chartVersion": STRING, "chartRepoUrl": STRING, "chartHome": STRING,
        "chartRepoName": STRING, "helmBin": STRING, "helmHome": STRING, "values": STRING,
        "valuesLocal": ANY, "valuesMerge": STRING, "releaseName": STRING,
        "releaseNamespace": STRING, "extraArgs": _list(STRING)},
    # The builtin plugins' configs (api/internal/builtins), by the kind a config file names.
    "ConfigMapGenerator": {"metadata": "ObjectMeta", **_GENERATOR_ARGS},
    "SecretGenerator": {"metadata": "ObjectMeta", **_GENERATOR_ARGS, "type": STRING},
    "PatchTransformer": _PATCH,
    "PatchJson6902Transformer": {"target": "Selector", "path": STRING, "jsonOp": STRING},
    "PatchStrategicMergeTransformer": {"paths": _list(STRING), "patches": STRING},
    "ReplacementTransformer": {"replacements": _list("ReplacementField")},
    "HelmChartInflationGenerator": {**_HELM_GLOBALS, **_HELM_CHART},
    "AnnotationsTransformer": {"annotations": MAP, "fieldSpecs": _FIELD_SPECS},
    "LabelTransformer": {"labels": MAP, "fieldSpecs": _FIELD_SPECS},
    "ImageTagTransformer": {"imageTag": "Image", "fieldSpecs": _FIELD_SPECS},
    "NamespaceTransformer": {"metadata": "ObjectMeta", "fieldSpecs": _FIELD_SPECS,
                             "unsetOnly": BOOL, "setRoleBindingSubjects": STRING},
    "PrefixTransformer": {"prefix": STRING, "fieldSpecs": _FIELD_SPECS},
    "SuffixTransformer": {"suffix": STRING, "fieldSpecs": _FIELD_SPECS},
    "ReplicaCountTransformer": {"replica": "Replica", "fieldSpecs": _FIELD_SPECS},
    "SortOrderTransformer": {"sortOptions": "SortOptions"},
    "ValueAddTransformer": {"value": STRING, "targets": ANY, "targetFilePath": STRING},
    "IAMPolicyGenerator": {"cloud": STRING, "kubernetesService": ANY, "serviceAccount": ANY},
    "HashTransformer": {},
})
# The kinds of builtin generator and transformer configs kustomize runs.
# The apiVersion of a kustomization file (kustomize also reads one without it).
KUSTOMIZE_API = "kustomize.config.k8s.io/v1beta1"
CONFIG_KINDS = frozenset({
    "ConfigMapGenerator", "SecretGenerator", "PatchTransformer", "PatchJson6902Transformer",
    "PatchStrategicMergeTransformer", "ReplacementTransformer", "HelmChartInflationGenerator",
    "AnnotationsTransformer", "LabelTransformer", "ImageTagTransformer", "NamespaceTransformer",
    "PrefixTransformer", "SuffixTransformer", "ReplicaCountTransformer", "SortOrderTransformer",
    "ValueAddTransformer", "IAMPolicyGenerator", "HashTransformer"})

# encoding/json's foldName beyond ASCII: the runes whose SimpleFold orbit's least member is an
# ASCII letter (every other non-ASCII rune folds to a non-ASCII one, so never to a field name).
_NON_ASCII_FOLDS = {"\u212a": "K", "\u017f": "S"}


def go_fold(name: str) -> str:
    """encoding/json's foldName of a key, as far as it decides matches with ASCII field names:
    ASCII letters upper-cased, the Kelvin sign and the long s to K and S; any other character
    stays itself (and so matches no field name)."""
    return "".join(c.upper() if c.isascii() else _NON_ASCII_FOLDS.get(c, c) for c in name)


_FOLDED = {struct: {go_fold(f): f for f in fields} for struct, fields in STRUCTS.items()}
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Spelling:
    """A key kustomize reads otherwise than it is written here."""

    pos: Position
    message: str


def spellings(node: Any, struct: str, shown: str) -> list[Spelling]:
    """Every key of the composed `node` (read as kustomize's `struct`) that kustomize would
    read as a field under another spelling, and every merge key, at any depth, in file order."""
    out: list[Spelling] = []
    seen: set[tuple[int, Type]] = set()
    stack: list[tuple[Any, Type]] = [(node, struct)]
    while stack:
        n, t = stack.pop()
        if (id(n), t) in seen:  # an alias: the same node again
            continue
        seen.add((id(n), t))
        # a scalar names no key and holds none: only collections are pushed (a kustomization's
        # nodes are mostly scalars, and this runs for each of thousands of overlays)
        if isinstance(n, yaml.SequenceNode):
            item: Type = t[1] if isinstance(t, tuple) else ANY
            stack.extend((x, item) for x in reversed(n.value) if type(x) is not yaml.ScalarNode)
        elif isinstance(n, yaml.MappingNode):
            fields = STRUCTS.get(t) if isinstance(t, str) else None
            below: list[tuple[Any, Type]] = []
            for k, v in n.value:
                if type(k) is not yaml.ScalarNode:
                    below.append((k, ANY))
                name = k.value if isinstance(k, yaml.ScalarNode) else None
                if name == "<<" or getattr(k, "tag", "") == _MERGE_TAG:
                    out.append(Spelling(_pos(shown, k), (
                        "kustomize's YAML reader expands the merge key `<<`, adding the fields of "
                        "the mapping it names where no line shows them; write those fields out "
                        "here instead")))
                    below.append((v, ANY))
                    continue
                if fields is None or not isinstance(name, str):
                    below.append((v, ANY))
                    continue
                if name in fields:
                    below.append((v, fields[name]))
                    continue
                canonical = _FOLDED[str(t)].get(go_fold(name))
                if canonical is not None:
                    out.append(Spelling(_pos(shown, k), (
                        f"kustomize reads `{name}` as `{canonical}` (Go's JSON decoder matches "
                        f"field names without regard to case); write it as `{canonical}`")))
                below.append((v, ANY if canonical is None else fields[canonical]))
            stack.extend(x for x in reversed(below) if type(x[0]) is not yaml.ScalarNode)
    out.sort(key=lambda s: (s.pos.line, s.pos.column))
    return out


def _pos(shown: str, node: Any) -> Position:
    return Position(shown, node.start_mark.line + 1, node.start_mark.column + 1)


def _refuse(problems: list[Spelling]) -> None:
    if problems:
        raise InputErrors([(p.pos, p.message) for p in problems])


def field(node: Any, name: str) -> Any:
    """The value node of the field `name` (its canonical spelling) in a composed struct mapping
    of a kustomization or config that `read` or `configs` accepted: there, the exact key is the
    only one kustomize reads as that field."""
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            if isinstance(k, yaml.ScalarNode) and k.value == name:
                return v
    return None


@dataclass(frozen=True)
class Kustomization:
    """One kustomization file as kustomize reads it: each field under its canonical name."""

    shown: str  # the file as findings name it
    node: Any  # the composed root mapping
    fields: Mapping[str, Any]  # canonical field name -> its value node, in file order

    def get(self, name: str) -> Any:
        """The value node of field `name`, or None."""
        return self.fields.get(name)

    def scalars(self, name: str) -> list[Any]:
        """The scalar items of a list field (anything else is kustomize's to refuse)."""
        return scalar_items(self.fields.get(name))

    def items(self, name: str) -> list[Any]:
        """The items of a list field."""
        node = self.fields.get(name)
        return list(node.value) if isinstance(node, yaml.SequenceNode) else []

    def value(self, name: str) -> Any:
        """The field's value as YAML constructs it (a fresh copy each call)."""
        node = self.fields.get(name)
        return None if node is None else yaml.constructor.SafeConstructor().construct_document(node)

    def pos(self, node: Any) -> Position:
        """Where a node of this file was written."""
        return _pos(self.shown, node)


def scalar_items(node: Any) -> list[Any]:
    """Scalar items of a sequence node; a non-empty scalar stands for itself."""
    if isinstance(node, yaml.SequenceNode):
        return [n for n in node.value if isinstance(n, yaml.ScalarNode)]
    if isinstance(node, yaml.ScalarNode) and node.value:
        return [node]
    return []


def read(text: str, shown: str) -> Kustomization:
    """The kustomization in `text` (file `shown`); InputError when it is not one YAML mapping,
    InputErrors naming every key kustomize would read under another spelling and every merge
    key (module doc)."""
    nodes = composed(text, shown)
    if len(nodes) != 1 or not isinstance(nodes[0], yaml.MappingNode):
        raise InputError(Position(shown, 1, 1), "a kustomization must be one YAML mapping")
    root = nodes[0]
    _refuse(spellings(root, "Kustomization", shown))
    fields = {k.value: v for k, v in root.value if isinstance(k, yaml.ScalarNode)}
    return Kustomization(shown, root, MappingProxyType(fields))


def flux_differences(node: Any, shown: str, resolve: Any) -> list[Spelling]:
    """Where Flux's kustomize-controller reads a kustomization `read` accepted otherwise than
    kubectl: its generator decodes the file with sigs.k8s.io/yaml into kustomize's types, which
    drops a key that names no field (kubectl refuses it) and turns a number or a bool where a
    string belongs into that string (kubectl refuses it). Every such key and value, in file
    order. `resolve(text)` is the value go-yaml gives a plain scalar (topogate.gitops.goyaml)."""
    out: list[Spelling] = []
    stack: list[tuple[Any, Type]] = [(node, "Kustomization")]
    while stack:
        n, t = stack.pop()
        if isinstance(n, yaml.SequenceNode) and isinstance(t, tuple):
            stack.extend((x, t[1]) for x in reversed(n.value))
        elif isinstance(n, yaml.MappingNode) and isinstance(t, str) and t in STRUCTS:
            fields = STRUCTS[t]
            for k, v in reversed(n.value):
                name = k.value if isinstance(k, yaml.ScalarNode) else None
                if name not in fields:
                    out.append(Spelling(_pos(shown, k), (
                        f"`{name}` is no field of a kustomization: kubectl refuses it, and Flux's "
                        "kustomize-controller drops it without a word; remove it or spell the field "
                        "kustomize knows")))
                    continue
                stack.append((v, fields[str(name)]))
        elif isinstance(n, yaml.MappingNode) and t == MAP:
            stack.extend((v, STRING) for _, v in reversed(n.value))
        elif isinstance(n, yaml.ScalarNode) and t == STRING and not n.style:  # plain (libyaml: "")
            value = resolve(n.value)
            if value is not None and not isinstance(value, str):
                out.append(Spelling(_pos(shown, n), (
                    f"`{n.value}` is read as {'a bool' if isinstance(value, bool) else 'a number'} here: "
                    "kubectl refuses it where "
                    "kustomize wants a string, Flux's kustomize-controller turns it into one; "
                    "quote it")))
    out.sort(key=lambda s: (s.pos.line, s.pos.column))
    return out


@dataclass(frozen=True)
class Config:
    """One builtin generator or transformer config (a document of a file, or an inline text,
    listed under `generators:`, `transformers:` or `validators:`)."""

    kind: str  # "" when it names none kustomize knows (kustomize refuses it)
    node: Any  # the composed mapping


def configs(text: str, shown: str) -> Iterator[Config]:
    """The configs in `text`, each checked as `read` checks a kustomization (against its kind's
    struct; merge keys anywhere). A document that is no mapping is kustomize's to refuse."""
    found: list[Config] = []
    problems: list[Spelling] = []
    for node in composed(text, shown):
        if not isinstance(node, yaml.MappingNode):
            continue
        kind_node = field(node, "kind")  # read by kyaml, exactly (RNode.GetKind)
        kind = kind_node.value if isinstance(kind_node, yaml.ScalarNode) else ""
        kind = kind if kind in CONFIG_KINDS else ""
        problems += spellings(node, kind or "", shown) if kind else _merge_keys(node, shown)
        found.append(Config(kind, node))
    _refuse(problems)
    yield from found


def _merge_keys(node: Any, shown: str) -> list[Spelling]:
    return spellings(node, ANY, shown)


__all__ = ["ANY", "BOOL", "Config", "INT", "KUSTOMIZE_API", "Kustomization", "STRING", "STRUCTS", "configs",
           "field", "flux_differences", "go_fold", "read", "scalar_items", "spellings"]
