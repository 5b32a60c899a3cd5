"""What Argo CD's repo-server makes of an Application's source: its kustomize options as edits
of the directory's kustomization, and a directory source's files.

Read from argo-cd v3.6.2 (util/kustomize/kustomize.go's Build, reposerver/repository's
GenerateManifests and findManifests) and kustomize v5.8.1's `edit` commands, which Build runs
in the repo-server's checkout, in this order:

1. `edit set nameprefix`, `edit set namesuffix`;
2. `edit set image` with each image after Argo CD's `$VAR` expansion (its build environment:
   ARGOCD_APP_NAME, ...): `name=new:tag@digest` or `name:tag`; a `*` keeps what the
   kustomization had; the images end up sorted by name;
3. `edit set replicas name=count`, sorted by name, a name given replacing its entry;
4. `edit add label k:v` (`--force`, `--without-selector`, `--include-templates`), the values
   `$VAR`-expanded; without --force a label the kustomization has already fails the build;
5. `edit add annotation k:v` (`--force`; expanded with commonAnnotationsEnvsubst);
6. `edit set namespace`;
7. `patches` appended to the kustomization's own, written by Argo CD itself (no `edit`);
8. `edit add component` (globbed from the directory; with `ignoreMissingComponents` only
   those holding a kustomization file).

Each `edit` reads the kustomization as kubectl does (an unknown field fails it) and writes it
back with kustomize's legacy fields folded in (`bases` into `resources`, `imageTags` into
`images`, a generator's `env` into `envs`), which changes nothing kubectl builds. Then
`kustomize build`, with kustomize's default load restrictor. `tests/oracles/test_argocd_oracle.py`
holds this to the kustomize CLI running the same commands.

A directory source reads every .yaml, .yml and .json file of the directory (of its subtree
with `recurse`), filtered by `include`/`exclude` globs relative to it, skipping files marked
`+argocd:skip-file-rendering`; `.jsonnet` files are evaluated by Argo CD and named here as not
rendered. After either, Argo CD sets the destination namespace on every namespaced object
without one.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from topogate.k8s.kustomization import KUSTOMIZE_API
from topogate.sources.positions import Path_


class ArgoError(Exception):
    """The repo-server's render fails: what it says; `at` the field of the source."""

    def __init__(self, message: str, at: Path_ = ()):
        super().__init__(message)
        self.at = at


# --- Argo CD's $VAR expansion (Env.Envsubst: Go's os.Expand, `$$` kept as `$`) ---------------

_SPECIAL = "*#$@!?-0123456789"


def expand(s: str, env: Mapping[str, str]) -> str:
    """os.Expand(s, lookup) with Argo CD's lookup: a name not in env is empty, `$$` is `$`."""
    out: list[str] = []
    i = j = 0
    while j < len(s):
        if s[j] == "$" and j + 1 < len(s):
            out.append(s[i:j])
            name, width = _shell_name(s[j + 1:])
            if name:
                out.append(_lookup(name, env))
            elif not width:
                out.append("$")  # `$` before no name stays
            j += width
            i = j + 1
        j += 1
    out.append(s[i:])
    return "".join(out)


def _shell_name(s: str) -> tuple[str, int]:
    """os.getShellName: the name after a `$` and how many characters it takes ("" and a width
    for bad syntax, which is dropped)."""
    if s[0] == "{":
        if len(s) > 2 and s[1] in _SPECIAL and s[2] == "}":
            return s[1], 3
        end = s.find("}", 1)
        if end == 1:
            return "", 2
        return (s[1:end], end + 1) if end > 0 else ("", 1)
    if s[0] in _SPECIAL:
        return s[0], 1
    i = 0
    while i < len(s) and (s[i] == "_" or s[i].isascii() and s[i].isalnum()):
        i += 1
    return s[:i], i


def _lookup(name: str, env: Mapping[str, str]) -> str:
    return "$" if name == "$" else env.get(name, "")


# --- kustomize edit, on the kustomization as kustomize's types hold it ------------------------


def fix(kus: dict[str, Any]) -> dict[str, Any]:
    """types.Kustomization.FixKustomization: the legacy fields folded in, as every `edit` writes."""
    k = copy.deepcopy(kus)
    k.setdefault("kind", "Kustomization")
    if not k.get("apiVersion"):
        k["apiVersion"] = ("kustomize.config.k8s.io/v1alpha1" if k["kind"] == "Component"
                           else KUSTOMIZE_API)
    if k.get("bases"):
        k["resources"] = [*(k.get("resources") or []), *k["bases"]]
    k.pop("bases", None)
    if k.get("imageTags"):
        k["images"] = [*(k.get("images") or []), *k["imageTags"]]
    k.pop("imageTags", None)
    for gen in ("configMapGenerator", "secretGenerator"):
        for g in k.get(gen) or []:
            if isinstance(g, dict) and g.get("env"):
                g["envs"] = [*(g.get("envs") or []), g.pop("env")]
            elif isinstance(g, dict):
                g.pop("env", None)
    return _omit_empty(k)


def _omit_empty(k: dict[str, Any]) -> dict[str, Any]:
    return {key: v for key, v in k.items() if v not in ("", [], {}, None)}


def split_image(image: str) -> tuple[str, str, str]:
    """kustomize's image.Split: (name, tag, digest); a registry's `:port` is not a tag."""
    slash = image.find("/")
    search, offset = (image[slash:], slash) if slash > 0 else (image, 0)
    at, colon = search.find("@"), search.find(":")
    if colon < 0 and at < 0:
        return image, "", ""
    if at >= 0 and (at < colon or colon < 0):
        at += offset
        return image[:at], "", image[at + 1:]
    if at >= 0 and colon >= 0:
        at += offset
        colon += offset
        return image[:colon], image[colon + 1:at], image[at + 1:]
    colon += offset
    return image[:colon], image[colon + 1:], ""


_PRESERVE = "*"


def set_image(kus: dict[str, Any], args: Sequence[str]) -> dict[str, Any]:
    wanted: dict[str, dict[str, str]] = {}
    for arg in args:
        key, _, value = arg.partition("=") if "=" in arg else ("", "", arg)
        name, tag, digest = split_image(value)
        if name == arg:
            raise ArgoError(f"kustomize edit set image {arg}: invalid format of image, use one of the "
                            "following options: <image>=<newimage>:<newtag>, <image>=<newimage>@<digest>, "
                            "<image>=<newimage>, <image>:<newtag>, <image>@<digest>")
        image = {"name": key or name, "newName": name if key else "", "newTag": tag, "digest": digest}
        wanted[image["name"]] = image
    for raw in kus.get("images") or []:
        have = {f: str(raw.get(f) or "") for f in ("name", "newName", "newTag", "digest", "tagSuffix")} \
            if isinstance(raw, dict) else {}
        given = wanted.get(have.get("name", ""))
        if given is None:
            wanted[have.get("name", "")] = have
            continue
        for f in ("newName", "newTag", "digest"):
            if given[f] == _PRESERVE:
                given[f] = have[f]
    images = []
    for im in sorted(wanted.values(), key=lambda x: x.get("name", "")):
        images.append({f: v for f, v in im.items() if v and v != _PRESERVE or f == "name"})
    return {**kus, "images": images}


def set_replicas(kus: dict[str, Any], replicas: Sequence[tuple[str, int]]) -> dict[str, Any]:
    wanted: dict[str, dict[str, Any]] = {name: {"name": name, "count": count} for name, count in replicas}
    for r in kus.get("replicas") or []:
        if isinstance(r, dict) and str(r.get("name", "")) not in wanted:
            wanted[str(r.get("name", ""))] = {"name": r.get("name", ""), "count": r.get("count", 0)}
    return {**kus, "replicas": [wanted[n] for n in sorted(wanted, key=str)]}


def _pairs(args: Sequence[str], kind: str) -> dict[str, str]:
    """kustomize's ConvertSliceToMap of `k:v` arguments."""
    out: dict[str, str] = {}
    for a in args:
        c = a.find(":")
        if c == 0:
            raise ArgoError(f"kustomize edit add {kind}: invalid {kind}: '{a}' (need k:v pair where v may be quoted)")
        if c < 0:
            out[a] = ""
            continue
        v = a[c + 1:]
        out[a[:c]] = v[1:-1] if len(v) >= 2 and v[0] == v[-1] == '"' else v
    return out


def add_metadata(kus: dict[str, Any], kind: str, values: Mapping[str, str], force: bool,
                 without_selector: bool = False, include_templates: bool = False) -> dict[str, Any]:
    """`edit add label|annotation` with Argo CD's arguments (one `k:v` each)."""
    if include_templates and not without_selector:
        raise ArgoError("kustomize edit add label: --without-selector flag must be specified for "
                        "--include-templates to work")
    pairs = _pairs([f"{k}:{v}" for k, v in values.items()], kind)
    k = copy.deepcopy(kus)

    def put(target: dict[str, str], key: str, value: str) -> None:
        if key in target and not force:
            raise ArgoError(f"kustomize edit add {kind}: {kind} {key} already in kustomization file. "
                            "Use --force to override.")
        target[key] = value

    if kind == "label" and without_selector:
        labels = k.setdefault("labels", [])
        for key, value in pairs.items():
            same = [lb for lb in labels if isinstance(lb, dict) and not lb.get("includeSelectors")
                    and bool(lb.get("includeTemplates")) == include_templates]
            if same:
                put(same[0].setdefault("pairs", {}), key, value)
            else:
                entry: dict[str, Any] = {"pairs": {key: value}}
                if include_templates:
                    entry["includeTemplates"] = True
                labels.append(entry)
        return k
    field = "commonLabels" if kind == "label" else "commonAnnotations"
    target = dict(k.get(field) or {})
    for key, value in pairs.items():
        put(target, key, value)
    k[field] = target
    return k


def add_patches(kus: dict[str, Any], patches: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Argo CD's own edit: the Application's patches after the kustomization's."""
    existing = kus.get("patches")
    if existing is not None and not isinstance(existing, list):
        raise ArgoError(f"expected 'patches' field in kustomization.yaml to be []any, but got {type(existing).__name__}")
    return {**kus, "patches": [*(existing or []), *(argo_patch(p) for p in patches)]}


_SELECTOR = ("group", "version", "kind", "name", "namespace", "annotationSelector", "labelSelector")


def argo_patch(p: Mapping[str, Any]) -> dict[str, Any]:
    """A KustomizePatch as Argo CD marshals it: empty fields omitted."""
    out: dict[str, Any] = {}
    for f in ("path", "patch"):
        if p.get(f):
            out[f] = str(p[f])
    target = p.get("target")
    if isinstance(target, dict):
        out["target"] = {f: str(target[f]) for f in _SELECTOR if target.get(f)}
    options = p.get("options")
    if isinstance(options, dict) and options:
        out["options"] = {str(k): bool(v) for k, v in options.items()}
    return out


def add_components(kus: dict[str, Any], found: Sequence[str], kfile: str) -> dict[str, Any]:
    components = list(kus.get("components") or [])
    for c in found:
        if c != kfile and c not in components:
            components.append(c)
    return {**kus, "components": components}


# --- gobwas/glob, as Argo CD's include and exclude use it (no separators) ----------------------


def glob_regex(pattern: str) -> re.Pattern[str]:
    """A gobwas/glob pattern compiled without separators: `*` and `**` any text (`/` too), `?`
    one character, `[abc]`, `[!abc]`, `[a-z]`, `{a,b}` alternatives (nested), `\\` escapes."""
    out, _ = _glob(pattern, 0, top=True)
    return re.compile(out + r"\Z", re.DOTALL)


def _glob(p: str, i: int, top: bool) -> tuple[str, int]:
    out: list[str] = []
    alts: list[str] = []
    while i < len(p):
        c = p[i]
        if c == "\\" and i + 1 < len(p):
            out.append(re.escape(p[i + 1]))
            i += 2
        elif c == "*":
            while i < len(p) and p[i] == "*":
                i += 1
            out.append(".*")
        elif c == "?":
            out.append(".")
            i += 1
        elif c == "[":
            end = p.find("]", i + 1)
            if end < 0:
                raise ArgoError(f"invalid glob {p!r}: unclosed [")
            body = p[i + 1:end]
            neg = body.startswith("!")
            body = body[1:] if neg else body
            out.append("[" + ("^" if neg else "") + body.replace("\\", "\\\\").replace("^", "\\^") + "]")
            i = end + 1
        elif c == "{":
            inner, i = _glob(p, i + 1, top=False)
            out.append(inner)
        elif c == "," and not top:
            alts.append("".join(out))
            out = []
            i += 1
        elif c == "}" and not top:
            alts.append("".join(out))
            return "(?:" + "|".join(alts) + ")", i + 1
        else:
            out.append(re.escape(c))
            i += 1
    if not top:
        raise ArgoError(f"invalid glob {p!r}: unclosed {{")
    return "".join(out), i


def glob_match(pattern: str, text: str) -> bool:
    return bool(glob_regex(pattern).match(text))


SKIP_MARKER = "+argocd:skip-file-rendering"
MANIFEST = re.compile(r"^.*\.(yaml|yml|json|jsonnet)\Z", re.DOTALL)


def env_of(app: Mapping[str, Any], source: Mapping[str, Any], repo_url: str) -> dict[str, str]:
    """The repo-server's build environment for an Application (newEnv): the revision is not
    known before Argo CD syncs, so it stays empty."""
    md = app.get("metadata") or {}
    spec = app.get("spec") or {}
    dest = spec.get("destination") or {}
    return {
        "ARGOCD_APP_NAME": str(md.get("name", "")),
        "ARGOCD_APP_NAMESPACE": str(dest.get("namespace", "") or ""),
        "ARGOCD_APP_PROJECT_NAME": str(spec.get("project", "") or "default"),
        "ARGOCD_APP_REVISION": "", "ARGOCD_APP_REVISION_SHORT": "", "ARGOCD_APP_REVISION_SHORT_8": "",
        "ARGOCD_APP_SOURCE_REPO_URL": repo_url,
        "ARGOCD_APP_SOURCE_PATH": str(source.get("path", "") or ""),
        "ARGOCD_APP_SOURCE_TARGET_REVISION": str(source.get("targetRevision", "") or ""),
    }


REVISION_VARS = re.compile(r"\$\{?ARGOCD_APP_REVISION")


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch (.argocd-source.yaml over the Application's source)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out


def int_count(v: Any) -> int:
    """KustomizeReplica.GetIntCount: an int, or a string Go's Atoi reads."""
    if isinstance(v, bool):
        raise ArgoError(f"expected integer value for count. Received: {v}")
    if isinstance(v, int):
        return v
    if isinstance(v, str) and re.fullmatch(r"[+-]?[0-9]+", v):
        return int(v)
    raise ArgoError(f"expected integer value for count. Received: {v}")


Edit = Callable[[dict[str, Any]], dict[str, Any]]

__all__ = ["MANIFEST", "REVISION_VARS", "SKIP_MARKER", "ArgoError", "Edit", "add_components", "add_metadata",
           "add_patches", "env_of", "expand", "fix", "glob_match", "glob_regex", "int_count", "merge_patch",
           "set_image", "set_replicas", "split_image"]
