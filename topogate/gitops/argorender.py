"""An Application source rendered as Argo CD's repo-server renders it (topogate.gitops.argocd
holds the edits; this module runs them over the repository): the path, the source type, the
`.argocd-source*.yaml` overrides, the kustomize edits built in a scratch mirror or a
directory's files, then the destination namespace the application controller sets."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from topogate.gitops import argocd, goyaml
from topogate.gitops.engines import Target
from topogate.gitops.notes import FAILS, NOT_RENDERED
from topogate.gitops.objects import RenderedObject, Via
from topogate.gitops.session import Out, Session, one_line, with_
from topogate.gitops.values import mapping
from topogate.gitops.vias import option_vias
from topogate.k8s import kustomization as kmodel
from topogate.safeio.repopaths import KUSTOMIZATION_FILES, MANIFEST_SUFFIXES, display
from topogate.safeio.saferead import documents, read_text
from topogate.sources.kustomization import check_tree
from topogate.sources.located import parse_yaml
from topogate.sources.positions import Path_

# Kinds a real API server serves cluster-scoped: Argo CD leaves their namespace empty.
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "StorageClass", "PriorityClass", "RuntimeClass", "IngressClass",
    "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "APIService", "CSIDriver", "CSINode",
    "VolumeAttachment", "CertificateSigningRequest", "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding", "DeviceClass", "ResourceSlice",
    "CiliumClusterwideNetworkPolicy", "CiliumClusterwideEnvoyConfig", "CiliumNode", "CiliumIdentity",
    "ClusterNetworkPolicy", "AdminNetworkPolicy", "BaselineAdminNetworkPolicy", "ClusterTrainingRuntime",
    "ClusterQueue", "ResourceFlavor", "Topology", "AdmissionCheck", "WorkloadPriorityClass", "Cohort",
    "ClusterIssuer", "FlowSchema", "PriorityLevelConfiguration"})


_EDITS = ("namePrefix", "nameSuffix", "images", "replicas", "commonLabels", "commonAnnotations", "namespace",
          "patches", "components")


def render_argo(s: Session, t: Target) -> Out | None:
    """The objects Argo CD applies for the Application source `t` (module doc); None, and a note,
    where it applies nothing or cannot be rendered here."""
    source = dict(t.spec)
    roots = s.sources_of(t.repo).roots
    path = str(source.get("path") or "")
    d = os.path.realpath(os.path.join(t.base or t.repo, t.path))
    if not roots.holds(d) or not os.path.isdir(d):
        s.note(FAILS, t, (
            f"app path does not exist: {path or '.'} is no directory of this repository, so Argo CD "
            f"cannot render {t.info.ref} and applies nothing"), t.locate(("path",)))
        return None
    source = _overrides(s, t, d, source)
    kind = _source_type(source, d)
    if kind == "Helm":
        s.note(NOT_RENDERED, t, (
            f"{path} holds a Helm chart, which Argo CD renders with helm and topogate does not: nothing "
            f"{t.info.ref} applies is checked (a job it deploys may be split or blocked with no finding)"),
            t.locate(("path",)))
        return None
    if kind == "Kustomize":
        out = _argo_kustomize(s, t, source, d)
    else:
        out = _argo_directory(s, t, source, d)
    return _destination(t, out)


def _overrides(s: Session, t: Target, d: str, source: dict[str, Any]) -> dict[str, Any]:
    """.argocd-source.yaml and .argocd-source-<app>.yaml merged over the source."""
    roots = s.sources_of(t.repo).roots
    merged: Any = source
    for name in (".argocd-source.yaml", f".argocd-source-{t.info.name}.yaml"):
        p = os.path.join(d, name)
        if not os.path.isfile(p) or roots.untracked(os.path.realpath(p)) is not None:
            continue
        shown = display(Path(p))
        docs = [obj for _, _, obj in documents(read_text(p, shown), shown)]
        if docs and isinstance(docs[0], dict):
            merged = argocd.merge_patch(merged, docs[0])
    for f in ("chart", "path", "repoURL", "targetRevision"):
        if f in source:
            merged[f] = source[f]
        else:
            merged.pop(f, None)
    return dict(merged)


def _argo_kustomize(s: Session, t: Target, source: Mapping[str, Any], d: str) -> Out:
    roots = s.sources_of(t.repo).roots
    kfile = next((n for n in KUSTOMIZATION_FILES if os.path.isfile(os.path.join(d, n))), None)
    opts = mapping(source.get("kustomize"))
    if kfile is None:
        if any(opts.get(f) for f in _EDITS):
            raise argocd.ArgoError("Missing kustomization file 'kustomization.yaml'", ("path",))
        raise argocd.ArgoError("kustomization file not found in the path", ("path",))
    if not any(opts.get(f) for f in _EDITS) and d in s.read_roots:
        # No edit: what Argo CD builds is what was read (and checked) from this root already.
        return Out([with_(o) for o in s.read_roots[d]], {d}, set())
    tree = check_tree(Path(d), roots, s.checked)
    dirs = [d, *(str(x) for x in tree.dirs)]
    shown = display(Path(d) / kfile)
    text = read_text(os.path.join(d, kfile), shown)
    kmodel.read(text, shown)  # every spelling kustomize reads otherwise refused, as for kubectl
    try:
        kus: dict[str, Any] = goyaml.yaml_to_json(text) or {}
    except (goyaml.JSONError, goyaml.Unsafe, yaml.YAMLError) as e:
        raise argocd.ArgoError(f"invalid Kustomization: {one_line(e)}") from None
    kus = _edits(s, t, opts, kus, d, kfile)
    for c in kus.get("components") or []:
        cdir = os.path.join(d, str(c))
        if os.path.isdir(cdir):
            dirs += [str(x) for x in (Path(os.path.realpath(cdir)), *check_tree(Path(cdir), roots, s.checked).dirs)]
    output = s.build(t, d, kfile, kus, (), copies=True)
    built = s.built(t, d, dirs, output, (str(opts.get("namePrefix") or ""), str(opts.get("nameSuffix") or "")))
    objs = []
    for _, o in built:
        vias = list(o.vias) + option_vias(o.obj, t, opts)
        objs.append(with_(o, vias=tuple(vias)))
    return Out(objs, {d} | s.covered(dirs), set())


def _edits(s: Session, t: Target, opts: Mapping[str, Any], kus: dict[str, Any], d: str, kfile: str) -> dict[str, Any]:
    """Argo CD's Build sequence (module doc of topogate.gitops.argocd)."""
    env = argocd.env_of(t.app, t.spec, str(t.spec.get("repoURL") or ""))

    def edit(step: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
        nonlocal kus
        if any(k not in kmodel.STRUCTS["Kustomization"] for k in kus):
            bad = next(k for k in kus if k not in kmodel.STRUCTS["Kustomization"])
            raise argocd.ArgoError(f"kustomize edit: invalid Kustomization: json: unknown field \"{bad}\"")
        kus = step(argocd.fix(kus))

    for f in ("namePrefix", "nameSuffix"):
        if opts.get(f):
            value = str(opts[f])
            edit(lambda k, f=f, value=value: {**k, f: value})  # type: ignore[misc]
    if opts.get("images"):
        images = [str(i) for i in opts["images"]]
        _revision(s, t, images, ("kustomize", "images"))
        edit(lambda k: argocd.set_image(k, [argocd.expand(i, env) for i in images]))
    if opts.get("replicas"):
        reps = [(str(r.get("name", "")), argocd.int_count(r.get("count")))
                for r in opts["replicas"] if isinstance(r, dict)]
        if any("=" in n for n, _ in reps):
            raise argocd.ArgoError("kustomize edit set replicas: invalid format of replicas", ("kustomize", "replicas"))
        edit(lambda k: argocd.set_replicas(k, reps))
    if opts.get("commonLabels"):
        labels = {str(k): str(v) for k, v in opts["commonLabels"].items()}
        _revision(s, t, list(labels.values()), ("kustomize", "commonLabels"))
        labels = {k: argocd.expand(v, env) for k, v in labels.items()}
        edit(lambda k: argocd.add_metadata(k, "label", labels, bool(opts.get("forceCommonLabels")),
                                           bool(opts.get("labelWithoutSelector")),
                                           bool(opts.get("labelIncludeTemplates"))))
    if opts.get("commonAnnotations"):
        annotations = {str(k): str(v) for k, v in opts["commonAnnotations"].items()}
        if opts.get("commonAnnotationsEnvsubst"):
            _revision(s, t, list(annotations.values()), ("kustomize", "commonAnnotations"))
            annotations = {k: argocd.expand(v, env) for k, v in annotations.items()}
        edit(lambda k: argocd.add_metadata(k, "annotation", annotations, bool(opts.get("forceCommonAnnotations"))))
    if opts.get("namespace"):
        edit(lambda k: {**k, "namespace": str(opts["namespace"])})
    if opts.get("patches"):
        kus = argocd.add_patches(kus, [p for p in opts["patches"] if isinstance(p, dict)])
    if opts.get("components"):
        found = _components(s, t, opts, d, kfile)
        if found:
            edit(lambda k: argocd.add_components(k, found, kfile))
    return kus


def _revision(s: Session, t: Target, texts: Sequence[str], at: Path_) -> None:
    if any(argocd.REVISION_VARS.search(x) for x in texts):
        s.note(NOT_RENDERED, t, (
            "${ARGOCD_APP_REVISION...} is the commit Argo CD syncs, unknown before it does: rendered as "
            "empty, so a value built from it is not what is applied"), t.locate(at))


def _components(s: Session, t: Target, opts: Mapping[str, Any], d: str, kfile: str) -> list[str]:
    """`edit add component`'s arguments and their glob; with ignoreMissingComponents only those
    holding a kustomization file inside the repository."""
    comps = [str(c) for c in opts.get("components") or []]
    if opts.get("ignoreMissingComponents"):
        keep = []
        for c in comps:
            cdir = os.path.realpath(os.path.join(d, c))
            if cdir.startswith(t.repo.rstrip("/") + "/") and any(
                    os.path.isfile(os.path.join(cdir, k)) and not os.path.islink(os.path.join(cdir, k))
                    for k in KUSTOMIZATION_FILES):
                keep.append(c)
        comps = keep
    found: list[str] = []
    for c in comps:
        matches = _go_glob(d, c)
        if matches:
            found += matches
        elif os.path.isdir(os.path.join(d, c)):
            found.append(c)
        else:
            raise argocd.ArgoError(f"kustomize edit add component: {c} has no match: must build at directory: "
                                   "not a valid directory", ("kustomize", "components"))
    return found


def _argo_directory(s: Session, t: Target, source: Mapping[str, Any], d: str) -> Out:
    roots = s.sources_of(t.repo).roots
    directory = mapping(source.get("directory"))
    recurse = directory.get("recurse") is True
    include, exclude = str(directory.get("include") or ""), str(directory.get("exclude") or "")
    no_filter = directory.get("disableExtensionFilter") is True
    objs: list[RenderedObject] = []
    files: set[str] = set()
    jsonnet: list[str] = []
    for f in _walk(d, recurse):
        rel = os.path.relpath(f, d)
        name = os.path.basename(f)
        if not no_filter and not argocd.MANIFEST.match(name):
            continue
        real = os.path.realpath(f)
        if not roots.holds(real):
            raise argocd.ArgoError(f"illegal filepath in symlink at {rel!r}", ("path",))
        if not os.path.isfile(real) or roots.untracked(real) is not None:
            continue
        if exclude and argocd.glob_match(exclude, rel) or include and not argocd.glob_match(include, rel):
            continue
        shown = display(Path(f))
        text = read_text(f, shown)
        if argocd.SKIP_MARKER in text:
            continue
        if name.endswith(".jsonnet"):
            jsonnet.append(rel)
            continue
        if not name.endswith(MANIFEST_SUFFIXES) and not no_filter:
            continue
        files.add(real)
        for o in parse_yaml(text, shown, str(f)):
            objs.append(with_(o))
    if jsonnet:
        s.note(NOT_RENDERED, t, (
            f"{', '.join(jsonnet)}: jsonnet, which Argo CD evaluates and topogate does not: what it yields "
            "is not checked (a job it deploys may be split or blocked with no finding); render it into "
            "YAML and check that"), t.locate(("path",)))
    return Out(objs, set(), files)


def _source_type(source: Mapping[str, Any], d: str) -> str:
    explicit = [k for k, name in (("kustomize", "Kustomize"), ("helm", "Helm"), ("directory", "Directory"),
                                  ("plugin", "Plugin")) if source.get(k) is not None]
    if len(explicit) > 1:
        raise argocd.ArgoError(f"multiple application sources defined: {','.join(explicit)}")
    if explicit:
        return {"kustomize": "Kustomize", "helm": "Helm", "directory": "Directory", "plugin": "Plugin"}[explicit[0]]
    names = os.listdir(d)
    if any(n in KUSTOMIZATION_FILES and os.path.isfile(os.path.join(d, n)) for n in names):
        return "Kustomize"
    if any(n.endswith("Chart.yaml") for n in names):
        return "Helm"
    return "Directory"


def _walk(d: str, recurse: bool) -> Iterable[str]:
    """filepath.Walk's files of d (lexical; links not followed into), its subtree with recurse."""
    stack = [[os.path.join(d, n) for n in reversed(sorted(os.listdir(d)))]]
    while stack:
        if not stack[-1]:
            stack.pop()
            continue
        p = stack[-1].pop()
        if os.path.basename(p) == ".git":
            continue
        if os.path.isdir(p) and not os.path.islink(p):
            if recurse:
                stack.append([os.path.join(p, n) for n in reversed(sorted(os.listdir(p)))])
            continue
        yield p


_GLOB_META = re.compile(r"[*?\[\\]")


def _go_glob(d: str, pattern: str) -> list[str]:
    """filepath.Glob(pattern) from directory d: matches as written, sorted per directory."""
    if not _GLOB_META.search(pattern):
        return [pattern] if os.path.lexists(os.path.join(d, pattern)) else []
    import fnmatch  # lazy: only a component glob needs it

    parts = pattern.split("/")
    found = [""]
    for part in parts:
        nxt: list[str] = []
        for base in found:
            here = os.path.join(d, base) if base else d
            if not _GLOB_META.search(part):
                cand = os.path.join(base, part) if base else part
                if os.path.lexists(os.path.join(d, cand)):
                    nxt.append(cand)
                continue
            try:
                names = sorted(os.listdir(here))
            except OSError:
                continue
            nxt += [os.path.join(base, n) if base else n for n in names if fnmatch.fnmatchcase(n, part)]
        found = nxt
    return found


def _destination(t: Target, out: Out) -> Out:
    """Argo CD's DeduplicateTargetObjects: the destination namespace on every namespaced object
    without one (an unknown kind counts as namespaced), none on a cluster-scoped one."""
    dest = (t.app.get("spec") or {}).get("destination") or {}
    ns = dest.get("namespace") if isinstance(dest, dict) else None
    objs: list[RenderedObject] = []
    for o in out.objects:
        obj = o.obj
        vias = o.vias
        md = mapping(obj.get("metadata"))
        if o.kind in CLUSTER_SCOPED and md.get("namespace"):
            obj = {**obj, "metadata": {k: v for k, v in md.items() if k != "namespace"}}
        elif o.kind not in CLUSTER_SCOPED and not md.get("namespace") and isinstance(ns, str) and ns:
            obj = {**obj, "metadata": {**md, "namespace": ns}}
            vias = (*vias, Via(("metadata", "namespace"), t.app_locate(("spec", "destination", "namespace")),
                               "spec.destination.namespace"))
        objs.append(with_(o, obj=obj, render=t.info, cluster=t.info.cluster, vias=vias))
    return Out(objs, out.roots, out.files)


__all__ = ["render_argo"]
