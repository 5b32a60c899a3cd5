"""What Flux's kustomize-controller makes of a Kustomization (kustomize.toolkit.fluxcd.io/v1):
its generated kustomization, and its post-build substitution and common metadata.

Read from github.com/fluxcd/pkg/kustomize v1.41.0 (kustomize_generator.go, kustomize_varsub.go)
and kustomize-controller v1.10.1 (its build and apply), and held to the Go code by
`tests/oracles/test_flux_oracle.py`:

1. The directory's kustomization (kustomization.yaml, .yml or Kustomization, the first that is
   a file) is decoded into kustomize's types and written back: a field kustomize does not know
   is dropped, a number where a string belongs becomes that string; topogate refuses both
   (topogate.k8s.kustomization.flux_differences) rather than check something other than what
   kubectl checks. With no kustomization, one is generated listing every .yaml/.yml file below
   the directory that holds Kubernetes objects and every subdirectory holding a kustomization
   (not descending into it); with nothing to list, a placeholder namespace. An existing
   kustomization without `resources` gets `buildMetadata: [originAnnotations]` (Flux avoids
   kustomize's "empty kustomization" error so), so its objects carry
   `config.kubernetes.io/origin`.
2. Then, in this order: `targetNamespace` -> namespace, `namePrefix`, `nameSuffix` (each
   replaces the kustomization's own), `patches` appended (patch text and target only),
   `components` appended (local relative paths only; a missing one skipped under
   `ignoreMissingComponents`), `patchesStrategicMerge` and `patchesJson6902` appended (the v1
   API has neither: the API server drops them, see topogate.gitops.engines), `images` merged by
   name (a new name replaces; a new tag or digest replaces both), `buildMetadata` replacing.
3. The build: every file inside the source (not only below the directory), builtin plugins
   only (scratch.FLUX_OPTIONS).
4. Each object not labelled or annotated `kustomize.toolkit.fluxcd.io/substitute: disabled` is
   substituted when `postBuild` is set and there is a variable (or `substituteStrategy:
   Always`): ConfigMaps' and Secrets' data of `substituteFrom` in order, then `substitute`,
   newlines removed from every value; every name must match envsubst.VAR_NAME; the object's
   YAML text is substituted (topogate.gitops.envsubst) and read back (topogate.gitops.goyaml).
5. `commonMetadata` labels and annotations are set on each object's metadata (not on pod
   templates), after the build, when applying.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from topogate.gitops import envsubst, goyaml
from topogate.gitops.values import mapping
from topogate.k8s.kustomization import KUSTOMIZE_API
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, Roots, display
from topogate.safeio.saferead import InputError, documents, read_text
from topogate.sources.positions import Path_

SUBSTITUTE_KEY = "kustomize.toolkit.fluxcd.io/substitute"
KUSTOMIZATION_TYPE = {"apiVersion": KUSTOMIZE_API, "kind": "Kustomization"}


class FluxError(Exception):
    """kustomize-controller fails on this Kustomization: the message is what it says; `at` is
    the field of the Flux Kustomization it is about."""

    def __init__(self, message: str, at: Path_ = ("spec",)):
        super().__init__(message)
        self.at = at


def _string(spec: Mapping[str, Any], key: str) -> str | None:
    """unstructured.NestedString: None when absent, FluxError when not a string."""
    if key not in spec:
        return None
    v = spec[key]
    if not isinstance(v, str):
        raise FluxError(f".spec.{key} accessor error: {v!r} is of the type {_go_type(v)}, expected string",
                        ("spec", key))
    return v


def _go_type(v: Any) -> str:
    return {bool: "bool", int: "int64", float: "float64", str: "string", list: "[]interface {}",
            dict: "map[string]interface {}"}.get(type(v), "<nil>")


def _slice(spec: Mapping[str, Any], key: str) -> list[Any]:
    if key not in spec or spec[key] is None:
        return []
    v = spec[key]
    if not isinstance(v, list):
        raise FluxError(f".spec.{key} accessor error: {v!r} is of the type {_go_type(v)}, expected []interface{{}}",
                        ("spec", key))
    return v


def _strings(d: Mapping[str, Any], fields: Sequence[str], where: Path_) -> dict[str, str]:
    """A struct of string fields as DefaultUnstructuredConverter fills it: unknown keys ignored,
    a wrong type an error."""
    out: dict[str, str] = {}
    for f in fields:
        v = d.get(f)
        if v is None:
            continue
        if not isinstance(v, str):
            raise FluxError(f"{'.'.join(str(p) for p in where)}.{f}: cannot convert {_go_type(v)} to string", where)
        if v:
            out[f] = v
    return out


_SELECTOR = ("group", "version", "kind", "name", "namespace", "annotationSelector", "labelSelector")


def _selector(v: Any, where: Path_) -> dict[str, str] | None:
    if v is None:
        return None
    if not isinstance(v, dict):
        raise FluxError(f"{'.'.join(str(p) for p in where)}: cannot convert {_go_type(v)} to a selector", where)
    return _strings(v, _SELECTOR, where)


def is_local_relative(path: str) -> bool:
    """The generator's IsLocalRelativePath: no git or http URL, not absolute (file:// too)."""
    low = path.lower()
    for p in ("git::", "gh:", "ssh://", "https://", "http://", "git@", "github.com:", "github.com/"):
        if len(p) < len(path) and low.startswith(p):
            return False
    return not (path.startswith("/") or low.removeprefix("file://").startswith("/"))


@dataclass(frozen=True)
class Generated:
    """The kustomization Flux writes into the directory, and under which name."""

    kustomization: dict[str, Any]
    kfile: str  # its file name in the directory
    created: bool  # there was none: Flux generated it


def generate(spec: Mapping[str, Any], existing: dict[str, Any] | None, kfile: str | None,
             scanned: Sequence[str], component_exists: Callable[[str], bool]) -> Generated:
    """The kustomization of step 1 and 2 of the module doc. `existing`: the directory's own
    kustomization as sigs.k8s.io/yaml reads it (None: there is none); `scanned`: the resources
    a generated one lists; `component_exists(path)`: whether the component path (relative to
    the directory) is there."""
    if existing is None:
        kus: dict[str, Any] = dict(KUSTOMIZATION_TYPE)
        if scanned:
            kus["resources"] = list(scanned)
        else:
            kus["namespace"] = "_placeholder"
    else:
        kus = {**KUSTOMIZATION_TYPE, **copy.deepcopy(existing)}
        if not kus.get("resources"):
            kus["buildMetadata"] = ["originAnnotations"]
    for key, field in (("targetNamespace", "namespace"), ("namePrefix", "namePrefix"),
                       ("nameSuffix", "nameSuffix")):
        value = _string(spec, key)
        if value is not None:
            _set(kus, field, value)
    for i, p in enumerate(_slice(spec, "patches")):
        where = ("spec", "patches", i)
        if not isinstance(p, dict):
            raise FluxError(f"unable to get patches: unable to convert patch {i} to map[string]interface{{}}", where)
        body = _strings(p, ("patch",), where).get("patch", "")
        entry: dict[str, Any] = {"patch": body} if body else {}
        target = _selector(p.get("target"), (*where, "target"))
        if target is not None:
            entry["target"] = target
        kus.setdefault("patches", []).append(entry)
    components = _slice(spec, "components")
    if any(not isinstance(c, str) for c in components):
        raise FluxError("unable to get components: .spec.components accessor error: "
                        "contains non-string value", ("spec", "components"))
    ignore_missing = spec.get("ignoreMissingComponents") is True
    for i, c in enumerate(components):
        if not is_local_relative(c):
            raise FluxError(f"component path '{c}' must be local and relative", ("spec", "components", i))
        if ignore_missing and not component_exists(c):
            continue
        kus.setdefault("components", []).append(c)
    for i, p in enumerate(_slice(spec, "patchesStrategicMerge")):
        if not isinstance(p, dict):
            raise FluxError(f"unable to get patchesStrategicMerge: unable to convert patch {i} to "
                            "map[string]interface{}", ("spec", "patchesStrategicMerge", i))
        kus.setdefault("patchesStrategicMerge", []).append(_go_json(p))
    for i, p in enumerate(_slice(spec, "patchesJson6902")):
        where = ("spec", "patchesJson6902", i)
        if not isinstance(p, dict):
            raise FluxError(f"unable to get patchesJson6902: unable to convert patch {i} to "
                            "map[string]interface{}", where)
        ops = p.get("patch") or []
        if not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
            raise FluxError("unable to get patchesJson6902: patch must be a list of operations", where)
        entry = {"patch": _go_json([_json6902(o, (*where, "patch")) for o in ops])}
        target = _selector(p.get("target") or {}, (*where, "target"))
        entry["target"] = target or {}
        kus.setdefault("patchesJson6902", []).append(entry)
    _merge_images(kus, spec)
    meta = _slice(spec, "buildMetadata")
    if any(not isinstance(m, str) for m in meta):
        raise FluxError("unable to get buildMetadata: .spec.buildMetadata accessor error: "
                        "contains non-string value", ("spec", "buildMetadata"))
    if meta:
        kus["buildMetadata"] = list(meta)
    return Generated(_omit_empty(kus), kfile or KUSTOMIZATION_FILES[0], existing is None)


def _set(kus: dict[str, Any], field: str, value: str) -> None:
    if value:
        kus[field] = value
    else:
        kus.pop(field, None)  # an empty string is omitted when Flux writes the file


def _json6902(op: Mapping[str, Any], where: Path_) -> dict[str, Any]:
    out: dict[str, Any] = {"op": "", "path": ""}
    out.update(_strings(op, ("op", "path", "from"), where))
    if op.get("value") is not None:
        out["value"] = op["value"]
    return out


def _go_json(v: Any) -> str:
    """encoding/json's text of a value (map keys sorted, no spaces)."""
    return json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _merge_images(kus: dict[str, Any], spec: Mapping[str, Any]) -> None:
    for i, image in enumerate(_slice(spec, "images")):
        where = ("spec", "images", i)
        if not isinstance(image, dict):
            raise FluxError(f"unable to get images: unable to convert patch {i} to map[string]interface{{}}", where)
        want = _strings(image, ("name", "newName", "newTag", "digest"), where)
        images = kus.setdefault("images", [])
        found = next((im for im in images if isinstance(im, dict) and im.get("name", "") == want.get("name", "")),
                     None)
        if found is None:
            images.append(want)
            continue
        if want.get("newName"):
            found["newName"] = want["newName"]
        if want.get("newTag") or want.get("digest"):
            for key in ("newTag", "digest"):
                if want.get(key):
                    found[key] = want[key]
                else:
                    found.pop(key, None)


def _omit_empty(kus: dict[str, Any]) -> dict[str, Any]:
    """Fields Flux's write leaves out (omitempty: empty strings, lists, maps)."""
    return {k: v for k, v in kus.items() if v not in ("", [], {}, None) or k in ("apiVersion", "kind")}


def read_existing(text: str, shown: str) -> dict[str, Any]:
    """The directory's kustomization as Flux's generator reads it: InputErrors where that is
    not what kubectl reads (topogate.k8s.kustomization)."""
    # lazy: k8s.kustomization imports nothing of gitops, gitops imports it here only
    from topogate.k8s import kustomization as kmodel  # lazy: keeps this module's import light

    k = kmodel.read(text, shown)
    problems = kmodel.flux_differences(k.node, shown, goyaml.resolve_plain)
    if problems:
        # lazy: the error type lives in safeio, imported where it is raised
        from topogate.safeio.saferead import InputErrors  # lazy: only on this error path

        raise InputErrors([(p.pos, p.message) for p in problems])
    try:
        value = goyaml.yaml_to_json(text)
    except (goyaml.JSONError, goyaml.Unsafe, yaml.YAMLError) as e:
        raise InputError(k.pos(k.node), f"invalid Kustomization: {e}") from None
    return value if isinstance(value, dict) else {}


def scan(d: str, roots: Roots) -> list[str]:
    """The resources a generated kustomization lists for directory d (real path), in the order
    Flux's scanManifests walks it (filepath.Walk: lexical, a directory's subtree where its name
    comes, symbolic links not followed into), not descending into a directory that holds a
    kustomization (listed itself): .yaml and .yml files holding objects with a kind and a name
    (an empty file is listed too; any other fails the generation), only those git tracks (the
    only ones in Flux's artifact). Paths relative to d, `./`-prefixed."""
    out: list[str] = []
    stack: list[list[str]] = [[os.path.join(d, n) for n in reversed(sorted(os.listdir(d))) if n != ".git"]]
    while stack:
        if not stack[-1]:
            stack.pop()
            continue
        p = stack[-1].pop()
        if os.path.isdir(p) and not os.path.islink(p):
            if any(os.path.isfile(os.path.join(p, k)) for k in KUSTOMIZATION_FILES):
                out.append("./" + os.path.relpath(p, d))
            else:
                stack.append([os.path.join(p, n) for n in reversed(sorted(os.listdir(p))) if n != ".git"])
            continue
        if not p.endswith((".yaml", ".yml")):
            continue
        real = roots.realpath(p)
        if not roots.holds(real) or roots.untracked(real) is not None:
            continue
        shown = display(Path(p))
        for _, _, obj in documents(read_text(p, shown), shown):
            if obj is None or obj == {}:
                continue
            md = obj.get("metadata") if isinstance(obj, dict) else None
            kind = obj.get("kind") if isinstance(obj, dict) else None
            if not kind or not (str(kind).endswith("List") or isinstance(md, dict) and md.get("name")):
                raise FluxError(f"failed to decode Kubernetes YAML from {shown}: missing kind or "
                                "metadata.name", ("spec", "path"))
        out.append("./" + os.path.relpath(p, d))
    return out


# --- post-build: substitution and common metadata -------------------------------------------


@dataclass(frozen=True)
class Var:
    """Where a variable's value comes from, for findings (never the value of a Secret's)."""

    value: str
    source: str  # "postBuild.substitute.X", "ConfigMap flux-system/vars data.X", ...
    pos: Any  # Position of that line
    secret: bool = False


def secret_values(obj: Mapping[str, Any]) -> dict[str, str]:
    """A Secret's data as the API server stores it: `data` base64-decoded, `stringData` over it."""
    out: dict[str, str] = {}
    data = obj.get("data")
    for k, v in (data.items() if isinstance(data, dict) else ()):
        if isinstance(v, str):
            try:
                out[str(k)] = base64.b64decode(v, validate=True).decode("utf-8", "replace")
            except (binascii.Error, ValueError):
                continue
    sdata = obj.get("stringData")
    for k, v in (sdata.items() if isinstance(sdata, dict) else ()):
        if isinstance(v, str):
            out[str(k)] = v
    return out


def opted_out(obj: Mapping[str, Any]) -> bool:
    md = mapping(obj.get("metadata"))
    for key in ("labels", "annotations"):
        m = md.get(key) if isinstance(md, dict) else None
        if isinstance(m, dict) and m.get(SUBSTITUTE_KEY) == "disabled":
            return True
    return False


def check_names(values: Mapping[str, str]) -> None:
    for name in values:
        if not envsubst.VAR_NAME.match(name):
            raise FluxError(f"'{name}' var name is invalid, must match '^[_[:alpha:]][_[:alpha:][:digit:]]*$'",
                            ("spec", "postBuild"))


def substitute_doc(text: str, values: Mapping[str, str], strict: bool) -> Any:
    """One object's YAML text substituted and read back as Flux does (envsubst.SubstError,
    goyaml.JSONError or yaml.YAMLError where Flux fails)."""
    return goyaml.yaml_to_json(envsubst.substitute(text, values, strict))


def set_common_metadata(obj: dict[str, Any], labels: Mapping[str, str], annotations: Mapping[str, str]) -> None:
    """ssa's SetCommonMetadata: merged into the object's own labels and annotations. It reads
    them as a map of strings, a null value as "": one value of another type (a substitution made
    it `true`) loses all of them."""
    md = obj.setdefault("metadata", {})
    for key, extra in (("labels", labels), ("annotations", annotations)):
        own = md.get(key)
        keep = isinstance(own, dict) and all(v is None or isinstance(v, str) for v in own.values())
        merged = {k: "" if v is None else v for k, v in own.items()} if keep and isinstance(own, dict) else {}
        merged.update(extra)
        if merged:
            md[key] = merged


def split_documents(output: str) -> list[str]:
    """kustomize's output as the text of each object (ResMap.AsYaml joins them with `---`)."""
    if not output.strip():
        return []
    return [doc for doc in re.split(r"(?m)^---\n", output) if doc.strip()]


__all__ = ["FluxError", "Generated", "Var", "check_names", "generate", "opted_out", "read_existing", "scan",
           "secret_values", "set_common_metadata", "split_documents", "substitute_doc"]
